"""A W&B user's sweep analysis (docs/qa/outsider-inputs.md): trials that rename themselves
(``wandb.run.name = ...``, W&B's sweep programs), ``wandb.run.sweep_id``, then W&B's public API on the sweep:
``api.sweep("entity/project/id")``, ``sweep.runs``, ``sweep.best_run()``, ``run.sweep``. Before: the names were
lost, ``sweep_id`` and ``Api.sweep`` were AttributeErrors."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweeps_support import env

import rlcockpit as wandb
from rlcockpit.tracking import run as run_module


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for k, v in env(tmp_path / "store").items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    run_module._current = None


def test_public_api_sweep_runs_best_run_and_trial_names(ws: Path) -> None:
    config = {"method": "grid", "metric": {"name": "val_acc", "goal": "maximize"},
              "parameters": {"batch_size": {"values": [16, 32, 64]}}}
    sweep_id = wandb.sweep(sweep=config, project="sweep-api", entity="me")
    seen = []

    def main():
        run = wandb.init(system_interval=None)
        wandb.run.name = f"bs-{wandb.config.batch_size}"
        seen.append(wandb.run.sweep_id)
        run.log({"val_acc": 1 - abs(wandb.config.batch_size - 32) / 64})
        run.finish()

    wandb.agent(sweep_id, function=main, count=3)
    assert seen == [sweep_id] * 3
    api = wandb.Api()
    sweep = api.sweep(f"me/sweep-api/{sweep_id}")
    assert sweep.id == sweep_id and sweep.state in ("RUNNING", "FINISHED") and sweep.config["method"] == "grid"
    assert sorted(r.name for r in sweep.runs) == ["bs-16", "bs-32", "bs-64"]
    ranked = sorted(sweep.runs, key=lambda r: r.summary.get("val_acc", 0), reverse=True)
    assert sweep.best_run().name == "bs-32" == ranked[0].name
    assert sweep.best_run(order="+summary_metrics.val_acc").summary["val_acc"] == 0.5
    assert ranked[0].sweep.id == sweep_id
    assert wandb.Api().run(ranked[0].id).sweep is not None
    with pytest.raises(KeyError, match="no sweep 'nope'"):
        api.sweep("me/sweep-api/nope")
    other = wandb.init(project="sweep-api", group="not-a-sweep", system_interval=None)
    other.finish()
    assert api.run(other.id).sweep is None


def test_sweep_values_win_over_config_defaults_yaml(ws: Path) -> None:
    # W&B: ./config-defaults.yaml gives every run its defaults; a sweep's values override them
    (ws / "config-defaults.yaml").write_text("lr:\n  value: 0.5\nepochs:\n  value: 7\n")
    sweep_id = wandb.sweep({"method": "grid", "parameters": {"lr": {"values": [0.1, 0.01]}}}, project="defaults")
    seen = []

    def main():
        run = wandb.init(system_interval=None)
        seen.append((wandb.config.lr, wandb.config.epochs))
        run.finish()

    wandb.agent(sweep_id, function=main, count=2)
    assert seen == [(0.1, 7), (0.01, 7)]
