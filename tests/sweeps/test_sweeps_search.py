"""Grid order and dedup, seeded random search, Bayesian search with W&B's imputation, hyperband bands."""

from __future__ import annotations

import pytest
from sweeps_support import WANDB_GRID, WANDB_NESTED

from rlcockpit.sweeps import hyperband
from rlcockpit.sweeps.config import Metric, load_yaml, parse_sweep
from rlcockpit.sweeps.search import (
    TrialView,
    grid_size,
    objective_values,
    suggest,
    suggest_bayes,
    suggest_grid,
)


def walk_grid(cfg):
    trials: list[TrialView] = []
    while (params := suggest_grid(cfg, trials)) is not None:
        trials.append(TrialView(len(trials), params, "finished"))
    return [t.params for t in trials]


def test_grid_walks_every_point_once_in_wandb_order() -> None:
    cfg = parse_sweep(load_yaml(WANDB_GRID))
    points = walk_grid(cfg)
    assert len(points) == 27 == grid_size(cfg)
    # parameters sorted by name (base, direction, epochs, increment, sleep, variance), the last varies fastest
    assert points[0] == {"base": 10, "direction": -1, "epochs": 5, "increment": 0.1, "sleep": 0.5, "variance": 5}
    assert points[1]["increment"] == 0.2 and points[3]["direction"] == 0.1
    assert len({tuple(sorted(p.items())) for p in points}) == 27


def test_grid_removes_duplicate_values_and_points_already_run() -> None:
    cfg = parse_sweep({"program": "t.py", "method": "grid", "parameters": {
        "a": {"values": [1, 1.0, 3e6, 3000000, 2]}, "b": {"values": ["x", "x"]}}})
    assert grid_size(cfg) == 3
    done = [TrialView(0, {"a": 3000000.0, "b": "x"}, "failed")]  # a failed point is not retried (as W&B)
    left = []
    while (p := suggest_grid(cfg, done + [TrialView(9, q, "finished") for q in left])) is not None:
        left.append(p)
    assert left == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]


def test_grid_int_uniform_inclusive_and_q_uniform_as_arange() -> None:
    cfg = parse_sweep({"program": "t.py", "method": "grid", "parameters": {
        "i": {"min": 1, "max": 3}, "q": {"distribution": "q_uniform", "min": 0, "max": 6, "q": 2}}})
    pts = walk_grid(cfg)
    assert sorted({p["i"] for p in pts}) == [1, 2, 3]
    assert sorted({p["q"] for p in pts}) == [0, 2, 4]  # W&B: numpy arange, max excluded


def test_nested_grid_gives_nested_params() -> None:
    pts = walk_grid(parse_sweep(load_yaml(WANDB_NESTED)))
    assert len(pts) == 8
    assert pts[0] == {"batch_size": 32, "optimizer": {"lr": 0.001, "nadam": {"beta": 0.9}}}


def test_random_search_is_seeded_per_trial_number() -> None:
    cfg = parse_sweep({"program": "t.py", "method": "random", "parameters": {
        "lr": {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-2}, "bs": {"values": [8, 16]},
        "fixed": {"value": "adam"}}})
    a = [suggest(cfg, [], seed=7, number=i) for i in range(5)]
    b = [suggest(cfg, [], seed=7, number=i) for i in range(5)]
    c = [suggest(cfg, [], seed=8, number=i) for i in range(5)]
    assert a == b and a != c
    assert all(p["fixed"] == "adam" and 1e-5 <= p["lr"] <= 1e-2 for p in a)


METRIC_MAX = Metric("acc", "maximize")


def test_imputation_follows_wandb() -> None:
    trials = [
        TrialView(0, {}, "finished", best=0.8, worst=0.2, latest=0.7),
        TrialView(1, {}, "finished", best=0.6, worst=0.1, latest=0.6),
        TrialView(2, {}, "failed", best=0.5, worst=0.3, latest=0.4),
        TrialView(3, {}, "crashed"),  # never logged the metric
        TrialView(4, {}, "running", best=0.9, worst=0.9, latest=0.9),
        TrialView(5, {}, "finished"),  # finished without the metric
    ]
    v = objective_values(METRIC_MAX, trials)
    assert v[0] == 0.8 and v[1] == 0.6  # finished: the best value of the history
    assert v[2] == v[3] == v[5] == 0.1  # the worst value any terminal trial reached
    assert v[4] is None  # running: pending for the sampler
    latest = objective_values(Metric("acc", "maximize", impute="latest", impute_while_running="latest"), trials)
    assert latest[2] == 0.4 and latest[3] == 0.0 and latest[4] == 0.9
    assert objective_values(Metric("loss"), [TrialView(0, {}, "failed")])[0] == 0.0  # nothing measured yet


