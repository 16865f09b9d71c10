"""How much a diagnosis proposes on the labelled detection corpus (bench/detection_corpus/), per class.

    python bench/advice_quality.py --split heldout --markdown
    python bench/advice_quality.py --json

Each trace is replayed through the live detectors (as ``bench/detection_quality.py`` does) and diagnosed
(``diagnose_findings`` with the trace's config and its number of logged steps). Per class: how many traces get
any override to paste, how many get one from a detector responsible for the class (``OURS`` in
detection_quality.py: the right kind of fix), and the mean number of keys proposed. On healthy traces every
proposed key is advice a healthy run did not need. ``repeated_keys`` counts keys proposed twice in one paste
line (must be 0). Aggregates only: no per-trace detail, so the held-out split can be scored.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "detection_corpus" / "gen"))
from corpus_schema import SPLITS, load_corpus  # noqa: E402

from detection_quality import OURS  # noqa: E402
from rlcockpit.health import HealthMonitor  # noqa: E402
from rlcockpit.health.diagnosis.diagnose import diagnose_findings  # noqa: E402


def replay_trace(trace: dict[str, Any]) -> list[Any]:
    """Every finding the live monitor raises on the trace (samples before the metrics of their step)."""
    monitor = HealthMonitor(run_config=trace["config"])
    pending = sorted(trace["samples"], key=lambda x: x[0])
    for step, metrics in trace["metrics"]:
        while pending and pending[0][0] <= step:
            s, rows = pending.pop(0)
            monitor.observe_samples(s, rows)
        monitor.observe(step, metrics)
    monitor.close()
    return monitor.findings


def diagnose_trace(trace: dict[str, Any]) -> dict[str, Any]:
    findings = replay_trace(trace)
    kwargs = {"steps": len(trace["metrics"])} if "steps" in inspect.signature(diagnose_findings).parameters else {}
    return diagnose_findings(findings, trace["config"], **kwargs)  # older trees: no ``steps``


def score(trace: dict[str, Any], diag: dict[str, Any]) -> dict[str, Any]:
    apply = diag["overrides"]["apply"]
    keys = [o.split("=", 1)[0] for o in apply]
    responsible = OURS.get(trace["class"], set())
    right = any(c["for"].split(" at step ")[0] in responsible for c in diag["overrides"]["choices"])
    return {"class": trace["class"], "keys": len(keys), "any": bool(keys), "right": right,
            "repeated": len(keys) - len(set(keys))}


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["class"]].append(r)
    out = {}
    for cls, rs in sorted(by.items()):
        out[cls] = {"traces": len(rs), "with_overrides": sum(r["any"] for r in rs),
                    "with_responsible_override": sum(r["right"] for r in rs),
                    "mean_keys": round(sum(r["keys"] for r in rs) / len(rs), 2)}
    failures = [r for r in rows if r["class"] != "healthy"]
    healthy = [r for r in rows if r["class"] == "healthy"]
    out["_overall"] = {
        "failure_traces": len(failures),
        "failures_with_responsible_override": sum(r["right"] for r in failures),
        "failure_mean_keys": round(sum(r["keys"] for r in failures) / max(1, len(failures)), 2),
        "healthy_traces": len(healthy), "healthy_with_overrides": sum(r["any"] for r in healthy),
        "healthy_keys": sum(r["keys"] for r in healthy), "repeated_keys": sum(r["repeated"] for r in rows)}
    return out


def markdown(split: str, agg: dict[str, Any]) -> str:
    lines = [f"Split `{split}`:", "", "| class | traces | with overrides | from a responsible detector | mean keys |",
             "|---|---|---|---|---|"]
    for cls, a in agg.items():
        if not cls.startswith("_"):
            lines.append(f"| {cls} | {a['traces']} | {a['with_overrides']} | {a['with_responsible_override']} | "
                         f"{a['mean_keys']} |")
    o = agg["_overall"]
    lines += ["", f"Failures: {o['failures_with_responsible_override']}/{o['failure_traces']} get a fix from a "
              f"responsible detector, {o['failure_mean_keys']} keys per trace; healthy: {o['healthy_with_overrides']}/"
              f"{o['healthy_traces']} traces get overrides ({o['healthy_keys']} keys); repeated keys: "
              f"{o['repeated_keys']}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=SPLITS, action="append", help="default: every split")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = {}
    for split in args.split or list(SPLITS):
        report[split] = aggregate([score(t, diagnose_trace(t)) for t in load_corpus([split])])
    if args.markdown:
        print("\n\n".join(markdown(s, a) for s, a in report.items()))
    else:
        print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
