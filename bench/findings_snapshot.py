"""Every finding the health monitor raises on the detection corpus (generated tuning + held-out traces and the real
runs), as JSON: a performance change to the monitor must leave this byte-for-byte identical.

    PYTHONPATH=src python bench/findings_snapshot.py > after.json
    PYTHONPATH=/path/to/old/src python bench/findings_snapshot.py > before.json && cmp before.json after.json

Each finding is its full ``to_dict()`` (detector, severity, title, summary, step range, metric, evidence, causes,
actions; not the wall-clock time it was made at), in the order the monitor raised it, per trace id.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "detection_corpus" / "gen"))
from corpus_schema import load_corpus  # noqa: E402
from real_runs import load_real  # noqa: E402

from detection_quality import _samples_by_step  # noqa: E402
from rlcockpit.health import HealthMonitor  # noqa: E402

WALL_CLOCK = ("created_at",)  # when the finding was made: differs on every run


def findings(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The trace replayed as ``detection_quality.run_ours`` does (samples before their step's metrics)."""
    mon = HealthMonitor(run_config=trace["config"])
    out = []
    pending = _samples_by_step(trace)
    for step, metrics in trace["metrics"]:
        while pending and pending[0][0] <= step:
            s, rows = pending.pop(0)
            out += mon.observe_samples(s, rows)[1]
        out += mon.observe(step, metrics)
    out += mon.close()
    return [{k: v for k, v in f.to_dict().items() if k not in WALL_CLOCK} for f in out]


def snapshot(real: bool = True, limit: int | None = None) -> dict[str, list[dict[str, Any]]]:
    traces = load_corpus(["tuning", "heldout"]) + (load_real() if real else [])
    return {t["id"]: findings(t) for t in traces[:limit]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-real", action="store_true", help="generated traces only")
    args = ap.parse_args(argv)
    json.dump(snapshot(real=not args.no_real), sys.stdout, indent=1, sort_keys=True, default=str)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
