"""Synthetic traces under W&B and seed-article naming: the keys people log by hand around their own RL loops.

Two vocabularies, both from the seed articles users follow: article 000 (``train/loss``, ``train/reward``,
``train/kl_div``, ``train/entropy``, ``train/lr``, ``grad_norm``, ``throughput/tokens_per_second``,
``gpu_utilization``, ``memory_allocated``/``memory_reserved`` in GB, ``step_time``/``forward_time``/
``backward_time`` in ms) and article 004 (``reward/mean``, ``reward/std``, ``kl/divergence``, ``policy/loss``,
``value/loss``, ``generation/length``, ``throughput/samples_per_second``). W&B's own system metrics come on
their own clock (every ~15 s, here every few steps), per GPU: ``system/gpu.N.gpu`` (utilisation %),
``system/gpu.N.memoryAllocated`` (% of the device), ``system/gpu.N.memoryAllocatedBytes``, ``system/gpu.N.temp``,
``system/gpu.N.powerWatts``, plus ``system/cpu`` and ``system/memory``. Memory may be logged only as a percent,
or only in GB with no device total, as in real runs. Validation: ``eval/accuracy`` every N steps.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
from synth_samples import rows as sample_rows
from synth_world import World, apply_failure, healthy_world, round_sig

SOURCE = "wandb_synth"


def emit_step(w: World, step: int, o: dict[str, Any]) -> dict[str, float]:
    s, p, i, rng = w.s, w.p, w.idx(step), w.rng
    m: dict[str, float] = {}
    if o["style"] == "000":
        m["train/loss"] = float(s["pg_loss"][i] + (s["vf_loss"][i] if o["critic"] else 0.0))
        m["train/reward"] = float(s["score"][i])
        m["train/kl_div"] = float(s["kl"][i])
        m["train/entropy"] = float(s["entropy"][i])
        m["train/lr"] = float(s["lr"][i])
        m["grad_norm"] = float(s["grad_norm"][i])
        m["throughput/tokens_per_second"] = float(s["tput"][i] * s["step_s"][i] / (s["step_s"][i] + s["t_other"][i]))
        total_ms = 1000 * float(s["step_s"][i] + s["t_other"][i])
        m["step_time"] = total_ms * (1.4 if step in w.eval_steps else 1.0)
        m["forward_time"] = 1000 * float(s["step_s"][i]) * 0.55
        m["backward_time"] = 1000 * float(s["step_s"][i]) * 0.35
        if o["gb_memory"]:
            m["memory_allocated"] = float(s["mem_alloc"][i])
            m["memory_reserved"] = float(s["mem_reserved"][i])
        if o["util_key"]:
            m["gpu_utilization"] = float(s["util"][i])
    else:
        m["reward/mean"] = float(s["score"][i])
        m["reward/std"] = float(s["score_std"][i])
        m["kl/divergence"] = float(s["kl"][i])
        m["policy/loss"] = float(s["pg_loss"][i])
        if o["critic"]:
            m["value/loss"] = float(s["vf_loss"][i])
        m["policy/entropy"] = float(s["entropy"][i])
        m["generation/length"] = float(s["len_mean"][i])
        m["throughput/samples_per_second"] = float(s["tput"][i] / max(1.0, s["len_mean"][i]) * s["step_s"][i]
                                                   / (s["step_s"][i] + s["t_other"][i]))
        m["grad_norm"] = float(s["grad_norm"][i])
        m["learning_rate"] = float(s["lr"][i])
    if step in w.eval_steps:
        m["eval/accuracy"] = float(s["val_acc"][i])
    if step % o["sys_every"] == 0:
        for g in range(o["n_gpus"]):
            leak = 1.0 if g == o["leak_gpu"] or not o["one_gpu_leaks"] else 0.0
            mem = float(s["mem_reserved"][i]) if leak else float(s["mem_reserved"][max(0, w.idx(o["onset"] or 1) - 1)])
            m[f"system/gpu.{g}.gpu"] = float(np.clip(s["util"][i] + rng.normal(0, 4), 0, 100))
            mem = mem * (1 + 0.004 * g) * float(np.exp(rng.normal(0, 0.004)))  # in use now, not a peak: it wobbles
            m[f"system/gpu.{g}.memoryAllocated"] = float(min(100.0, 100 * mem / p["mem_total"] + o["prealloc_pct"]))
            if o["bytes_too"]:
                m[f"system/gpu.{g}.memoryAllocatedBytes"] = float(mem * 2**30)
            m[f"system/gpu.{g}.temp"] = float(50 + 0.25 * s["util"][i] + rng.normal(0, 1))
            m[f"system/gpu.{g}.powerWatts"] = float(90 + 6 * s["util"][i] + rng.normal(0, 12))
        m["system/cpu"] = float(np.clip(rng.normal(18, 4), 1, 100))
        m["system/memory"] = float(np.clip(rng.normal(35, 1), 1, 100))
    return m


def make_trace(cls: str, variant: str, n: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, 4, n, zlib.crc32(cls.encode()), zlib.crc32(variant.encode())])
    cadence = 10 if variant == "sparse" else int(rng.choice([1, 1, 1, 2, 5]))
    T = int(rng.integers(150, 320)) * {1: 1, 2: 1, 5: 2, 10: 3}[cadence]
    over: dict[str, Any] = {}
    if variant == "short_answer_kl":
        over.update(kl_regime="short_answer", entropy0=float(rng.uniform(0.15, 0.4)))
    if variant == "noisy":
        over.update(score_noise=float(rng.uniform(0.08, 0.15)), grad_noise=0.5)
    if variant == "warmup_transient":
        over.update(grad_warm=float(rng.uniform(6, 15)), lr_sched="warmup")
    if variant == "prealloc":  # vLLM reserves 90 % of the device up front: high but flat memory is healthy
        over.update(mem_frac=float(rng.uniform(0.85, 0.93)))
    w = healthy_world(rng, T, **over)
    onset = None
    info: dict[str, Any] = {}
    if cls != "healthy":
        creeping = variant in ("leak", "with_length", "percent_only", "gb_only", "truncation")
        lo, hi = (max(30, T - 120), T - 60) if creeping else (int(0.3 * T), int(0.75 * T))
        k = int(rng.integers(lo, max(lo + 1, hi)))
        onset = 1 if (cls == "low_gpu_util" and variant == "from_start") else max(cadence, k - k % cadence)
        info = apply_failure(w, cls, onset, "leak" if variant in ("percent_only", "gb_only") else variant)
    if cls == "reward_hacking":
        w.p["test_freq"] = int(rng.choice([2, 5, 5, 10]))
        w.eval_steps = list(range(w.p["test_freq"], T + 1, w.p["test_freq"]))
    o = {"style": str(rng.choice(["000", "004"])), "critic": bool(rng.random() < 0.3),
         "gb_memory": variant != "percent_only" and bool(rng.random() < 0.6) or variant == "gb_only",
         "util_key": bool(rng.random() < 0.5) or cls == "low_gpu_util",
         "sys_every": int(rng.choice([1, 2, 3])), "n_gpus": int(rng.choice([1, 2, 4])),
         "prealloc_pct": 0.0 if variant != "prealloc" else float(rng.uniform(0, 3)), "bytes_too": bool(rng.random() < 0.3),
         "one_gpu_leaks": cls == "oom_creep" and bool(rng.random() < 0.4), "onset": onset}
    if variant == "gb_only":
        o.update(style="000", sys_every=10**9)  # no system metrics at all: GB only, and no device total
    if variant == "percent_only":
        o.update(gb_memory=False, bytes_too=False)
    if cls == "length_explosion":
        o["style"] = "004"  # the only vocabulary here that logs a response length
    o["leak_gpu"] = int(rng.integers(0, o["n_gpus"]))
    steps = list(range(cadence, T + 1, cadence))
    if onset == 1:
        steps = [1] + [x for x in steps if x > 1]
    samples = []
    for st in steps:
        if st % 10 == 0:
            strength = 0.0 if onset is None or st < onset else min(1.0, 0.3 + (st - onset) / 15)
            mode = cls if cls in ("collapse", "reward_hacking", "entropy_collapse", "length_explosion") else "healthy"
            samples.append([st, sample_rows(rng, mode, strength, float(np.clip(w.s["val_acc"][w.idx(st)], 0, 1)))])
    return {"id": f"{SOURCE}-{cls}-{variant}-{n:02d}", "source": SOURCE, "class": cls, "onset": onset,
            "onset_method": "healthy" if onset is None else
            f"generator: the {cls} model ({variant}) starts acting at this step (logged every {cadence} steps)",
            "split": "tuning", "naming": "seed" if o["style"] in ("000", "004") and o["sys_every"] > 10**6 else "wandb",
            "config": {"learning_rate": w.p["lr"], "kl_coef": 0.05, "max_new_tokens": w.p["max_len"],
                       "eval_every": w.p["test_freq"], "model_name": "Qwen/Qwen2.5-7B-Instruct"},
            "meta": {"generator": "synth_wandb", "seed": seed, "variant": variant, "cadence": cadence, "steps": T,
                     "style": f"seed article {o['style']}", "failure": info, "gpus": o["n_gpus"],
                     "memory_as": ("GB " if o["gb_memory"] else "") + ("percent" if o["sys_every"] < 10**6 else ""),
                     "leak_only_on_gpu": o["leak_gpu"] if o["one_gpu_leaks"] else None},
            "metrics": [[st, round_sig(emit_step(w, st, o))] for st in steps], "samples": samples}


PLAN: list[tuple[str, str, int]] = [
    ("healthy", "plain", 4), ("healthy", "short_answer_kl", 2), ("healthy", "noisy", 2), ("healthy", "warmup_transient", 2),
    ("healthy", "prealloc", 2), ("healthy", "sparse", 2),
    ("collapse", "long", 2), ("collapse", "short", 1),
    ("reward_hacking", "stuffing", 2), ("reward_hacking", "length", 1),
    ("entropy_collapse", "plain", 2), ("entropy_collapse", "sparse", 1),
    ("loss_divergence", "nan", 1), ("loss_divergence", "pg", 2),
    ("grad_spike", "plain", 3),
    ("oom_creep", "percent_only", 3), ("oom_creep", "gb_only", 2), ("oom_creep", "with_length", 1),
    ("low_gpu_util", "from_start", 3), ("low_gpu_util", "stall", 2),
    ("throughput_drop", "plain", 3),
    ("length_explosion", "repetition", 2), ("length_explosion", "truncation", 1),
]


def generate(seed: int = 4) -> list[dict[str, Any]]:
    return [make_trace(cls, variant, n, seed) for cls, variant, count in PLAN for n in range(count)]
