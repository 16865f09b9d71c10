"""Where a step's detector cost goes: each detector's per-call time on the labelled corpus's generated traces.

``bench/detection_quality.py`` reports the monitor's cost per step (the issue-29 bar: p50 <= 60 µs); this splits
it by detector, so a change is profiled before it is optimised. Each trace is replayed ``--replays`` times and each
call keeps its fastest time (a shared machine's interruptions fall out); the wrapper's own cost is subtracted.

    PYTHONPATH=src python bench/detector_cost.py [--replays 2] [--top 20]

It prints the whole step's p50, the fastest of the replays per step (``--whole``: without the per-detector
wrappers inside it, the figure to compare trees with on a busy machine), then per detector: the detector's median call times the share of steps it runs on (its part of a typical step), its mean
cost per step (periodic work included: refreshed bars, sorts every k observations), and its calls.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "detection_corpus" / "gen"))
from corpus_schema import load_corpus  # noqa: E402

from detection_quality import _samples_by_step  # noqa: E402
from rlcockpit.health import HealthMonitor  # noqa: E402

clock = time.perf_counter_ns
MONITOR = "HealthMonitor.observe"  # the whole step (detectors timed inside it), as the issue-29 bar counts it


def _timed(fn: Any, into: list[int]) -> Any:
    def call(step: int) -> Any:
        t0 = clock()
        out = fn(step)
        into.append(clock() - t0)
        return out
    return call


def replay(trace: dict[str, Any], per_detector: bool = True) -> dict[str, list[int]]:
    """One replay of ``trace`` with every detector's per-step entry point timed (``check`` where the monitor
    inlines ``observe``, else ``observe``), and each whole step under :data:`MONITOR`."""
    times: dict[str, list[int]] = defaultdict(list)
    mon = HealthMonitor(run_config=trace["config"])
    for det in mon.detectors if per_detector else ():
        meth = "check" if det.plain_observe else "observe"
        setattr(det, meth, _timed(getattr(det, meth), times[type(det).__name__]))
    pending = _samples_by_step(trace)
    whole = times[MONITOR]
    for step, metrics in trace["metrics"]:
        while pending and pending[0][0] <= step:
            s, rows = pending.pop(0)
            mon.observe_samples(s, rows)
        t0 = clock()
        mon.observe(step, metrics)
        whole.append(clock() - t0)
    return times


def wrapper_ns() -> float:
    """The timing wrapper's own cost per call (median of 100k calls of a no-op)."""
    spent: list[int] = []
    noop = _timed(lambda step: None, spent)
    for i in range(100_000):
        noop(i)
    return statistics.median(spent)


def measure(replays: int, per_detector: bool = True) -> tuple[int, dict[str, list[float]]]:
    traces = load_corpus(["tuning", "heldout"])
    steps = sum(len(t["metrics"]) for t in traces)
    fastest: dict[str, list[float]] = defaultdict(list)
    for trace in traces:
        runs = [replay(trace, per_detector) for _ in range(replays)]
        for name in runs[0]:
            fastest[name] += [min(calls) for calls in zip(*(r[name] for r in runs))]
    return steps, fastest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replays", type=int, default=2)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--whole", action="store_true", help="time whole steps only (no wrappers inside them)")
    args = ap.parse_args(argv)
    steps, fastest = measure(args.replays, per_detector=not args.whole)
    ov = wrapper_ns()
    whole = fastest.pop(MONITOR)
    rows = sorted(((statistics.median(v) - ov) * len(v) / steps / 1000, (sum(v) - ov * len(v)) / steps / 1000,
                   len(v), name) for name, v in fastest.items() if v)[::-1]
    print(f"{steps} steps, {args.replays} replays, wrapper {ov:.0f} ns/call subtracted")
    inside = "no wrappers inside" if args.whole else "detectors timed inside"
    print(f"whole step ({inside}, fastest of the replays): p50 {statistics.median(whole) / 1000:.2f} µs, "
          f"mean {sum(whole) / len(whole) / 1000:.2f} µs")
    print(f"{'typical µs':>10} {'mean µs':>8} {'calls':>7}  detector")
    for typical, mean, calls, name in rows[: args.top]:
        print(f"{typical:10.2f} {mean:8.2f} {calls:7d}  {name}")
    print(f"{sum(r[0] for r in rows):10.2f} {sum(r[1] for r in rows):8.2f}          all detectors")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
