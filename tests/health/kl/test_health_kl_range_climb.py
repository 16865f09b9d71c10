"""``kl_rising``: a KL that left its range and kept climbing is critical (issue 29, branch h-lrramp).

The range rule warns once the KL's trimmed mean has left its own range for good; a collapse's KL does not settle at
its new level, it keeps climbing. TRL's Dr.GRPO run with the learning rate ramped 1x -> 35x from step 201 (onset
218, the label): the range warning came at 206, before the window [213, 233], and the accelerating-rise rule's
critical never held 4 checks (a KL climbing 0.35 -> 1.4 -> 2.2 at a steady pace is no acceleration). The critical now
comes when the trimmed mean is ``range_ratio`` x the level it was warned at, on ``range_hold`` checks in a row: at
220, inside the window. A KL that leaves its range and settles at its new level stays a warning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def kl_alerts(found: list, severity: str) -> list[int]:
    return [f.step for f in found if f.detector == "kl_rising" and f.severity == severity]


def test_the_drgrpo_lr_ramp_is_critical_inside_its_window():
    found = replay(real_run("collapse-qwen2-2prompt-drgrpo-gradacc2-lrramp100-400", source="trl_cpu_settings5"))
    assert kl_alerts(found, "warning")[:1] == [206]  # the range warning: before the window, as on main
    crit = kl_alerts(found, "critical")
    assert crit and 213 <= crit[0] <= 233, crit  # onset 218
    first = next(f for f in found if f.detector == "kl_rising" and f.severity == "critical")
    assert "still climbing after it left its range" in first.title and first.step_start == 206 - 4


def kl_stream(after, at: int = 240, steps: int = 330, seed: int = 0):
    """A small batch's KL: log-normal noise (a factor of ~1.5 per step) around 0.04 (climbing from ~0 over the first
    80 steps), then ``after(step - at)`` x that from step ``at`` on."""
    rng = np.random.default_rng(seed)
    for step in range(1, steps + 1):
        level = 0.04 * min(1.0, step / 80) * (after(step - at) if step >= at else 1.0)
        yield step, {"actor/kl_loss": max(level, 1e-4) * math.exp(0.4 * rng.standard_normal())}


@pytest.mark.parametrize("seed", range(6))
def test_a_kl_that_keeps_climbing_after_it_left_its_range_is_critical(seed):
    """The KL climbs at a steady pace from step 240 (+0.4 x its level a step: 5x by 250, 13x by 270): warned as it
    leaves its range, then critical within 50 steps. Main: the warning only (in log units the climb slows, so the
    accelerating-rise rule never holds)."""
    mon = HealthMonitor()
    found = [f for step, m in kl_stream(lambda t: 1.0 + 0.4 * t, seed=seed) for f in mon.observe(step, m)]
    warn, crit = kl_alerts(found, "warning"), kl_alerts(found, "critical")
    assert warn and crit and warn[0] < crit[0] <= 290, (warn, crit)


@pytest.mark.parametrize("seed", range(6))
def test_a_kl_that_settles_four_times_higher_stays_a_warning(seed):
    mon = HealthMonitor()
    found = [f for step, m in kl_stream(lambda t: 4.0, seed=seed) for f in mon.observe(step, m)]
    assert kl_alerts(found, "warning") and kl_alerts(found, "critical") == [], seed
