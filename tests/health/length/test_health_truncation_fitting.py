"""``truncation`` on a run whose ratio was high from the start (issue 29): a standing ratio (the limit short for the
model) is info, but once the share of answers that still end within the limit has halved it is a change during
training. The public Chaos-Economy TRL run (512-token cap, logged every 5 steps) cut 50-90% of its answers over steps
5-70 (median 80%), then 90% on every log from 75 (the label) and 95-100% from 90; the rule that a standing ratio
must rise 10 points first warned at 90, when the 3-log mean first passed 90.0%."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def truncation(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.severity) for f in found if f.detector == "truncation" and f.severity in ("warning", "critical")]


def test_the_chaos_economy_run_is_found_when_the_answers_that_fit_halve():
    trace = real_run("length_explosion-chaos-economy-grpo-200", source="trl_state_public3")
    hits = truncation(replay(trace))
    assert hits and 70 <= hits[0][0] <= 85, hits  # onset 75


def standing(level: float, wander: float, seed: int, steps: int = 300) -> list:
    """A large batch's clip ratio (not granular) standing at ``level`` from the first step, wandering +-``wander``,
    and the mean length near a 512 cap."""
    rng = random.Random(seed)
    out = []
    for step in range(1, steps + 1):
        clip = min(1.0, max(0.0, level + rng.uniform(-wander, wander)))
        out.append((step, {"response_length/clip_ratio": clip, "response_length/mean": 300 + 200 * clip,
                           "response_length/max": 512.0}))
    return out


@pytest.mark.parametrize("level, wander", [(0.8, 0.05), (0.9, 0.04), (0.95, 0.03), (0.6, 0.1)])
@pytest.mark.parametrize("seed", range(3))
def test_a_standing_ratio_that_only_wanders_stays_info(level, wander, seed):
    assert truncation(run(standing(level, wander, seed))) == []
