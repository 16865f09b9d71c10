"""Record a compact replay fixture from a stored trainer run (not a test module).

    python tests/health/record_fixture.py --dir /tmp/hq/store RUN tests/health/data/NAME.json

Keeps only what the health detectors read: the metric series they track (4 significant digits), up to
``--rows`` logged samples per sample step (responses cut to 120 characters) and the config sections the
advice consults. A few KB per run, so regression tests replay *real* training dynamics without a store.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from rlcockpit.health import HealthMonitor
from rlcockpit.health.diagnosis.diagnose import load_run
from rlcockpit.metrics.guide import canonical_name

CONFIG_SECTIONS = ("algorithm", "actor", "rollout", "data", "reward", "critic", "actor_rollout_ref")
SAMPLE_FIELDS = ("response", "reward", "response_length")


def _round(v: float) -> float | str:
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return float(f"{v:.4g}")


def compact(run: dict[str, Any], metrics: dict[int, dict[str, float]], samples: dict[int, list[dict[str, Any]]],
            rows: int = 16, max_steps: int | None = None) -> dict[str, Any]:
    """The fixture dict: ``{"name", "preset", "config", "steps", "series": {key: [v|None per step]}, "samples"}``."""
    monitor = HealthMonitor()
    tracked, prefixes = monitor._tracked, monitor._prefixes  # what the detectors would keep
    steps = sorted(metrics)[:max_steps]
    samples = {step: rs for step, rs in samples.items() if not steps or step <= steps[-1]}
    keys = sorted({k for m in metrics.values() for k in m
                   if not k.startswith("samples/")
                   and (canonical_name(k) in tracked or canonical_name(k).startswith(prefixes)
                        or canonical_name(k).startswith("system/gpu/"))})
    series = {k: [_round(metrics[s][k]) if k in metrics[s] else None for s in steps] for k in keys}
    cfg = run.get("config") or {}
    kept_samples = {
        str(step): [{f: (str(r[f])[:120] if f == "response" else r[f]) for f in SAMPLE_FIELDS if r.get(f) is not None}
                    for r in rs[:rows]]
        for step, rs in sorted(samples.items())
    }
    return {"name": run.get("name"), "preset": cfg.get("preset") or (cfg.get("trainer") or {}).get("preset"),
            "config": {k: cfg[k] for k in CONFIG_SECTIONS if k in cfg}
            | {"trainer": {k: (cfg.get("trainer") or {}).get(k) for k in ("total_training_steps", "preflight")}},
            "steps": steps, "series": series, "samples": kept_samples}


def load_fixture(path: str | Path) -> tuple[dict[str, Any], dict[int, dict[str, float]], dict[int, list[dict[str, Any]]]]:
    """(config, metrics by step, samples by step) of a fixture written by :func:`compact`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    metrics: dict[int, dict[str, float]] = {}
    for i, step in enumerate(data["steps"]):
        metrics[step] = {k: float(vals[i]) for k, vals in data["series"].items() if vals[i] is not None}
    samples = {int(s): rows for s, rows in data["samples"].items()}
    return data["config"], metrics, samples


def main(argv: list[str] | None = None) -> int:
    from rlcockpit.store import open_store

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run")
    parser.add_argument("out")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--max-steps", type=int, default=None, help="keep only the first N logged steps")
    args = parser.parse_args(argv)
    store = open_store(args.dir)
    run, metrics, samples = load_run(store, store.get_run(args.run)["id"])
    data = compact(run, metrics, samples, args.rows, args.max_steps)
    Path(args.out).write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    print(f"{args.out}: {len(data['steps'])} steps, {len(data['series'])} series, {Path(args.out).stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
