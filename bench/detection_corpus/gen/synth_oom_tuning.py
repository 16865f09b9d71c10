"""Extra memory-creep traces for TUNING the memory detectors only (issue 14, oom_creep).

Written from first principles, without reading the corpus' own generators or its held-out traces: how GPU and
host memory look in real RL runs (verl's ``perf/max_memory_allocated_gb`` / ``perf/max_memory_reserved_gb`` /
``perf/cpu_memory_used_gb``, W&B's ``system/gpu.N.memoryAllocated`` percent and ``...memoryAllocatedBytes``,
``system/memory``, ``system/proc.memory.rssMB``). These traces are NOT part of the labelled corpus or its
tuning/held-out split (``corpus_schema.assign_splits`` never sees them); they only widen the variety of shapes the
memory detectors are tuned on.

Failure shapes (onset = the first step whose memory is above what the healthy run would have):
  ``linear``        a leak of r per step, r chosen so the device would be full in 60-400 steps;
  ``stepwise``      the same leak in chunks: +r*m every m steps (a cache growing by whole blocks), flat between;
  ``late_plateau``  a long flat plateau (60-80% of the run), then a linear creep;
  ``reserved_only`` fragmentation: the caching allocator's reserved memory climbs, the allocated peak stays flat;
  ``with_length``   memory grows with a response length that climbs (quadratic-ish in steps);
  ``sawtooth``      W&B percent sampled on its own clock over a rollout/train sawtooth, one GPU of N leaking;
  ``host_rss``      host RSS (W&B ``system/proc.memory.rssMB``) growing: a dataloader / sample-cache leak.
Healthy shapes: ``flat_steps`` (the running peak steps up a few times by 0.2-1.5%), ``sawtooth_flat``,
``prealloc`` (vLLM holding ~90% of the device), ``eval_spikes`` (every 25-60 steps an eval batch pushes the
percent up for one sample), ``reserved_once`` (reserved grows once, then flat), ``host_slow`` (RSS +0.5% over the
run: page cache, logging buffers).

Score the memory detectors on them: ``python bench/detection_corpus/gen/synth_oom_tuning.py`` (the harness' rule:
a responsible alert starting in [onset - 5, onset + 15]; on healthy traces every warning/critical counts).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

SOURCE = "oom_tuning_synth"
FAILURES = ("linear", "stepwise", "late_plateau", "reserved_only", "with_length", "sawtooth", "host_rss")
HEALTHY = ("flat_steps", "sawtooth_flat", "prealloc", "eval_spikes", "reserved_once", "host_slow")
PER_SHAPE = 6  # traces per shape (seeds)


def _cadence(rng: np.random.RandomState) -> int:
    return int(rng.choice([1, 1, 2, 5, 10]))


def _warmup(rng: np.random.RandomState, steps: int) -> np.ndarray:
    """Multiplier of the steady level over the first steps: the allocator and the first batches warm up."""
    w = rng.randint(3, 16)
    ramp = np.ones(steps)
    ramp[:w] = np.linspace(rng.uniform(0.8, 0.92), 1.0, w)
    return ramp


def _leak(shape: str, rng: np.random.RandomState, steps: int, onset: int, headroom: float) -> np.ndarray:
    """Extra memory (same unit as ``headroom``) per step for a failure shape; zero before the onset."""
    t = np.arange(steps, dtype=float)
    k = np.clip(t - onset, 0, None)
    full_in = rng.uniform(60, 400)
    rate = headroom / full_in
    if shape == "stepwise":
        m = rng.randint(3, 9)
        return rate * m * np.floor((k + m - 1) / m)  # the first chunk lands at the onset
    if shape == "with_length":
        return rate * k * (0.4 + 0.6 * k / max(full_in, 1.0))
    return rate * k


def _verl_trace(shape: str, seed: int, healthy: bool) -> dict[str, Any]:
    rng = np.random.RandomState(10_000 + 97 * seed + sum(map(ord, shape)))
    every = _cadence(rng)
    steps = int(rng.randint(15, 40) * every + rng.randint(60, 200))
    cap = float(rng.choice([24, 40, 80, 80, 141]))
    alloc0 = cap * rng.uniform(0.3, 0.75)
    res0 = alloc0 * rng.uniform(1.03, 1.15)
    host0 = rng.uniform(20, 200)
    onset = None if healthy else int(rng.uniform(0.65, 0.85) * steps if shape == "late_plateau" else rng.uniform(0.35, 0.6) * steps)
    warm = _warmup(rng, steps)
    running_peak = rng.rand() < 0.6  # verl reads torch's max_memory_allocated: a running peak unless reset per step
    jitter = alloc0 * rng.uniform(0.002, 0.01)
    per_step = alloc0 * warm + (0 if running_peak else 1) * rng.normal(0, jitter, steps)
    if not running_peak and rng.rand() < 0.5:  # long/short batches alternate: a sawtooth in the per-step peak
        per_step += jitter * 1.5 * (np.arange(steps) % 2)
    extra_alloc = np.zeros(steps)
    extra_res = np.zeros(steps)
    length = 400 + 30 * rng.randn(steps)
    if healthy and shape == "flat_steps":
        for at in rng.choice(np.arange(20, steps), size=rng.randint(1, 4), replace=False):
            extra_alloc[at:] += alloc0 * rng.uniform(0.002, 0.015)
    if healthy and shape == "reserved_once":
        extra_res[rng.randint(20, steps - 10):] += res0 * rng.uniform(0.02, 0.06)
    if not healthy:
        head = cap * 0.98 - res0
        leak = _leak(shape, rng, steps, onset, head)
        if shape == "reserved_only":
            extra_res = leak
        else:
            extra_alloc, extra_res = leak, leak * rng.uniform(1.0, 1.1)
        if shape == "with_length":
            length = length + 2.5 * np.clip(np.arange(steps) - onset, 0, None) * 400 / max(steps - onset, 1)
    alloc = per_step + extra_alloc
    if running_peak:
        alloc = np.maximum.accumulate(alloc)
    reserved = np.maximum(alloc * res0 / alloc0, res0 * warm + extra_res)
    if running_peak:
        reserved = np.maximum.accumulate(reserved)
    host = host0 * (1 + 1e-5 * np.arange(steps)) + rng.normal(0, host0 * 0.0005, steps)
    rows = []
    for s in range(every - 1, steps, every):
        m = {"perf/max_memory_allocated_gb": round(float(min(alloc[s], cap)), 3),
             "perf/max_memory_reserved_gb": round(float(min(reserved[s], cap)), 3),
             "perf/cpu_memory_used_gb": round(float(host[s]), 3),
             "response_length/mean": round(float(max(length[s], 1.0)), 2)}
        rows.append([s + 1, m])
    return _trace(shape, seed, healthy, onset, "verl", rows, {"cadence": every, "device_gb": cap,
                                                              "running_peak": running_peak},
                  {"data": {"max_response_length": 2048}})


def _wandb_trace(shape: str, seed: int, healthy: bool) -> dict[str, Any]:
    """W&B system metrics: per-GPU percent (and bytes) sampled every ``d`` steps, host percent and RSS in MB."""
    rng = np.random.RandomState(20_000 + 89 * seed + sum(map(ord, shape)))
    d = int(rng.choice([1, 2, 3, 5, 10]))
    steps = int(rng.randint(20, 45) * d + rng.randint(40, 150))
    gpus = int(rng.choice([1, 2, 4, 8]))
    cap = float(rng.choice([40, 80, 141]))
    level = rng.uniform(30, 80) if shape != "prealloc" else rng.uniform(88, 95)
    noise = rng.uniform(0.05, 0.5)
    saw = rng.uniform(1.0, 6.0) if shape in ("sawtooth", "sawtooth_flat") else 0.0
    onset = None if healthy else int(rng.uniform(0.35, 0.65) * steps)
    sick = int(rng.randint(gpus))
    rss0, host_pct = rng.uniform(4_000, 60_000), rng.uniform(15, 60)
    warm = _warmup(rng, steps)
    full_in = rng.uniform(60, 400)
    spike_every = rng.randint(25, 61)
    rows = []
    for s in range(d - 1, steps, d):
        phase = (s * 0.37 + rng.rand()) % 1.0  # where in the rollout/train cycle this sample landed
        m: dict[str, float] = {}
        for g in range(gpus):
            v = level * warm[s] + saw * (phase < 0.5) + rng.normal(0, noise)
            if healthy and shape == "eval_spikes" and s > 10 and s % spike_every < d:
                v += rng.uniform(4, 10)
            if not healthy and shape == "sawtooth" and g == sick and s >= onset:
                v += (99 - level - saw) * (s - onset) / full_in
            v = float(np.clip(v, 0, 100))
            m[f"system/gpu.{g}.memoryAllocated"] = round(v, 2)
            m[f"system/gpu.{g}.memoryAllocatedBytes"] = float(round(v / 100 * cap * 1e9, -6))
        rss = rss0 * (1 + (0.005 * s / steps if shape == "host_slow" else 0.0)) + rng.normal(0, rss0 * 0.001)
        if not healthy and shape == "host_rss" and s >= onset:
            rss += rss0 * 1.5 * (s - onset) / full_in
        m["system/proc.memory.rssMB"] = round(float(rss), 1)
        m["system/memory"] = round(float(host_pct + (rss - rss0) / 1024 / 2.56 + rng.normal(0, 0.8)), 2)
        rows.append([s + 1, m])
    return _trace(shape, seed, healthy, onset, "wandb", rows, {"sample_every": d, "gpus": gpus, "sick_gpu": sick,
                                                               "device_gb": cap}, {})


def _trace(shape, seed, healthy, onset, naming, rows, meta, config) -> dict[str, Any]:
    if onset is not None:  # the labelled onset is a logged step at or after the change point
        onset = next(s for s, _m in rows if s >= onset + 1)
    return {"id": f"{SOURCE}-{'healthy' if healthy else 'oom_creep'}-{shape}-{seed:02d}", "source": SOURCE,
            "class": "healthy" if healthy else "oom_creep", "onset": onset, "onset_method": "generator change point",
            "split": "tuning", "naming": naming, "config": config, "meta": {"shape": shape, "seed": seed, **meta},
            "metrics": [(s, m) for s, m in rows], "samples": []}


WANDB_SHAPES = {"sawtooth", "host_rss", "sawtooth_flat", "prealloc", "eval_spikes", "host_slow"}


def generate(per_shape: int = PER_SHAPE) -> list[dict[str, Any]]:
    out = []
    for healthy, shapes in ((False, FAILURES), (True, HEALTHY)):
        for shape in shapes:
            make = _wandb_trace if shape in WANDB_SHAPES else _verl_trace
            out += [make(shape, seed, healthy) for seed in range(per_shape)]
    return out


def score(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall and delay per failure shape, alerts per healthy shape, with ``bench/detection_quality.py``'s rule."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import detection_quality as dq

    per: dict[str, dict[str, Any]] = {}
    misses, alarms = [], []
    for t in traces:
        r = dq.score(t, dq.run_ours(t), dq.OURS)
        row = per.setdefault(t["meta"]["shape"], {"traces": 0, "detected": 0, "delays": [], "warnings": 0, "criticals": 0})
        row["traces"] += 1
        if t["class"] == "healthy":
            row["warnings"] += r["warnings"]
            row["criticals"] += r["criticals"]
            if r["warnings"] or r["criticals"]:
                alarms.append({"id": t["id"], "alerts": r["alerts"]})
        else:
            row["detected"] += int(r["detected"])
            if r["delay"] is not None:
                row["delays"].append(r["delay"])
            else:
                misses.append({"id": t["id"], "onset": t["onset"], "first_alert": r["first_alert"], "meta": t["meta"]})
    for row in per.values():
        d = row.pop("delays")
        row["median_delay"] = float(np.median(d)) if d else None
    return {"shapes": per, "misses": misses, "healthy_alarms": alarms}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-shape", type=int, default=PER_SHAPE)
    args = ap.parse_args(argv)
    rep = score(generate(args.per_shape))
    for shape, row in rep["shapes"].items():
        print(shape, row)
    for m in rep["misses"]:
        print("MISS", json.dumps(m, default=str))
    for a in rep["healthy_alarms"]:
        print("ALARM", json.dumps(a, default=str))
    fails = [r for s, r in rep["shapes"].items() if s in FAILURES]
    det, tot = sum(r["detected"] for r in fails), sum(r["traces"] for r in fails)
    warn = sum(r["warnings"] + r["criticals"] for s, r in rep["shapes"].items() if s in HEALTHY)
    print(f"recall {det}/{tot} = {det / tot:.2f}; healthy alerts {warn} on {len(HEALTHY) * args.per_shape} traces")
    return 0 if math.isfinite(det) else 1


if __name__ == "__main__":
    sys.exit(main())
