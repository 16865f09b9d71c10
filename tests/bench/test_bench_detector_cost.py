"""bench/detector_cost.py splits the monitor's per-step cost by detector: every enabled detector that a trace
triggers is timed, and the timed replay raises the same findings as a plain one (the wrapper changes no answer)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "detection_corpus" / "gen"))

from corpus_schema import load_corpus  # noqa: E402

import detector_cost  # noqa: E402
from rlcockpit.health import HealthMonitor  # noqa: E402


def test_each_triggered_detector_is_timed_once_per_call_and_findings_are_unchanged():
    trace = next(t for t in load_corpus(["heldout"]) if t["class"] != "healthy" and len(t["metrics"]) > 100)
    times = detector_cost.replay(trace)
    names = {type(d).__name__ for d in HealthMonitor(run_config=trace["config"]).detectors}
    assert len(times.pop(detector_cost.MONITOR)) == len(trace["metrics"])  # every step timed whole
    assert set(times) <= names and len(times) >= 10
    assert list(detector_cost.replay(trace, per_detector=False)) == [detector_cost.MONITOR]
    assert all(len(v) <= len(trace["metrics"]) and all(ns > 0 for ns in v) for v in times.values())
    def findings(timed: bool) -> list[tuple[int, str, str]]:
        mon = HealthMonitor(run_config=trace["config"])
        if timed:  # the same wrapping as the bench's replay
            for det in mon.detectors:
                meth = "check" if det.plain_observe else "observe"
                setattr(det, meth, detector_cost._timed(getattr(det, meth), []))
        return [(f.step, f.detector, f.severity) for s, m in trace["metrics"] for f in mon.observe(s, m)]

    plain = findings(False)
    assert plain and findings(True) == plain
