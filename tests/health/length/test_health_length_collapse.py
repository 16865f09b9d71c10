"""Responses collapsing in length or to one token (issue 29): in a real run the mean length went from 1.8k to 1
token in 10 steps and was found only through its side effects."""

from __future__ import annotations

import random

from rlcockpit.health import HealthMonitor


def lengths(shape, steps=60, seed=0):
    rng = random.Random(seed)
    return [(s, {"response_length/mean": shape(s, rng), "critic/score/mean": 0.5 + rng.gauss(0, 0.02)})
            for s in range(steps)]


def replay(trace):
    mon = HealthMonitor()
    return [f for step, m in trace for f in mon.observe(step, m)] + mon.close()


def test_length_falling_to_one_token_is_critical_within_a_few_steps():
    def shape(s, rng):
        if s < 30:
            return 1800 + rng.gauss(0, 100)
        return max(1.0, 1800 * (1 - (s - 30) / 10))
    found = [f for f in replay(lengths(shape)) if f.detector == "length_collapse"]
    assert [f.severity for f in found] == ["warning", "critical"]
    assert found[1].step <= 42 and found[1].step_start == found[0].step_start <= 38
    assert "response_length/mean at most 1 on the last 3 logged steps" in found[1].title


def test_trl_completions_that_become_empty_are_found_under_their_own_name():
    trace = [(s, {"completions/mean_length": 120.0 if s < 20 else 0.0, "reward": 0.3}) for s in range(30)]
    found = [f for f in replay(trace) if f.detector == "length_collapse"]
    assert found and found[0].severity == "critical" and "completions/mean_length" in found[0].title
    assert set(found[0].evidence["metrics"]) <= {"completions/mean_length", "reward"}


def test_answers_getting_more_concise_are_left_alone():
    def shape(s, rng):
        return 400 * (1 - 0.55 * min(s, 50) / 50) + rng.gauss(0, 15)  # 400 -> 180 tokens as it learns
    assert [f for f in replay(lengths(shape, 120)) if f.detector == "length_collapse"] == []
