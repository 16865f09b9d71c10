"""Real TRL ``GRPOTrainer`` runs through rlcockpit's ``CockpitCallback``, healthy and with faults at a known step.

Models: the random-init GPT-2 / Llama with a BPE tokenizer from :mod:`real_trainer` (built in code, nothing
downloaded). A ``TrainerCallback`` switches the fault on at ``on_step_begin`` of step ``k`` (TRL's
``state.global_step`` counts finished steps, so the step logged as ``k`` is the first one with the fault).
The metrics are TRL's own keys as the callback stored them (``reward``, ``reward_std``, ``rewards/<fn>/mean``,
``kl``, ``entropy``, ``completions/*``, ``clip_ratio/*``, ``grad_norm``, ``learning_rate``, ``loss``...).
Health is off in the callback: the detectors never see the corpus being made.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
import tempfile
import time
from typing import Any

from real_trainer import CACHE, bpe_model_dir, digit_overlap
from trainer_specs import spec_hash

SOURCE = "trl_grpo"


class _Switch:
    """The fault's state, read by the reward functions and flipped by the callback."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.fault = spec.get("fault") or {}
        self.on = False
        self.step = 0


def _rewards(sw: _Switch, rng: random.Random) -> list[Any]:
    kind = sw.fault.get("kind")

    def accuracy(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        """The task's score: share of answer digits in place."""
        return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]

    def scaled(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        base = accuracy(completions, ground_truth)
        f = sw.fault.get("params", {}).get("factor", 1.0) if sw.on and sw.step in sw.fault["params"]["steps"] else 1.0
        return [f * b for b in base]

    def slow(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        if sw.on:
            time.sleep(sw.fault["params"]["seconds"])
        return accuracy(completions, ground_truth)

    scaled.__name__ = slow.__name__ = "accuracy"  # TRL names the metric after the function: rewards/accuracy/mean
    if kind == "reward_scale":
        return [scaled]
    if kind == "reward_sleep":
        return [slow]
    return [accuracy]


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from rlcockpit.integrations.trl import CockpitCallback
    from rlcockpit.store import open_store
    from rlcockpit.trainer.config import BuiltinDataConfig
    from rlcockpit.trainer.data import arith_rows

    torch.set_num_threads(1)
    sw = _Switch(spec)
    rng = random.Random(spec["seed"])
    model_dir = bpe_model_dir(spec["model"])
    train, _ = arith_rows(BuiltinDataConfig())
    rng.shuffle(train)
    ds = Dataset.from_dict({"prompt": [r["prompt"][0]["content"] for r in train[:512]],
                            "ground_truth": [r["reward_model"]["ground_truth"] for r in train[:512]]})
    funcs = _rewards(sw, rng)

    class Inject(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sw.step = state.global_step + 1
            if not sw.fault or sw.step != sw.fault["step"]:
                return
            sw.on = True
            p = sw.fault.get("params", {})
            if "lr_factor" in p:
                opt, sched = kw["optimizer"], kw["lr_scheduler"]
                sched.base_lrs = [b * p["lr_factor"] for b in sched.base_lrs]
                for g in opt.param_groups:
                    g["lr"] *= p["lr_factor"]
                if "max_grad_norm" in p:
                    trainer.args.max_grad_norm = p["max_grad_norm"]
            if sw.fault["kind"] == "eos_off":
                trainer.eos_token_ids = [-7]
                trainer.generation_config.eos_token_id = -7

    with tempfile.TemporaryDirectory(prefix="corpus-trl-") as tmp:
        args = GRPOConfig(output_dir=f"{tmp}/out", max_steps=spec["steps"], per_device_train_batch_size=spec.get("batch", 8),
                          num_generations=spec.get("num_generations", 4), max_completion_length=spec.get("max_len", 8),
                          logging_steps=1, learning_rate=spec.get("lr", 1e-4), beta=spec.get("beta", 0.04),
                          report_to=[], use_cpu=True, bf16=False, save_strategy="no", log_completions=False,
                          seed=spec["seed"], run_name=spec["id"],
                          scale_rewards=spec.get("scale_rewards", "group"), temperature=spec.get("temperature", 1.0),
                          lr_scheduler_type=spec.get("lr_scheduler_type", "linear"), warmup_steps=spec.get("warmup_steps", 0))
        cb = CockpitCallback(project="corpus", dir=f"{tmp}/store", health=False, max_samples=8)
        trainer = GRPOTrainer(model=model_dir, reward_funcs=funcs, args=args, train_dataset=ds, callbacks=[cb, Inject()])
        t0 = time.time()
        trainer.train()
        wall = time.time() - t0
        store = open_store(f"{tmp}/store")
        run = store.get_run(cb.run.id)
        per_step: dict[int, dict[str, float]] = {}
        for key in store.keys(run["id"]):
            steps, values, *_ = store.series(run["id"], key)
            for s, v in zip(steps, values):
                per_step.setdefault(int(s), {})[key] = float(v)
        samples = [[int(s), [{k: r[k] for k in r if k in ("prompt", "response", "completion", "reward", "advantage")}
                             for r in store.samples(run["id"], step=s)]] for s in store.sample_steps(run["id"])]
        config = run.get("config") or {}
    for _s, rows in samples:  # the callback stores the completion as "response"; keep the schema's three columns
        for r in rows:
            r.setdefault("response", r.pop("completion", ""))
    metrics = [[s, m] for s, m in sorted(per_step.items()) if not set(m) <= {"train_runtime", "train_loss",
                                                                             "train_samples_per_second", "train_steps_per_second", "total_flos"}]
    return {"metrics": metrics, "samples": samples, "config": config,
            "meta": {"wall_s": round(wall, 1), "model": spec["model"], "seed": spec["seed"],
                     "fault": {k: (v if k != "params" else {kk: vv for kk, vv in v.items()}) for k, v in sw.fault.items()} or None,
                     "spec": {k: v for k, v in spec.items() if k not in ("fault",)}}}


SYMPTOMS = {  # key, test against the 15 steps before the onset
    "collapse": ("reward", lambda v, b: v < 0.6 * b),
    "reward_hacking": ("reward", lambda v, b: v > b + 0.3),
    "entropy_collapse": ("entropy", lambda v, b: v < 0.5 * b),
    "loss_divergence": ("loss", lambda v, b: v != v or abs(v) > max(1.0, 50 * abs(b))),
    "grad_spike": ("grad_norm", lambda v, b: v != v or v > 5 * b),
    "length_explosion": ("completions/mean_length", lambda v, b: v > 1.5 * b),
    "throughput_drop": ("step_time", lambda v, b: v > 1.6 * b),
}


def specs() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    rng = random.Random("2024-healthy")  # one seeded stream per class (reassigned below): editing one class
    # leaves the other classes' seeds and onsets alone

    def add(cls: str, name: str, **kw: Any) -> None:
        out.append({"id": f"{SOURCE}-{cls}-{name}", "class": cls, "steps": 40, "seed": rng.randint(1, 999), **kw})

    def k() -> int:
        return rng.randint(14, 26)

    # healthy
    for i, (model, lr, beta) in enumerate((("gpt2", 1e-4, 0.04), ("llama", 1e-4, 0.04), ("gpt2", 3e-5, 0.0),
                                            ("llama", 2e-4, 0.0), ("gpt2", 1e-4, 0.1), ("llama", 5e-5, 0.04))):
        add("healthy", f"{model}-{i}", model=model, lr=lr, beta=beta, warmup_steps=5 if i % 2 else 0)
    add("healthy", "gpt2-8gen", model="gpt2", num_generations=8, batch=16, lr=1e-4)
    add("healthy", "llama-hot", model="llama", temperature=1.3, lr=1e-4)
    rng = random.Random("2024-collapse")
    for i, model in enumerate(("gpt2", "llama", "gpt2")):
        add("collapse", f"{model}-{i}", model=model, fault={"kind": "lr_jump", "step": k(), "params": {"lr_factor": 300}})
    # reward hacking and entropy collapse are not made with TRL here: a length-paying reward or a reward for one
    # fixed prefix switched on mid-run was not learned by these small models within the 10-step symptom check
    # (measured: reward and length flat), so the onset would be a judgement call.
    rng = random.Random("2024-loss_divergence")
    for i, model in enumerate(("gpt2", "llama", "llama")):
        add("loss_divergence", f"{model}-{i}", model=model,
            fault={"kind": "lr_jump", "step": k(), "params": {"lr_factor": 3000, "max_grad_norm": 1e9}})
    rng = random.Random("2024-grad_spike")
    for i, model in enumerate(("gpt2", "llama", "gpt2")):
        kk = k()
        add("grad_spike", f"{model}-{i}", model=model, scale_rewards="none",
            fault={"kind": "reward_scale", "step": kk, "params": {"steps": [kk, kk + rng.randint(3, 8)], "factor": 300.0}})
    rng = random.Random("2024-length_explosion")
    for i, (model, ml) in enumerate((("gpt2", 12), ("llama", 16), ("llama", 10))):
        add("length_explosion", f"eos-lost-{model}-{i}", model=model, max_len=ml, fault={"kind": "eos_off", "step": k()})
    rng = random.Random("2024-throughput_drop")
    for i, (model, sec) in enumerate((("gpt2", 0.4), ("llama", 0.6), ("gpt2", 0.25))):
        add("throughput_drop", f"slow-reward-{model}-{i}", model=model,
            fault={"kind": "reward_sleep", "step": k(), "params": {"seconds": sec}})
    return out


def label(spec: dict[str, Any], trace: dict[str, Any]) -> dict[str, Any] | None:
    fault = spec.get("fault")
    onset = fault["step"] if fault else None
    meta = dict(trace["meta"])
    if onset is not None:
        key, test = SYMPTOMS[spec["class"]]
        series = [(s, m[key]) for s, m in trace["metrics"] if key in m]
        before = [v for s, v in series if onset - 15 <= s < onset and v == v]
        base = sum(before) / max(1, len(before))
        seen = next((s for s, v in series if s >= onset and test(v, base)), None)
        meta["symptom_visible_step"] = seen
        if seen is None or seen > onset + 10:
            return None
    return {"id": spec["id"], "source": SOURCE, "class": spec["class"], "onset": onset,
            "onset_method": "none (healthy run)" if onset is None else
            f"fault '{fault['kind']}' switched on by a TrainerCallback at on_step_begin of step {onset}; symptom "
            f"checked (first visible at step {meta['symptom_visible_step']})",
            "split": "tuning", "naming": "trl", "config": trace["config"], "meta": meta,
            "metrics": trace["metrics"], "samples": trace["samples"]}


def run_trl_corpus(only: set[str] | None = None, log: Any = print) -> list[dict[str, Any]]:
    out = []
    for spec in specs():
        if only and spec["id"] not in only:
            continue
        path = CACHE / SOURCE / f"{spec['id']}-{spec_hash(spec)}.json.gz"
        if path.exists():
            with gzip.open(path, "rt") as fh:
                trace = json.load(fh)
        else:
            log(f"[corpus] running {spec['id']} ...")
            trace = run_spec(spec)
            path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(path.with_suffix(".tmp"), "wt") as fh:
                json.dump(trace, fh, default=str)
            path.with_suffix(".tmp").replace(path)
            log(f"[corpus]   done in {trace['meta']['wall_s']}s")
        labelled = label(spec, trace)
        if labelled is None:
            log(f"[corpus] {spec['id']}: fault left no plain symptom within 10 steps; left out")
            continue
        out.append(labelled)
    return out


if __name__ == "__main__":
    print(f"{len(run_trl_corpus(set(sys.argv[1:]) or None))} TRL traces")
