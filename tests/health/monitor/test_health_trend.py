"""Slow failures found by their trend against the run's early baseline (issue 29): reward hacking as a divergence
between the reward and a held-out score (a learned reward model exploited; a length bonus), truncation creeping up
from a low level, and memory growing in step with the response length. Each is flagged near its onset (the bench's
rule: a responsible warning within [onset - 5, onset + 15]) and stays quiet on the matching healthy run."""

from __future__ import annotations

import math
import random
import statistics

from rlcockpit.health import HealthMonitor

VAL = "val-core/openai/gsm8k/acc/mean@1"
ONSET = 100


def run(kind: str, seed: int, steps: int = 220, config: dict | None = None) -> list:
    """Every warning/critical of a verl-shaped run: a reward that learns along a saturating curve, validation every
    5 steps, and from ``ONSET`` on the failure ``kind`` (or nothing, for ``healthy``)."""
    rng = random.Random(seed)
    mon = HealthMonitor(run_config={"data": {"max_response_length": 4096}, **(config or {})})
    found = []
    for s in range(steps):
        t = max(0, s - ONSET)
        learn = 0.3 + 0.25 * (1 - math.exp(-min(s, ONSET) / 60))  # learning, then a plateau from the onset on
        reward, acc, length, clip, mem = learn, learn, 400.0, 0.005, 25.0
        if kind == "rm_hack":  # the reward model is exploited: its score climbs, held-out accuracy falls
            reward, acc = learn + 0.006 * t, learn - 0.003 * t
        elif kind == "length_bonus":  # the reward pays for length: reward and length climb, accuracy stays
            reward, length = learn + 0.004 * t, 400.0 + 8.0 * t
        elif kind == "truncation":
            clip = 0.005 + 0.002 * t
        elif kind == "memory_length":
            length = 400.0 + 8.0 * t
            mem = 20.0 + 0.0125 * length
        elif kind == "reasoning":  # healthy: answers lengthen and accuracy rises with the reward
            reward = acc = learn + 0.002 * t
            length = 400.0 + 4.0 * t
        m = {"critic/score/mean": reward + rng.gauss(0, 0.01),
             "response_length/mean": length * rng.lognormvariate(0, 0.02),
             "response_length/clip_ratio": max(0.0, clip + rng.gauss(0, 0.002)),
             "perf/max_memory_allocated_gb": mem * rng.lognormvariate(0, 0.003),
             "actor/entropy": 0.6 * rng.lognormvariate(0, 0.03), "actor/kl_loss": 0.002 * rng.lognormvariate(0, 0.2)}
        if s % 5 == 0:
            m[VAL] = acc + rng.gauss(0, 0.008)
        found += [f for f in mon.observe(s, m) if f.severity in ("warning", "critical")]
    return found


def delays(kind: str, responsible: set[str], seeds: int = 6) -> list[int | None]:
    """Per seed, the delay of the first responsible alert in [onset - 5, onset + 15] (None: missed)."""
    out: list[int | None] = []
    for seed in range(seeds):
        steps = [f.step for f in run(kind, seed) if f.detector in responsible and ONSET - 5 <= f.step <= ONSET + 15]
        out.append(steps[0] - ONSET if steps else None)
    return out


def test_a_reward_model_exploited_shows_as_reward_up_while_validation_falls_near_the_onset():
    d = delays("rm_hack", {"reward_hacking", "reward_divergence"})
    assert all(x is not None for x in d), d  # validation every 5 steps: the third point after the onset at the latest
    finding = next(f for f in run("rm_hack", 0) if f.detector == "reward_divergence")
    assert VAL in finding.title and "critic/score/mean" in finding.title and "best" in finding.title
    assert finding.step_start >= ONSET - 10  # dated from where the held-out score peaked, not from warm-up


def test_a_length_bonus_shows_as_reward_rising_with_length_but_not_accuracy():
    d = delays("length_bonus", {"reward_hacking", "reward_divergence"})
    assert sum(x is not None for x in d) >= 5, d
    finding = next(f for f in run("length_bonus", 0) if f.detector == "reward_divergence")
    assert "response length" in finding.title and "response_length/mean" in finding.title and VAL in finding.title
    changes = {k for a in finding.actions for k in a.changes}
    assert "data.max_response_length" in changes or "reward.overlong_buffer.enable" in changes


