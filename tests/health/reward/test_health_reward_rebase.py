"""``reward_hacking`` after the reward was changed mid-run (issue 29): the reward's level is re-measured after a
change point downwards, so a rise is judged from where the reward now stands. The fourth CPU pass's `nines` run
(our trainer: from step 200 the training reward pays half the task's credit plus a bonus per '9') fell from 0.375 to
0.23 at the switch, climbed back from 264 and ran its answers to the length limit from 310 (the label); the
detector, judging the rise against the warm-up's 0.375, warned at 350, 40 steps late."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

SWITCH, HACK, STEPS = 200, 300, 360


def switched(rng: random.Random, climbs: bool) -> list:
    """verl's keys, 1 prompt x 8: a reward that is a mean of 8 0/1 scores at 0.4, then (a new reward function from
    ``SWITCH``) at 0.2; from ``HACK``, if ``climbs``, the policy writes to the length limit (clip ratio 0 -> 0.5) and
    the new reward climbs to 0.45, barely past the old level."""
    out = []
    for step in range(1, STEPS + 1):
        hacking = climbs and step >= HACK
        p = 0.4 if step < SWITCH else 0.45 if hacking else 0.2
        clip = sum(rng.random() < (0.5 if hacking else 0.0) for _ in range(8)) / 8
        out.append((step, {"critic/score/mean": sum(rng.random() < p for _ in range(8)) / 8,
                           "response_length/clip_ratio": clip, "response_length/mean": 3 + 5 * clip}))
    return out


def hacking(found: list) -> list[tuple[int, str, str]]:
    return [(f.step, f.severity, f.title) for f in found
            if f.detector == "reward_hacking" and f.severity in ("warning", "critical")]


@pytest.mark.parametrize("seed", range(6))
def test_a_new_reward_climbing_with_answers_at_the_limit_is_found_from_its_new_level(seed):
    hits = hacking(run(switched(random.Random(seed), climbs=True)))
    assert hits and HACK - 5 <= hits[0][0] <= HACK + 15, hits
    assert "the reward's level re-measured from step" in hits[0][2], hits


@pytest.mark.parametrize("seed", range(6))
def test_a_reward_switched_to_a_lower_level_that_stays_there_is_no_hacking(seed):
    assert hacking(run(switched(random.Random(seed), climbs=False))) == []


def test_the_nines_switch_is_found_where_the_answers_reach_the_limit():
    trace = real_run("reward_hacking-gpt2-1prompt-nines-lr3e-4-450-val10", source="rlcockpit_trainer_cpu2")
    hits = hacking(replay(trace))
    assert hits and 305 <= hits[0][0] <= 325, hits
