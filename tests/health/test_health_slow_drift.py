"""Slow failures found by their trend against the run's early level (issue 29): a train/rollout log-prob mismatch
that grows a little every step was flagged 30-50 steps after it began; a one-sided CUSUM finds it near its onset
and dates the finding from where the drift began."""

from __future__ import annotations

import random
import statistics

from rlcockpit.health import HealthMonitor

KEY = "training/rollout_probs_diff_mean"


def mismatch_run(seed: int, slope: float, onset: int = 100, steps: int = 260) -> tuple[int | None, int, int | None]:
    """(delay of the first warning after the onset, warnings before onset - 5, the first finding's step_start)."""
    rng = random.Random(seed)
    mon = HealthMonitor()
    delay, early, start = None, 0, None
    for s in range(steps):
        level = 0.002 * (1 + slope * max(0, s - onset))
        for f in mon.observe(s, {KEY: level * rng.lognormvariate(0, 0.15)}):
            if f.detector != "rollout_mismatch" or f.severity == "info":
                continue
            if s < onset - 5:
                early += 1
            elif delay is None:
                delay, start = s - onset, f.step_start
    return delay, early, start


def test_a_mismatch_drifting_up_two_percent_a_step_is_found_within_twenty_steps():
    runs = [mismatch_run(seed, 0.02) for seed in range(12)]
    delays = [d for d, _e, _s in runs if d is not None]
    assert len(delays) == 12 and statistics.median(delays) <= 20  # 30 steps on the ratio rule alone
    assert sum(e for _d, e, _s in runs) <= 1
    starts = [s for _d, _e, s in runs]
    assert statistics.median(starts) <= 110  # dated from where the drift began, not where it crossed a bar


def test_a_flat_noisy_mismatch_stays_quiet():
    alarms = [mismatch_run(seed, 0.0) for seed in range(12)]
    assert sum(e for _d, e, _s in alarms) + sum(1 for d, _e, _s in alarms if d is not None) <= 1
