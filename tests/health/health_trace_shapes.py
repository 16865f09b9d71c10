"""Realistic metric streams for the failure kinds issue 14 lists, in verl / TRL / W&B key names (not a test
module). Built from what those tools log (verl 0.9's ``metric_utils``, TRL's ``GRPOTrainer`` logs, W&B's system
metrics), with randomised scale, noise, cadence, onset and slope, so detectors are checked on shapes and not
on one example's numbers. The labelled corpus of bench/detection_corpus/ (built by someone else) is the
judge; these are the regression checks the detector author keeps next to the code.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

VERL_KEYS = {"reward": "critic/score/mean", "reward_std": "critic/score/std", "kl": "actor/kl_loss",
             "entropy": "actor/entropy", "loss": "actor/pg_loss", "grad": "actor/grad_norm",
             "clipfrac": "actor/pg_clipfrac", "ppo_kl": "actor/ppo_kl", "len": "response_length/mean",
             "len_max": "response_length/max", "clip": "response_length/clip_ratio", "lr": "actor/lr"}
TRL_KEYS = {"reward": "reward", "reward_std": "reward_std", "kl": "kl", "entropy": "entropy", "loss": "loss",
            "grad": "grad_norm", "clipfrac": "clip_ratio/region_mean", "len": "completions/mean_length",
            "len_max": "completions/max_length", "clip": "completions/clipped_ratio", "lr": "learning_rate"}



def binomial_share(rng: random.Random, p: float, n: int) -> float:
    """The share of ``n`` scored items that pass with chance ``p``: a batch mean of 0/1 scores (a reward or an
    accuracy over ``n`` digits or answers), noisy as a real batch's."""
    return sum(rng.random() < p for _ in range(n)) / n

@dataclass
class Stream:
    """One run: ``rows[i]`` logged at ``steps[i]``; ``onset`` is the first failing step (None: healthy)."""

    name: str
    steps: list[int]
    rows: list[dict[str, float]]
    onset: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    responsible: tuple[str, ...] = ()

    def replay(self, monitor: Any) -> list[Any]:
        for step, row in zip(self.steps, self.rows):
            monitor.observe(step, row)
        monitor.close()
        return monitor.findings


def healthy_core(rng: np.random.RandomState, steps: int, style: str = "verl", short_answer: bool = False,
                 max_len: int = 1024) -> list[dict[str, float]]:
    """Per-step training metrics of a healthy GRPO run (every step; cadence is applied later)."""
    k = VERL_KEYS if style == "verl" else TRL_KEYS
    r0, r1 = rng.uniform(0.1, 0.4), rng.uniform(0.5, 0.85)
    tau = rng.uniform(0.15, 0.4) * steps
    kl_end = rng.uniform(0.1, 0.2) if short_answer else rng.uniform(0.005, 0.04)
    ent0 = rng.uniform(0.6, 1.6)
    ent_end = ent0 * (rng.uniform(0.15, 0.3) if short_answer else rng.uniform(0.5, 0.8))
    len0 = rng.uniform(8, 20) if short_answer else rng.uniform(150, 400)
    len_growth = 1.0 if short_answer else rng.uniform(1.0, 1.4)
    grad0 = rng.uniform(0.1, 1.0)
    lr = 10 ** rng.uniform(-6.5, -5.5)
    rows = []
    for t in range(steps):
        u = 1 - math.exp(-t / tau)
        row = {
            k["reward"]: r0 + (r1 - r0) * u + rng.normal(0, 0.02),
            k["reward_std"]: max(0.05, 0.4 - 0.1 * u + rng.normal(0, 0.01)),
            k["kl"]: kl_end * (1 - math.exp(-t / (0.3 * steps))) * math.exp(rng.normal(0, 0.15)) + 1e-5,
            k["entropy"]: ent_end + (ent0 - ent_end) * math.exp(-t / (0.4 * steps)) + rng.normal(0, 0.02 * ent0),
            k["loss"]: float(rng.standard_t(3) * 0.01),
            k["grad"]: grad0 * math.exp(rng.normal(0, 0.25)),
            k["clipfrac"]: abs(rng.normal(0.005, 0.002)),
            k["lr"]: lr,
        }
        if "ppo_kl" in k:
            row[k["ppo_kl"]] = abs(rng.normal(2e-4, 1e-4))
        length = len0 * (1 + (len_growth - 1) * u) * math.exp(rng.normal(0, 0.04))
        row[k["len"]] = length
        clip = max(0.0, rng.normal(0.01 if not short_answer else 0.0, 0.005))
        row[k["clip"]] = clip
        row[k["len_max"]] = float(max_len) if clip > 0 else min(max_len, length * 2.5)
        rows.append(row)
    return rows