BAYES = {"program": "t.py", "method": "bayes", "metric": {"name": "y", "goal": "maximize"}, "parameters": {
    "x": {"min": -2.0, "max": 2.0}, "z": {"distribution": "log_uniform_values", "min": 1e-3, "max": 1.0}}}


def objective(p):
    return -((p["x"] - 0.7) ** 2) - (p["z"] - 0.1) ** 2


@pytest.mark.parametrize("sampler", ["tpe", "gp"])
def test_bayes_converges_and_is_reproducible(sampler: str) -> None:
    cfg = parse_sweep(BAYES)
    trials: list[TrialView] = []
    for i in range(22):
        p = suggest_bayes(cfg, trials, seed=3, number=i, sampler=sampler)
        assert -2.0 <= p["x"] <= 2.0 and 1e-3 <= p["z"] <= 1.0
        y = objective(p)
        trials.append(TrialView(i, p, "finished", best=y, worst=y, latest=y))
    best = max(t.best for t in trials)
    assert best > -0.05
    again = suggest_bayes(cfg, trials[:15], seed=3, number=15, sampler=sampler)
    assert again == trials[15].params  # the same history and seed give the same suggestion (resumable)


def test_bayes_steers_away_from_failures() -> None:
    """Trials failing for x > 0 are imputed with the worst value: the sampler learns to avoid them."""
    cfg = parse_sweep({**BAYES, "parameters": {"x": {"min": -1.0, "max": 1.0}}})
    trials: list[TrialView] = []
    for i in range(30):
        p = suggest_bayes(cfg, trials, seed=1, number=i, sampler="tpe")
        if p["x"] > 0:
            trials.append(TrialView(i, p, "failed"))
        else:
            y = -abs(p["x"] + 0.5)
            trials.append(TrialView(i, p, "finished", best=y, worst=y, latest=y))
    late = [t.params["x"] for t in trials[15:]]
    assert sum(x > 0 for x in late) <= 4


def test_pending_trials_spread_parallel_agents() -> None:
    cfg = parse_sweep({**BAYES, "parameters": {"x": {"min": -2.0, "max": 2.0}}})
    trials = []
    for i in range(12):
        p = suggest_bayes(cfg, trials, seed=5, number=i, sampler="tpe")
        y = -((p["x"] - 0.7) ** 2)
        trials.append(TrialView(i, p, "finished", best=y, worst=y, latest=y))
    for sampler in ("tpe", "gp"):
        first = suggest_bayes(cfg, trials, seed=5, number=12, sampler=sampler)
        pending = trials + [TrialView(12, first, "running")]
        second = suggest_bayes(cfg, pending, seed=5, number=13, sampler=sampler)
        assert abs(first["x"] - second["x"]) > 1e-3, sampler


# ---- hyperband -----------------------------------------------------------------------------------------

def test_bands_match_wandb_docs() -> None:
    assert hyperband.hyperband_bands(min_iter=3, eta=3)[:4] == [3, 9, 27, 81]
    assert hyperband.hyperband_bands(max_iter=27, s=2, eta=3) == [3, 9]
    assert hyperband.hyperband_bands(max_iter=5, s=2, eta=2) == [1, 2]


def test_wandb_hyperband_example() -> None:
    """The example of W&B's hyperband_stop_runs docstring (loss, minimise, max_iter 5, eta 2, s 2)."""
    runs = {"a": [10, 9], "b": [10, 10], "c": [10, 8, 8], "d": [10, 7, 7], "e": [10, 6, 6]}
    bands = hyperband.hyperband_bands(max_iter=5, s=2, eta=2)
    everyone = list(runs.values())
    for strict in (False, True):
        decisions = {k: hyperband.decide(runs[k], everyone, bands, 2, maximize=False, strict=strict).stop
                     for k in ("b", "c", "d")}
        assert decisions == {"b": True, "c": True, "d": False}


def test_strict_compares_the_value_at_the_band() -> None:
    """A trial that was good early but is bad at the band: the permissive rule keeps it, strict stops it."""
    others = [[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7]]
    mine = [1, 9, 9, 9]
    everyone = [*others, mine]
    bands = [2]
    assert not hyperband.decide(mine, everyone, bands, 3, maximize=False, strict=False).stop
    d = hyperband.decide(mine, everyone, bands, 3, maximize=False, strict=True)
    assert d.stop and d.band == 2
    assert "iteration 2" in d.reason("loss", maximize=False)


def test_maximize_and_no_band_reached() -> None:
    everyone = [[0.9, 0.9], [0.8, 0.8], [0.1, 0.1]]
    assert hyperband.decide([0.1, 0.1], everyone, [1], 3, maximize=True).stop
    assert not hyperband.decide([0.1], everyone, [1], 3, maximize=True).stop  # has not reached iteration 1
    assert not hyperband.decide([0.9, 0.9], everyone, [1], 3, maximize=True).stop
