"""The runs of rlcockpit's trainer in the corpus: presets, seeds, learning rates, algorithms, models, faults.

Onsets are drawn (seeded) per spec so failures do not all begin at one step. Steps are short (tens of seconds
each on one core); ``run_trainer_corpus`` runs them one after another and caches each finished run, so an
interrupted generation continues where it stopped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

from real_trainer import CACHE, run_spec, visible_step

SOURCE = "rlcockpit_trainer"


def specs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    rng = random.Random("1414-healthy")  # one seeded stream per class (reassigned below): editing one class
    # leaves the other classes' seeds and onsets alone

    def add(cls: str, name: str, steps: int, fault: dict[str, Any] | None = None, **kw: Any) -> None:
        out.append({"id": f"{SOURCE}-{cls}-{name}", "class": cls, "steps": steps, "fault": fault, **kw})

    def k(lo: int = 16, hi: int = 28) -> int:
        return rng.randint(lo, hi)

    tf = "trainer.test_freq=15"  # validation (600 greedy prompts) is most of a short run's cost
    # healthy: seeds, learning rates, schedules, algorithms, KL loss, critic, frequent eval, three architectures
    add("healthy", "grpo-cosine-s1", 45, seed=1, overrides=[tf])
    add("healthy", "grpo-cosine-s2", 45, seed=2, overrides=["trainer.test_freq=10"])
    add("healthy", "grpo-const-2e-5", 45, seed=3, overrides=[tf, "actor.optim.lr=2e-5", "actor.optim.warmup_style=constant"])
    add("healthy", "grpo-warmup-1e-4", 45, seed=4, overrides=[tf, "actor.optim.lr=1e-4", "actor.optim.lr_warmup_steps_ratio=0.2"])
    add("healthy", "rloo", 45, seed=5, overrides=[tf, "algorithm.adv_estimator=rloo"])
    add("healthy", "reinforce-pp", 45, seed=6, overrides=[tf, "algorithm.adv_estimator=reinforce_plus_plus_baseline"])
    add("healthy", "kl-loss-low-var", 45, seed=7, overrides=[tf, "actor.use_kl_loss=true", "actor.kl_loss_coef=0.01",
                                                             "actor.kl_loss_type=low_var_kl", "actor.optim.lr=1e-4"])
    add("healthy", "gae-critic", 45, seed=8, overrides=[tf, "algorithm.adv_estimator=gae", "rollout.n=2",
                                                        "data.train_batch_size=32", "actor.ppo_mini_batch_size=32"])
    add("healthy", "hot-sampling", 45, seed=9, overrides=[tf, "rollout.temperature=1.3"])
    add("healthy", "drgrpo-tokensum", 45, seed=10, overrides=[tf, "algorithm.norm_adv_by_std_in_grpo=false",
                                                              "actor.loss_agg_mode=seq-mean-token-sum-norm"])
    for arch in ("gpt2", "llama"):
        for s in (1, 2):
            add("healthy", f"{arch}-bpe-s{s}", 45, seed=s, model=arch, overrides=[tf, "actor.optim.lr=2e-4"])
    rng = random.Random("1414-collapse")
    # collapse: the arith-collapse settings switched on mid-run (lr x30-100, clip 10, 4 epochs)
    for name, model, extra in (("tiny-a", "tiny", []), ("tiny-b", "tiny", []), ("tiny-rloo", "tiny", ["algorithm.adv_estimator=rloo"]),
                               ("gpt2", "gpt2", ["actor.optim.lr=2e-4"]), ("llama", "llama", ["actor.optim.lr=2e-4"])):
        add("collapse", name, 45, seed=rng.randint(1, 99), model=model, overrides=[tf, *extra],
            fault={"kind": "lr_jump", "step": k(), "params": {"factor": rng.choice([40, 60, 100]),
                                                                "set": {"actor.clip_ratio_low": 10.0, "actor.clip_ratio_high": 10.0,
                                                                        "actor.ppo_epochs": 4}}})
    # reward hacking is not made here: with these small models an exploitable reward switched on mid-run takes
    # longer than the 10-step symptom check to be learned (measured), so its onset would be a judgement call.
    rng = random.Random("1414-entropy_collapse")
    # entropy collapse: a strong entropy penalty and a higher lr switched on at step k
    for i, model in enumerate(("tiny", "tiny", "tiny", "gpt2", "llama")):
        coef = -1.0 if model == "tiny" else -2.0
        add("entropy_collapse", f"{model}-{i}", 45, seed=rng.randint(1, 99), model=model, overrides=[tf],
            fault={"kind": "entropy_penalty", "step": k(), "params": {"factor": 20,
                                                                        "set": {"actor.entropy_coeff": coef, "actor.ppo_epochs": 2}}})
    rng = random.Random("1414-loss_divergence")
    # loss divergence: an overflow in the training forward (some rows' logits inf: the loss is NaN and every update
    # is skipped from then on), or the critic's lr jumping x3000 with clipping off (GAE)
    for i, (model, rows) in enumerate((("tiny", 0.25), ("tiny", 1.0), ("gpt2", 0.5), ("llama", 0.25))):
        add("loss_divergence", f"overflow-{model}-{i}", 45, seed=rng.randint(1, 99), model=model,
            overrides=[tf, "trainer.max_consecutive_nonfinite=1000"],
            fault={"kind": "overflow", "step": k(), "params": {"rows": rows}})
    for i in range(2):
        add("loss_divergence", f"critic-gae-{i}", 45, seed=rng.randint(1, 99),
            overrides=[tf, "algorithm.adv_estimator=gae", "rollout.n=2", "data.train_batch_size=32", "actor.ppo_mini_batch_size=32"],
            fault={"kind": "lr_jump", "step": k(), "params": {"critic_factor": 3000, "set": {"critic.grad_clip": 1e9}}})
    rng = random.Random("1414-grad_spike")
    # grad spike: one batch with rewards x300 (a scale bug in one reward shard), Dr. GRPO advantages keep the scale
    for i, model in enumerate(("tiny", "tiny", "gpt2", "llama")):
        kk = k()
        add("grad_spike", f"{model}-{i}", 45, seed=rng.randint(1, 99), model=model,
            overrides=[tf, "algorithm.norm_adv_by_std_in_grpo=false"],
            fault={"kind": "reward_scale", "step": kk, "params": {"steps": [kk, kk + rng.randint(3, 9)], "factor": 300.0}})
    rng = random.Random("1414-throughput_drop")
    # throughput: the data loader stalls, or generation slows down (a shared inference server)
    for i, (kind, model, sec) in enumerate((("loader_sleep", "tiny", 0.4), ("loader_sleep", "gpt2", 0.3),
                                            ("gen_sleep", "tiny", 0.5), ("gen_sleep", "llama", 0.25),
                                            ("loader_sleep", "tiny", 0.8))):
        add("throughput_drop", f"{kind}-{model}-{i}", 45, seed=rng.randint(1, 99), model=model, overrides=[tf],
            fault={"kind": kind, "step": k(), "params": {"seconds": sec}})
    rng = random.Random("1414-length_explosion")
    # length explosion: the stop token is lost (tokenizer/config change): every response runs to the limit
    for model, maxlen in (("tiny", 8), ("tiny", 16), ("gpt2", 12), ("llama", 16), ("tiny", 24)):
        add("length_explosion", f"eos-lost-{model}-{maxlen}", 45, seed=rng.randint(1, 99), model=model,
            overrides=[tf, f"data.max_response_length={maxlen}"], fault={"kind": "eos_off", "step": k()})
    return out


def spec_hash(spec: dict[str, Any]) -> str:
    """Short hash of everything that shapes a run: a cached run is reused only for the very same spec."""
    blob = json.dumps(spec, sort_keys=True, default=lambda v: getattr(v, "__name__", str(v)))
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def _cache_path(spec: dict[str, Any]) -> Path:
    return CACHE / SOURCE / f"{spec['id']}-{spec_hash(spec)}.json.gz"


def label(spec: dict[str, Any], trace: dict[str, Any]) -> dict[str, Any] | None:
    """The labelled trace, or None when the injected fault left no plain symptom within 10 steps."""
    fault = spec.get("fault")
    onset = fault["step"] if fault else None
    meta = dict(trace["meta"])
    if onset is not None:
        seen = visible_step(trace, spec["class"], onset)
        meta["symptom_visible_step"] = seen
        if seen is None or seen > onset + 10:
            return None
    naming = "verl"
    return {"id": spec["id"], "source": SOURCE, "class": spec["class"], "onset": onset,
            "onset_method": "none (healthy run)" if onset is None else
            f"fault '{fault['kind']}' injected by the driver at the start of step {onset}; symptom checked "
            f"(first visible at step {meta['symptom_visible_step']})",
            "split": "tuning", "naming": naming, "config": trace["config"], "meta": meta,
            "metrics": trace["metrics"], "samples": trace["samples"]}


def run_trainer_corpus(only: set[str] | None = None, log: Any = print) -> list[dict[str, Any]]:
    """Every spec's labelled trace, running the ones not cached yet (sequentially)."""
    out = []
    for spec in specs():
        if only and spec["id"] not in only:
            continue
        path = _cache_path(spec)
        if path.exists():
            with gzip.open(path, "rt") as fh:
                trace = json.load(fh)
        else:
            log(f"[corpus] running {spec['id']} ...")
            trace = run_spec(spec)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            with gzip.open(tmp, "wt") as fh:
                json.dump(trace, fh, default=str)
            tmp.replace(path)
            log(f"[corpus]   done in {trace['meta']['wall_s']}s ({trace['meta']['status']})")
        labelled = label(spec, trace)
        if labelled is None:
            log(f"[corpus] {spec['id']}: fault left no plain symptom within 10 steps; left out")
            continue
        out.append(labelled)
    return out


if __name__ == "__main__":
    traces = run_trainer_corpus(set(sys.argv[1:]) or None)
    print(f"{len(traces)} trainer traces")