def add_system(rng: np.random.RandomState, rows: list[dict[str, float]], wandb: bool = True, gpus: int = 1,
               util: float | None = None, mem_percent: float | None = None, alloc_gb: float | None = None) -> None:
    """System and perf metrics of a healthy GPU run: utilisation ~75%, vLLM holding ~90% of the device, the
    allocator's running peak stepping up early, a verl ``timing_s/*`` split dominated by generation."""
    util = util if util is not None else rng.uniform(68, 90)
    mem_percent = mem_percent if mem_percent is not None else rng.uniform(55, 92)
    alloc = alloc_gb if alloc_gb is not None else rng.uniform(20, 60)
    step_s = rng.uniform(20, 120)
    peak = alloc
    for t, row in enumerate(rows):
        if t < 15 and rng.rand() < 0.3:
            peak *= 1 + rng.uniform(0.005, 0.03)  # a longer batch raises the running peak, early in the run
        for g in range(gpus):
            u = float(np.clip(rng.normal(util, 6), 0, 100))
            m = float(np.clip(rng.normal(mem_percent, 0.4), 0, 100))
            if wandb:
                row[f"system/gpu.{g}.gpu"] = u
                row[f"system/gpu.{g}.memoryAllocated"] = m
            else:
                row[f"system/gpu/{g}/utilization"] = u
                row[f"system/gpu/{g}/memory_percent"] = m
        row["perf/max_memory_allocated_gb"] = peak
        s = step_s * math.exp(rng.normal(0, 0.05))
        gen, olp, ref, upd = (s * f * math.exp(rng.normal(0, 0.05)) for f in (0.55, 0.08, 0.08, 0.22))
        row.update({"timing_s/gen": gen, "timing_s/old_log_prob": olp, "timing_s/ref": ref,
                    "timing_s/update_actor": upd, "timing_s/step": s,
                    "perf/throughput": 2.0e5 / s, "training/rollout_probs_diff_mean": 0.003 * math.exp(rng.normal(0, 0.08))})


def at_cadence(rows: list[dict[str, float]], every: int) -> tuple[list[int], list[dict[str, float]]]:
    steps = list(range(0, len(rows), every))
    return steps, [rows[s] for s in steps]


def build(kind: str, seed: int, every: int = 1, steps: int = 240) -> Stream:
    """A stream of ``kind`` (see :data:`KINDS`) with randomised shape."""
    rng = np.random.RandomState(seed)
    wandb = kind != "gpu_mem_gb"
    short = kind == "healthy_short_answer"
    rows = healthy_core(rng, steps, short_answer=short)
    add_system(rng, rows, wandb=wandb, gpus=1 + seed % 2,
               util=rng.uniform(15, 45) if kind == "low_util_from_start" else None)
    onset = int(rng.uniform(0.35, 0.6) * steps) if not kind.startswith("healthy") else None
    if kind == "low_util_from_start":
        onset = 0
        for row in rows:  # the GPU waits on the host: unaccounted time in the step
            row["timing_s/step"] *= 2.5
    mutate = INJECTORS.get(kind)
    if mutate is not None:
        mutate(rng, rows, onset)
    s, r = at_cadence(rows, every)
    onset_logged = None if onset is None else next(x for x in s if x >= onset)
    return Stream(f"{kind}-s{seed}-every{every}", s, r, onset_logged, {"data": {"max_response_length": 1024}},
                  RESPONSIBLE.get(kind, ()))


def _gpu_mem_percent(rng, rows, onset):
    total = rng.uniform(8, 20)  # points gained over the rest of the run: a leak heading for OOM
    n = len(rows) - onset
    for t in range(onset, len(rows)):
        for key in [k for k in rows[t] if k.endswith("memoryAllocated")]:
            rows[t][key] = min(99.5, rows[onset - 1][key] + total * (t - onset) / n + rng.normal(0, 0.3))


