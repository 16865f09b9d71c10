"""Low GPU utilisation that is there from step 1 (issue 29): no healthy level of the run's own exists to compare
with, so absolute bounds decide, and between them the ``timing_s/*`` split of the step: below the alert bound
(50%) it is a warning whatever the split; between it and the healthy level (70%) only when the split shows the
GPU waiting on the host (time outside every GPU phase), not when generation fills the step."""

from __future__ import annotations

import random

from rlcockpit.health import HealthMonitor


def run(util: float, gen: float, update: float, steps: int = 30) -> list:
    rng = random.Random(1)
    mon = HealthMonitor()
    found = []
    for s in range(1, steps + 1):
        step_s = 10.0 * rng.uniform(0.97, 1.03)
        found += mon.observe(s, {"system/gpu/0/utilization": util + rng.gauss(0, 2),
                                 "timing_s/gen": gen * step_s / 10, "timing_s/update_actor": update * step_s / 10,
                                 "timing_s/step": step_s, "perf/throughput": 2e4 / step_s})
    return [f for f in found if f.detector == "gpu_utilization" and f.severity != "info"]


def test_utilisation_below_the_alert_bound_from_step_1_is_a_warning_near_the_start():
    found = run(util=35.0, gen=7.0, update=2.5)
    assert found and found[0].step <= 4 and "below the 50% floor" in found[0].title


def test_middling_utilisation_with_the_step_spent_on_the_host_is_a_warning_from_the_start():
    found = run(util=60.0, gen=3.0, update=1.5)  # half the step outside any GPU phase
    assert found and found[0].step <= 4
    assert "of the step is host time" in found[0].title and "data-bound" in found[0].title


def test_middling_utilisation_with_generation_filling_the_step_is_left_alone():
    assert run(util=60.0, gen=7.0, update=2.5) == []
