"""Hyperparameter importance recovers known effects on generated projects (two keys + noise, an
interaction, a categorical), merges identical keys, skips names, and counts runs without the metric."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pytest

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.store import open_store
from rlcockpit.sweeps.importance import compute_importance, project_importance


def make_project(store_dir: Path, configs: list[dict], values: list[float | None], project: str = "gen",
                 group: str | None = None, metric: str = "score") -> None:
    store = open_store(store_dir)
    for cfg, v in zip(configs, values):
        rid = uuid.uuid4().hex[:8]
        store.create_run({"id": rid, "project": project, "name": f"run-{rid}", "group": group, "config": cfg,
                          "summary": {} if v is None else {metric: v, "other": 1.0}, "status": "finished"})


def ranking(result: dict) -> list[str]:
    return [r["key"] for r in result["parameters"]]


def test_two_effects_and_noise(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 80
    configs, values = [], []
    for i in range(n):
        cfg = {"optim": {"lr": float(10 ** rng.uniform(-5, -2))}, "kl_coef": float(rng.uniform(0, 0.1)),
               "noise_a": float(rng.uniform()), "noise_b": int(rng.integers(0, 100)),
               "seed_text": str(rng.choice(["x", "y", "z"])), "name": f"trial-{i}", "fixed": 3}
        cfg["actor.optim.lr"] = cfg["optim"]["lr"]  # the same value under a second key (a sweep alias)
        y = -((np.log10(cfg["optim"]["lr"]) + 3.5) ** 2) + 20 * cfg["kl_coef"] + rng.normal(0, 0.05)
        configs.append(cfg)
        values.append(float(y))
    make_project(tmp_path, configs, values)
    make_project(tmp_path, configs[:3], [None, None, None])  # three runs never logged the metric
    res = project_importance(open_store(tmp_path), "gen", "score", goal="max")
    order = ranking(res)
    assert set(order[:2]) == {"optim.lr", "kl_coef"} or set(order[:2]) == {"actor.optim.lr", "kl_coef"}
    lr_row = next(r for r in res["parameters"] if "lr" in r["key"])
    assert len(lr_row["aliases"]) == 1 and lr_row["key"] == "optim.lr"  # merged, not twice; shorter name leads
    assert res["excluded_missing_metric"] == 3 and res["n_used"] == n and res["n_runs"] == n + 3
    assert {"key": "name", "why": "different in every run (a name or path, not a hyperparameter)"} in res["skipped"]
    kl = next(r for r in res["parameters"] if r["key"] == "kl_coef")
    assert kl["correlation"] > 0.3 and kl["direction"] == "higher is better"
    noise = [r for r in res["parameters"] if r["key"].startswith("noise") or r["key"] == "seed_text"]
    assert max(r["permutation"] for r in noise) < 0.05 < kl["permutation"]
    assert res["model"]["r2_oob"] > 0.8
    assert "fixed" not in order


def test_interaction_without_main_effects(tmp_path: Path) -> None:
    """y = XOR(x > .5, z > .5): neither key correlates with the metric, the forest still finds both."""
    rng = np.random.default_rng(1)
    configs, values = [], []
    for _ in range(120):
        cfg = {"x": float(rng.uniform()), "z": float(rng.uniform()), "noise": float(rng.uniform()),
               "noise2": float(rng.uniform())}
        configs.append(cfg)
        values.append(float((cfg["x"] > 0.5) != (cfg["z"] > 0.5)) + float(rng.normal(0, 0.05)))
    res = compute_importance(configs, values)
    assert set(ranking(res)[:2]) == {"x", "z"}
    rows = {r["key"]: r for r in res["parameters"]}
    assert abs(rows["x"]["correlation"]) < 0.25 and abs(rows["z"]["correlation"]) < 0.25  # correlation misses it
    assert min(rows["x"]["permutation"], rows["z"]["permutation"]) > 5 * max(rows["noise"]["permutation"], 0.01)


def test_categorical_effect_and_few_valued_signal_beats_many_valued_noise() -> None:
    """A 3-valued optimizer drives the metric; a continuous key is noise. Impurity importance tends to
    credit the many-valued noise; the permutation ranking (and PED-ANOVA) put the categorical first."""
    rng = np.random.default_rng(2)
    configs, values = [], []
    effect = {"adam": 1.0, "sgd": 0.0, "rmsprop": 0.4}
    for _ in range(90):
        cfg = {"optimizer": str(rng.choice(list(effect))), "warmup": float(rng.uniform()),
               "use_ema": bool(rng.integers(0, 2)), "batch": int(rng.choice([16, 32, 64]))}
        configs.append(cfg)
        values.append(effect[cfg["optimizer"]] + float(rng.normal(0, 0.1)))
    res = compute_importance(configs, values, goal="max")
    top = res["parameters"][0]
    assert top["key"] == "optimizer" and top["kind"] == "categorical"
    assert top["direction"] == "best: adam"
    levels = {lv["value"]: lv for lv in top["levels"]}
    assert levels["adam"]["mean"] > levels["rmsprop"]["mean"] > levels["sgd"]["mean"]
    assert levels["adam"]["correlation"] > 0.5 and levels["sgd"]["correlation"] < -0.4
    assert top["ped_anova"] is not None and top["ped_anova"] == max(r["ped_anova"] for r in res["parameters"])
    booleans = next(r for r in res["parameters"] if r["key"] == "use_ema")
    assert booleans["kind"] == "numeric"  # booleans are 0/1


def test_errors_and_degenerate_projects(tmp_path: Path) -> None:
    make_project(tmp_path, [{"a": 1}, {"a": 2}], [0.1, None])
    with pytest.raises(ValueError, match="at least 3 runs with 'score'; 1 of 2 runs have it"):
        project_importance(open_store(tmp_path), "gen", "score")
    with pytest.raises(KeyError, match="no runs in project 'nope'"):
        project_importance(open_store(tmp_path), "nope", "score")
    res = compute_importance([{"a": 1}, {"a": 1}, {"a": 1}], [0.1, 0.2, 0.3])
    assert res["parameters"] == [] and res["note"] == "no config key varies"


def test_cli_table_json_sweep_filter_and_metric_alias(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Runs logged through rlcockpit.init as a trainer logs them (critic/score/mean); the article's name
    reward/mean finds them through the metric guide."""
    rng = np.random.default_rng(3)
    for i in range(24):
        lr = float(rng.choice([1e-5, 1e-4, 1e-3]))
        run = rlcockpit.init(project="arith", dir=tmp_path, group="sw1" if i < 20 else None, system_interval=None,
                             health=False, capture_meta=False, config={"actor": {"optim": {"lr": lr}},
                                                                       "rollout": {"n": int(rng.choice([2, 4]))}})
        for step in range(3):
            run.log({"critic/score/mean": -abs(np.log10(lr) + 4) + float(rng.normal(0, 0.05))}, step=step)
        run.finish()
    dir_args = ["--dir", str(tmp_path)]
    assert main(["importance", "--project", "arith", "--sweep", "sw1", "--metric", "reward/mean", "--json",
                 *dir_args]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_used"] == 20 and res["parameters"][0]["key"] == "actor.optim.lr"
    assert main(["importance", "--project", "arith", "--metric", "critic/score/mean", *dir_args]) == 0
    text = capsys.readouterr().out
    assert "importance of critic/score/mean (max) over 24 runs of project 'arith'" in text
    assert text.splitlines()[2].startswith("actor.optim.lr")


def test_cli_takes_the_sweeps_minimize_goal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    """A sweep minimizing val_loss: decay raises the loss, so lower decay is better — in the CLI as on the
    sweep page (one goal rule, importance_goal); an explicit --goal still wins."""
    from rlcockpit.store.sql import open_database
    from rlcockpit.sweeps.data import importance_panel, sweep_summary
    from rlcockpit.sweeps.state import SweepState

    monkeypatch.setenv("RLCOCKPIT_DIR", str(tmp_path))
    sweep_id = rlcockpit.sweep({"method": "random", "metric": {"name": "val_loss", "goal": "minimize"},
                                "parameters": {"decay": {"min": 0.0, "max": 0.1}}}, project="p", seed=2)

    def train() -> None:
        run = rlcockpit.init(system_interval=None, health=False, capture_meta=False)
        run.log({"val_loss": 1.0 + 5 * run.config["decay"]})

    rlcockpit.agent(sweep_id, function=train, count=8)
    capsys.readouterr()
    assert main(["importance", "--project", "p", "--sweep", sweep_id, "--metric", "val_loss", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    decay = res["parameters"][0]
    assert res["goal"] == "min" and res["goal_source"] == "the sweep's metric.goal"
    assert decay["key"] == "decay" and decay["correlation"] > 0.8 and decay["direction"] == "lower is better"
    panel = importance_panel(open_store(tmp_path), sweep_summary(SweepState(open_database()), sweep_id))
    assert panel["goal"] == "min" and panel["parameters"][0]["direction"] == "lower is better"
    assert main(["importance", "--project", "p", "--sweep", sweep_id, "--metric", "val_loss"]) == 0
    text = capsys.readouterr().out
    assert "importance of val_loss (min) over 8 runs" in text and "goal from the sweep's metric.goal" in text
    assert text.splitlines()[2].rstrip().endswith("lower is better")
    assert main(["importance", "--project", "p", "--sweep", sweep_id, "--metric", "val_loss", "--goal", "max",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"][0]["direction"] == "higher is better"