def _gpu_mem_gb(rng, rows, onset):
    growth = rng.uniform(0.3, 0.7)  # "growing by half" over the rest of the run
    base = rows[onset - 1]["perf/max_memory_allocated_gb"]
    n = len(rows) - onset
    for t in range(onset, len(rows)):
        rows[t]["perf/max_memory_allocated_gb"] = base * (1 + growth * (t - onset) / n)


def _util_after_stall(rng, rows, onset):
    level = rng.uniform(15, 40)
    for t in range(onset, len(rows)):
        for key in [k for k in rows[t] if k.endswith(".gpu") or k.endswith("/utilization")]:
            rows[t][key] = float(np.clip(rng.normal(level, 6), 0, 100))
        rows[t]["timing_s/step"] *= 2.2  # the data loader now stalls each step
        rows[t]["perf/throughput"] /= 2.2


def _truncation_creep(rng, rows, onset):
    end_clip = rng.uniform(0.12, 0.3)
    n = len(rows) - onset
    for t in range(onset, len(rows)):
        u = (t - onset) / n
        rows[t]["response_length/clip_ratio"] = max(0.0, rows[t]["response_length/clip_ratio"] + end_clip * u
                                                    + rng.normal(0, 0.004))
        rows[t]["response_length/mean"] = rows[t]["response_length/mean"] * (1 + 1.2 * u)
        rows[t]["response_length/max"] = 1024.0


def _mismatch_drift(rng, rows, onset):
    end = rng.uniform(0.015, 0.03)
    n = len(rows) - onset
    for t in range(onset, len(rows)):
        rows[t]["training/rollout_probs_diff_mean"] = (0.003 + (end - 0.003) * (t - onset) / n) * math.exp(
            rng.normal(0, 0.08))


def _rm_hacking(rng, rows, onset):
    """A learned reward model is exploited: its score keeps rising, held-out accuracy falls."""
    acc0 = rng.uniform(0.4, 0.6)
    n = len(rows) - onset
    for t, row in enumerate(rows):
        if t >= onset:
            u = (t - onset) / n
            row["critic/score/mean"] += 0.5 * u
        if t % 10 == 0:
            acc = acc0 + 0.1 * min(t, onset) / onset - (0.25 * (t - onset) / n if t >= onset else 0.0)
            row["val-core/gsm8k/acc/mean@1"] = acc + rng.normal(0, 0.01)


def _component_hacking(rng, rows, onset):
    """TRL-style: the total reward is the sum of reward functions; the format reward is exploited and climbs,
    the accuracy reward (weight 0, logged only) falls."""
    n = len(rows) - onset
    acc0 = rng.uniform(0.3, 0.6)
    for t, row in enumerate(rows):
        u = max(0, t - onset) / n
        acc = acc0 + 0.1 * min(t, onset) / onset - 0.3 * u + rng.normal(0, 0.03)
        fmt = 0.2 + 0.6 * u + rng.normal(0, 0.03)
        row["rewards/accuracy/mean"], row["rewards/format/mean"] = acc, fmt
        row["critic/score/mean"] = fmt + rng.normal(0, 0.02)


INJECTORS = {"gpu_mem_percent": _gpu_mem_percent, "gpu_mem_gb": _gpu_mem_gb, "util_after_stall": _util_after_stall,
             "truncation_creep": _truncation_creep, "mismatch_drift": _mismatch_drift, "rm_hacking": _rm_hacking,
             "component_hacking": _component_hacking}
RESPONSIBLE = {"gpu_mem_percent": ("gpu_memory", "memory_growth"), "gpu_mem_gb": ("gpu_memory", "memory_growth"),
               "util_after_stall": ("gpu_utilization",), "low_util_from_start": ("gpu_utilization",),
               "truncation_creep": ("truncation", "length_explosion"), "mismatch_drift": ("rollout_mismatch",),
               "rm_hacking": ("reward_hacking",), "component_hacking": ("reward_hacking",)}
KINDS = ("healthy", "healthy_short_answer", *INJECTORS, "low_util_from_start")
