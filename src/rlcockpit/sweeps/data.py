"""What a sweep page shows, as plain JSON-ready data: the trial table, parallel coordinates, the
best-so-far curve and the importance panel. The dashboard (and ``rlcockpit sweep --status``) render these;
keeping them here means every view of a sweep agrees on what "best" and "value" mean.
"""

from __future__ import annotations

import math
from typing import Any

from rlcockpit.sweeps.config import parse_sweep
from rlcockpit.sweeps.controller import best_trial
from rlcockpit.sweeps.params import flat_params
from rlcockpit.sweeps.state import SweepState


def sweep_summary(state: SweepState, sweep_id: str) -> dict[str, Any]:
    """The sweep, its config, agents and the trial table (one row per trial, params flattened)."""
    sweep = state.get(sweep_id)
    cfg = parse_sweep(sweep["config"])
    trials = state.trials(sweep["id"])
    rows = []
    for t in trials:
        rows.append({**{k: t[k] for k in ("number", "run_id", "state", "best", "latest", "worst", "n_values",
                                          "reason", "exit_code", "created_at", "ended_at", "agent_id")},
                     "params": t["params"], "params_flat": flat_params(t["params"]),
                     "duration_s": (t["ended_at"] - t["created_at"]) if t["ended_at"] else None})
    best = best_trial(cfg, trials)
    metric = cfg.metric
    return {
        "id": sweep["id"], "project": sweep["project"], "name": sweep["name"], "method": sweep["method"],
        "state": sweep["state"], "reason": sweep["reason"], "seed": sweep["seed"], "sampler": sweep["sampler"],
        "config": sweep["config"], "created_at": sweep["created_at"],
        "metric": None if metric is None else {"name": metric.name, "goal": metric.goal, "target": metric.target},
        "parameters": [{"name": p.name, "distribution": p.kind, **dict(p.spec)} for p in cfg.parameters],
        "trials": rows, "agents": state.agents(sweep["id"]),
        "counts": {s: sum(1 for t in trials if t["state"] == s)
                   for s in ("running", "finished", "failed", "crashed", "stopped", "killed")},
        "best": None if best is None else {"number": best["number"], "run_id": best["run_id"],
                                           "value": best["best"], "params": best["params"]},
    }


def parallel_coordinates(summary: dict[str, Any]) -> dict[str, Any]:
    """One axis per searched parameter plus the metric; one line per trial with a value. Categorical axes
    list their values in the sweep's order so the chart can place them."""
    axes = []
    for p in summary["parameters"]:
        if p["distribution"] == "constant":
            continue
        axis: dict[str, Any] = {"name": p["name"], "type": "numeric"}
        if p["distribution"].startswith("categorical"):
            axis = {"name": p["name"], "type": "categorical", "values": [str(v) for v in p["values"]]}
        elif "log" in p["distribution"] and "normal" not in p["distribution"]:
            axis["scale"] = "log"
        axes.append(axis)
    metric = summary["metric"]
    if metric:
        axes.append({"name": metric["name"], "type": "numeric", "metric": True, "goal": metric["goal"]})
    lines = []
    for t in summary["trials"]:
        values = [t["params_flat"].get(a["name"]) if not a.get("metric") else t["best"] for a in axes]
        if a_metric_missing(values, metric):
            continue
        lines.append({"number": t["number"], "run_id": t["run_id"], "state": t["state"],
                      "values": [str(v) if a["type"] == "categorical" else v for v, a in zip(values, axes)]})
    return {"axes": axes, "lines": lines}


def a_metric_missing(values: list[Any], metric: dict[str, Any] | None) -> bool:
    return bool(metric) and values[-1] is None


def best_so_far(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per trial (in start order): its value and the best value up to it, for the best-so-far chart."""
    metric = summary["metric"]
    if metric is None:
        return []
    maximize = metric["goal"] == "maximize"
    out, best = [], None
    for t in summary["trials"]:
        v = t["best"] if t["state"] == "finished" else None
        if v is not None and math.isfinite(v) and (best is None or (v > best if maximize else v < best)):
            best = v
        out.append({"number": t["number"], "run_id": t["run_id"], "state": t["state"], "value": v, "best": best})
    return out


def importance_panel(store: Any, summary: dict[str, Any], metric: str | None = None) -> dict[str, Any]:
    """The importance panel of a sweep (its trials' configs against the sweep metric by default)."""
    from rlcockpit.sweeps.importance import project_importance

    name = metric or (summary["metric"] or {}).get("name")
    if not name:
        return {"error": "the sweep has no metric; pick one"}
    try:
        return project_importance(store, summary["project"], name, sweep=summary["id"],
                                  sweep_metric=summary["metric"])
    except (KeyError, ValueError) as exc:
        return {"error": exc.args[0] if exc.args else str(exc)}
