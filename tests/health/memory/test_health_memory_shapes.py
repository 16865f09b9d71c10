"""Memory creep against the run's own early behaviour (issue 14, oom_creep): the shapes of
bench/detection_corpus/gen/synth_oom_tuning.py (tuning only, not part of the labelled corpus' split) and a few
hand-built streams for the rules one at a time: a running peak that sets a new high at every sparse log, reserved
memory climbing while allocated holds (fragmentation), one GPU of four leaking under the sawtooth all ranks share,
and the healthy look-alikes (a single step up, a sawtooth, vLLM's preallocation)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from rlcockpit.health import HealthMonitor

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench" / "detection_corpus" / "gen"))
sys.path.insert(0, str(ROOT / "bench"))
import synth_oom_tuning  # noqa: E402

MEMORY = {"gpu_memory", "memory_growth", "host_memory"}


def _alarms(rows, config=None):
    mon = HealthMonitor(run_config=config or {})
    out = []
    for step, metrics in rows:
        out += [f for f in mon.observe(step, metrics) if f.severity != "info"]
    return out


def test_tuning_shapes_found_in_window_and_healthy_shapes_silent():
    rep = synth_oom_tuning.score(synth_oom_tuning.generate())
    shapes = rep["shapes"]
    det = sum(shapes[s]["detected"] for s in synth_oom_tuning.FAILURES)
    total = sum(shapes[s]["traces"] for s in synth_oom_tuning.FAILURES)
    assert det / total >= 0.8, (det, total, rep["misses"])  # main before this work: 0.57 (24/42 at 6 per shape)
    assert rep["healthy_alarms"] == [], rep["healthy_alarms"]
    for shape in ("linear", "stepwise", "reserved_only", "host_rss"):
        assert shapes[shape]["detected"] == shapes[shape]["traces"], (shape, rep["misses"])


def test_running_peak_that_sets_a_new_high_at_every_sparse_log_is_found_within_two_logs():
    rows, peak = [], 40.0
    for step in range(10, 401, 10):
        if step > 200:
            peak += 0.6  # 60 MB a step: a leak on a 40 GB peak, +1.5% per log
        rows.append((step, {"perf/max_memory_allocated_gb": round(peak, 3)}))
    found = [f for f in _alarms(rows) if f.detector == "memory_growth"]
    assert found and found[0].step <= 220, [(f.step, f.title) for f in found]


def test_reserved_climbing_while_allocated_holds_is_named_fragmentation():
    rows = []
    for step in range(1, 151):
        reserved = 50.0 + (0.25 * (step - 80) if step > 80 else 0.0)
        rows.append((step, {"perf/max_memory_allocated_gb": 44.0, "perf/max_memory_reserved_gb": reserved}))
    found = [f for f in _alarms(rows) if f.detector == "memory_growth"]
    assert found and 80 <= found[0].step <= 95, [(f.step, f.title) for f in found]
    assert "fragmentation" in found[0].title
    assert "expandable_segments" in found[0].causes[0].title


def test_one_gpu_of_four_leaking_under_a_shared_sawtooth_is_found_by_its_lead():
    rng = np.random.RandomState(3)
    rows = []
    for step in range(1, 241):
        tooth = 5.0 * (rng.rand() < 0.5)  # rollout vs update phase: every rank at once
        m = {}
        for g in range(4):
            v = 50.0 + tooth + rng.normal(0, 0.2) + (0.3 * (step - 150) if g == 2 and step > 150 else 0.0)
            m[f"system/gpu.{g}.memoryAllocated"] = round(v, 2)
        rows.append((step, m))
    found = [f for f in _alarms(rows) if f.detector == "gpu_memory"]
    assert found and 145 <= found[0].step <= 165, [(f.step, f.title) for f in found]
    assert "pulling away" in found[0].title and "steps at this rate" in found[0].title


def test_healthy_look_alikes_raise_nothing():
    rng = np.random.RandomState(5)
    step_up = [(s, {"perf/max_memory_allocated_gb": 30.0 + (0.4 if s > 90 else 0.0) + (0.2 if s > 160 else 0.0),
                    "perf/max_memory_reserved_gb": 33.0 + (1.5 if s > 120 else 0.0)}) for s in range(1, 241)]
    sawtooth = [(s, {f"system/gpu.{g}.memoryAllocated": round(60 + 6.0 * (s % 2) + rng.normal(0, 0.3), 2)
                     for g in range(2)}) for s in range(1, 241)]
    prealloc = [(s, {"system/gpu.0.memoryAllocated": round(min(100.0, 91 + rng.normal(0, 0.5)), 2)})
                for s in range(1, 241)]
    for rows in (step_up, sawtooth, prealloc):
        assert [(f.step, f.detector, f.title) for f in _alarms(rows) if f.detector in MEMORY] == []


def test_machine_memory_growing_beside_a_flat_process_is_not_the_runs_leak():
    """rlcockpit's trainer logs verl's ``perf/cpu_memory_used_gb`` (the whole machine's used memory, other
    processes included) and the process's own ``system/proc_rss_gb``: only the latter is the run's memory."""
    def rows(with_rss: bool):
        for step in range(1, 301):
            m = {"perf/cpu_memory_used_gb": 20.0 + (0.05 * (step - 150) if step > 150 else 0.0)}  # a neighbour
            if with_rss:
                m["system/proc_rss_gb"] = 3.0
            yield step, m

    beside = [f for f in _alarms(rows(True)) if f.detector == "memory_growth"]
    alone = [f for f in _alarms(rows(False)) if f.detector == "memory_growth"]
    assert beside == [], [(f.step, f.title) for f in beside]
    assert alone and alone[0].metric == "perf/cpu_memory_used_gb", [(f.step, f.title) for f in alone]
