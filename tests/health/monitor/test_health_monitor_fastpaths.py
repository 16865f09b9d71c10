"""The per-step fast paths keep the monitor's answers unchanged: smoothed means, bounded plan cache, memoised
config answers that follow ``run.config.update``, and the creep pre-gate."""

from __future__ import annotations

import pytest

from rlcockpit.health import HealthMonitor
from rlcockpit.health.advice import advise
from rlcockpit.health.base import Track
from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.detectors.memory import creep
from rlcockpit.health.findings import Finding
from rlcockpit.health.monitor import PLAN_CACHE_SIZE


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7])
def test_mean_last_matches_the_plain_mean(n):
    track = Track("x")
    for i in range(n):
        track.push(i, 0.1 * i + 1.0 / (i + 3))
    for k in range(1, 7):
        expected = sum(list(track.values)[-k:]) / min(k, n) if n else None
        got = track.mean_last(k)
        assert (got != got) if expected is None else got == pytest.approx(expected, rel=0, abs=1e-15)


def test_plan_cache_stays_bounded_when_key_sets_never_repeat():
    mon = HealthMonitor()
    for step in range(3 * PLAN_CACHE_SIZE):
        mon.observe(step, {"actor/grad_norm": 1.0, f"custom/metric_{step}": 1.0})
    assert len(mon._plans) <= PLAN_CACHE_SIZE
    assert mon.ctx.tracks["actor/grad_norm"].n == 3 * PLAN_CACHE_SIZE


def test_memoised_config_answers_follow_a_config_update():
    config = {"actor": {"optim": {"lr": 1e-6}}, "algorithm": {"kl_ctrl": {"kl_coef": 0.05}}}
    view = RunConfigView(config)
    finding = Finding(detector="kl_spike", severity="critical", step=5, title="t")
    causes, _ = advise(finding, view)
    assert not any("kl_coef" in c.title for c in causes)
    config.update({"algorithm": {"kl_ctrl": {"kl_coef": 0.001}}})  # wandb-style run.config.update
    causes, actions = advise(finding, view)
    assert causes[0].title.startswith("kl_coef=0.001 is far below")
    assert view.number("algorithm.kl_ctrl.kl_coef") == 0.001


def test_creep_pre_gate_gives_the_same_answer():
    rising, flat = Track("a"), Track("b")
    for i in range(30):
        rising.push(i, 50.0 + 0.5 * i)
        flat.push(i, 50.0 + 0.01 * i)
    assert creep(rising, 30, 3.0) == creep(rising, 30) and creep(rising, 30) is not None
    assert creep(flat, 30, 3.0) is None and creep(flat, 30) is not None  # rises, but by less than 3 points