def test_a_reward_paying_for_length_gets_its_length_bonus_turned_off_first():
    """A reward function with a length-bonus argument: the fix removes the pay at its source (an overlong penalty
    on top only moves where the paid length stops: the arith-hacking preset's answers settled at 10-14 of 16
    tokens under it, and its verify found that fix not confirmed)."""
    reward = {"reward": {"name": "arith_lenient_length_bonus", "kwargs": {"length_bonus": 0.05, "max_bonus": 0.6}}}
    finding = next(f for f in run("length_bonus", 0, config=reward) if f.detector == "reward_divergence")
    assert finding.actions[0].changes == {"reward.kwargs.length_bonus": 0.0}
    assert finding.actions[0].overrides == ["reward.kwargs.length_bonus=0"]


def test_truncation_creeping_from_a_low_level_is_found_within_fifteen_steps_and_dated_from_its_start():
    d = delays("truncation", {"truncation"})
    assert all(x is not None for x in d) and statistics.median(d) <= 12, d
    finding = next(f for f in run("truncation", 0) if f.detector == "truncation")
    assert "creeping" in finding.title and "first 20 logged steps" in finding.title
    assert ONSET - 5 <= finding.step_start <= ONSET + 10


def test_memory_growing_with_the_response_length_is_named_length_driven_with_length_and_batch_advice():
    d = delays("memory_length", {"length_memory"})
    assert all(x is not None for x in d) and statistics.median(d) <= 12, d
    finding = next(f for f in run("memory_length", 0) if f.detector == "length_memory")
    assert "length-driven" in finding.title and "perf/max_memory_allocated_gb" in finding.title
    assert finding.evidence["values"]["correlation"] >= 0.7
    assert "data.max_response_length" in {k for a in finding.actions for k in a.changes}
    assert any("micro-batch" in a.title.lower() for a in finding.actions)


def test_healthy_runs_stay_quiet():
    for kind in ("healthy", "reasoning"):
        alerts = [f for seed in range(6) for f in run(kind, seed)]
        assert not [f for f in alerts if f.severity == "critical"], [f.title for f in alerts]
        assert len(alerts) <= 3, [(f.detector, f.title) for f in alerts]  # <= 1 warning per healthy run on average


def test_trl_names_are_cited_as_logged_and_a_run_without_held_out_scores_gets_no_divergence():
    """TRL logs ``reward``, ``completions/mean_length`` and a second reward ``rewards/accuracy/mean``: the finding
    speaks those names. Without any held-out score or second reward there is nothing to diverge from."""
    rng = random.Random(3)
    with_acc, without = HealthMonitor(run_config={}), HealthMonitor(run_config={})
    found, quiet = [], []
    for s in range(200):
        t = max(0, s - ONSET)
        m = {"reward": 1.0 + 0.01 * t + rng.gauss(0, 0.01), "completions/mean_length": 300 * rng.lognormvariate(0, 0.02)}
        quiet += [f for f in without.observe(s, dict(m)) if f.detector == "reward_divergence"]
        m["rewards/accuracy/mean"] = 0.6 - 0.004 * t + rng.gauss(0, 0.01)
        found += [f for f in with_acc.observe(s, m) if f.detector == "reward_divergence"]
    assert not quiet
    first = found[0]
    assert ONSET <= first.step <= ONSET + 15
    assert "rewards/accuracy/mean" in first.title and "reward rose" in first.title
    assert "critic/score" not in first.title and set(first.evidence["metrics"]) <= {
        "reward", "completions/mean_length", "rewards/accuracy/mean"}


def test_drift_dates_a_drift_from_where_it_took_off_not_from_a_lingering_wobble():
    from rlcockpit.health.base import Drift

    rng = random.Random(0)
    d = Drift([rng.gauss(0.0, 1.0) for _ in range(20)], k=0.5, h=8.0, rel_floor=0.0, abs_floor=1e-9)
    alarms = []
    for s in range(20, 200):
        x = rng.gauss(0.0, 1.0) + (0.3 * (s - 120) if s >= 120 else 0.2)  # a small offset lingers, then a drift
        if d.update(x, s):
            alarms.append(s)
    assert alarms and 120 <= alarms[0] <= 135
    assert 110 <= d.start <= 130 and abs(d.level) < 1.0 and 0.5 < d.noise < 2.0
