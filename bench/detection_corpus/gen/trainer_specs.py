"""The runs of rlcockpit's trainer in the corpus: presets, seeds, learning rates, algorithms, models, faults.

Onsets are drawn (seeded) per spec so failures do not all begin at one step. Steps are short (tens of seconds
each on one core); ``run_trainer_corpus`` runs them one after another and caches each finished run, so an
interrupted generation continues where it stopped.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

from real_trainer import CACHE, contains_answer_anywhere, longer_is_better, run_spec, visible_step

SOURCE = "rlcockpit_trainer"


def specs() -> list[dict[str, Any]]:
    rng = random.Random(1414)
    out: list[dict[str, Any]] = []

    def add(cls: str, name: str, steps: int, fault: dict[str, Any] | None = None, **kw: Any) -> None:
        out.append({"id": f"{SOURCE}-{cls}-{name}", "class": cls, "steps": steps, "fault": fault, **kw})

    def k(lo: int = 18, hi: int = 34) -> int:
        return rng.randint(lo, hi)

    tf = "trainer.test_freq=10"
    # healthy: seeds, learning rates, schedules, algorithms, KL loss, critic, frequent eval, three architectures
    add("healthy", "grpo-cosine-s1", 60, seed=1, overrides=[tf])
    add("healthy", "grpo-cosine-s2", 60, seed=2, overrides=["trainer.test_freq=5"])
    add("healthy", "grpo-const-2e-5", 60, seed=3, overrides=[tf, "actor.optim.lr=2e-5", "actor.optim.warmup_style=constant"])
    add("healthy", "grpo-warmup-1e-4", 60, seed=4, overrides=[tf, "actor.optim.lr=1e-4", "actor.optim.lr_warmup_steps_ratio=0.2"])
    add("healthy", "rloo", 60, seed=5, overrides=[tf, "algorithm.adv_estimator=rloo"])
    add("healthy", "reinforce-pp", 60, seed=6, overrides=[tf, "algorithm.adv_estimator=reinforce_plus_plus_baseline"])
    add("healthy", "kl-loss-low-var", 60, seed=7, overrides=[tf, "actor.use_kl_loss=true", "actor.kl_loss_coef=0.01",
                                                             "actor.kl_loss_type=low_var_kl", "actor.optim.lr=1e-4"])
    add("healthy", "gae-critic", 50, seed=8, overrides=[tf, "algorithm.adv_estimator=gae", "rollout.n=2",
                                                        "data.train_batch_size=32", "actor.ppo_mini_batch_size=32"])
    add("healthy", "hot-sampling", 60, seed=9, overrides=[tf, "rollout.temperature=1.3"])
    add("healthy", "drgrpo-tokensum", 60, seed=10, overrides=[tf, "algorithm.norm_adv_by_std_in_grpo=false",
                                                              "actor.loss_agg_mode=seq-mean-token-sum-norm"])
    for arch in ("gpt2", "llama"):
        for s in (1, 2):
            add("healthy", f"{arch}-bpe-s{s}", 60, seed=s, model=arch, overrides=[tf, "actor.optim.lr=2e-4"])
    # collapse: the arith-collapse settings switched on mid-run (lr x30-100, clip 10, 4 epochs)
    for name, model, extra in (("tiny-a", "tiny", []), ("tiny-b", "tiny", []), ("tiny-rloo", "tiny", ["algorithm.adv_estimator=rloo"]),
                               ("gpt2", "gpt2", ["actor.optim.lr=2e-4"]), ("llama", "llama", ["actor.optim.lr=2e-4"])):
        add("collapse", name, 55, seed=rng.randint(1, 99), model=model, overrides=[tf, *extra],
            fault={"kind": "lr_jump", "step": k(), "params": {"factor": rng.choice([40, 60, 100]),
                                                                "set": {"actor.clip_ratio": 10.0, "actor.ppo_epochs": 4}}})
    # reward hacking: the training reward becomes exploitable at step k; validation keeps exact match
    for i, (fn, model) in enumerate(((longer_is_better, "tiny"), (contains_answer_anywhere, "tiny"),
                                     (longer_is_better, "tiny"), (longer_is_better, "gpt2"), (contains_answer_anywhere, "llama"))):
        add("reward_hacking", f"{fn.__name__}-{model}-{i}", 60, seed=rng.randint(1, 99), model=model,
            overrides=["trainer.test_freq=5", "data.max_response_length=16", "reward.val_name=arith", "actor.optim.lr=2e-4"],
            fault={"kind": "reward_switch", "step": k(), "params": {"fn": fn}})
    # entropy collapse: an entropy penalty and a higher lr switched on at step k
    for i, model in enumerate(("tiny", "tiny", "tiny", "gpt2", "llama")):
        add("entropy_collapse", f"{model}-{i}", 55, seed=rng.randint(1, 99), model=model, overrides=[tf],
            fault={"kind": "entropy_penalty", "step": k(), "params": {"factor": rng.choice([10, 20]),
                                                                        "set": {"actor.entropy_coeff": -0.1, "actor.ppo_epochs": 2}}})
    # loss divergence: the actor's lr jumps x1000 with gradient clipping off; or the critic's (GAE)
    for i, model in enumerate(("tiny", "tiny", "gpt2", "llama")):
        add("loss_divergence", f"actor-{model}-{i}", 50, seed=rng.randint(1, 99), model=model, overrides=[tf],
            fault={"kind": "lr_jump", "step": k(), "params": {"factor": 1000, "set": {"actor.grad_clip": 1e9, "actor.ppo_epochs": 2}}})
    add("loss_divergence", "critic-gae", 45, seed=rng.randint(1, 99),
        overrides=[tf, "algorithm.adv_estimator=gae", "rollout.n=2", "data.train_batch_size=32", "actor.ppo_mini_batch_size=32"],
        fault={"kind": "lr_jump", "step": k(), "params": {"critic_factor": 3000, "set": {"critic.grad_clip": 1e9}}})
    # grad spike: one batch with rewards x300 (a scale bug in one reward shard), Dr. GRPO advantages keep the scale
    for i, model in enumerate(("tiny", "tiny", "gpt2", "llama")):
        kk = k()
        add("grad_spike", f"{model}-{i}", 50, seed=rng.randint(1, 99), model=model,
            overrides=[tf, "algorithm.norm_adv_by_std_in_grpo=false"],
            fault={"kind": "reward_scale", "step": kk, "params": {"steps": [kk, kk + rng.randint(3, 9)], "factor": 300.0}})
    # throughput: the data loader stalls, or generation slows down (a shared inference server)
    for i, (kind, model, sec) in enumerate((("loader_sleep", "tiny", 0.4), ("loader_sleep", "gpt2", 0.3),
                                            ("gen_sleep", "tiny", 0.5), ("gen_sleep", "llama", 0.25),
                                            ("loader_sleep", "tiny", 0.8))):
        add("throughput_drop", f"{kind}-{model}-{i}", 50, seed=rng.randint(1, 99), model=model, overrides=[tf],
            fault={"kind": kind, "step": k(), "params": {"seconds": sec}})
    # length explosion: the stop token is lost (tokenizer/config change): every response runs to the limit
    for model, maxlen in (("tiny", 8), ("tiny", 16), ("gpt2", 12), ("llama", 16), ("tiny", 24)):
        add("length_explosion", f"eos-lost-{model}-{maxlen}", 50, seed=rng.randint(1, 99), model=model,
            overrides=[tf, f"data.max_response_length={maxlen}"], fault={"kind": "eos_off", "step": k()})
    return out


def _cache_path(spec_id: str) -> Path:
    return CACHE / SOURCE / f"{spec_id}.json.gz"


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
        path = _cache_path(spec["id"])
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
