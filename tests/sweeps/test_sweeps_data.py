"""The sweep page's data: trial table, parallel coordinates, best-so-far curve, importance panel."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store import open_store
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.data import best_so_far, importance_panel, parallel_coordinates, sweep_summary
from rlcockpit.sweeps.state import SweepState


def test_sweep_page_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCOCKPIT_DIR", str(tmp_path))
    sweep_id = rlcockpit.sweep({
        "method": "random", "metric": {"name": "acc", "goal": "maximize"},
        "parameters": {"lr": {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-2},
                       "opt": {"values": ["adam", "sgd"]}, "fixed": {"value": 1}}}, project="p", seed=4)
    calls = []

    def train() -> None:
        run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
        calls.append(run.id)
        if len(calls) == 3:
            raise RuntimeError("boom")
        run.log({"acc": (0.9 if run.config["opt"] == "adam" else 0.5) - abs(run.config["lr"] - 1e-3)})

    rlcockpit.agent(sweep_id, function=train, count=8)
    summary = sweep_summary(SweepState(open_database()), sweep_id)
    assert summary["counts"]["finished"] == 7 and summary["counts"]["failed"] == 1
    assert summary["metric"] == {"name": "acc", "goal": "maximize", "target": None}
    rows = summary["trials"]
    assert [r["number"] for r in rows] == list(range(8)) and rows[2]["state"] == "failed"
    best = max((r for r in rows if r["best"] is not None), key=lambda r: r["best"])
    assert summary["best"]["run_id"] == best["run_id"] and summary["best"]["params"]["opt"] == best["params"]["opt"]

    pc = parallel_coordinates(summary)
    assert [a["name"] for a in pc["axes"]] == ["lr", "opt", "acc"]  # constants are not an axis
    assert pc["axes"][0]["scale"] == "log" and pc["axes"][1] == {"name": "opt", "type": "categorical",
                                                                 "values": ["adam", "sgd"]}
    assert len(pc["lines"]) == 7 and all(line["values"][1] in ("adam", "sgd") for line in pc["lines"])

    curve = best_so_far(summary)
    assert len(curve) == 8 and curve[2]["value"] is None  # the failed trial has no value
    bests = [c["best"] for c in curve if c["best"] is not None]
    assert bests == sorted(bests) and bests[-1] == summary["best"]["value"]

    panel = importance_panel(open_store(), summary)
    assert panel["sweep"] == sweep_id and panel["n_used"] == 7 and panel["excluded_missing_metric"] == 1
    assert {r["key"] for r in panel["parameters"]} == {"lr", "opt"}
    assert "error" in importance_panel(open_store(), summary, metric="nope")
