"""Numbers a person can check in one look (issue 29: "16910127745x its recent median 0" must never appear). A ratio
is stated with the reference it was taken against; where that reference was floored above the run's own level (a
series that is 0 or constant before the event), the title names the floor and the level, and a loss whose warm-up
did not move at all has no swings to judge against: its detector waits for a window that moves."""

from __future__ import annotations

import random
import re

from health_corpus_runs import replay_stream as replay

RATIO = re.compile(r"([0-9][0-9.,]*)x\b")



def titles(found, detector):
    return [f.title for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def zero_then(key: str, later, steps: int = 80, start: int = 30):
    rng = random.Random(0)
    return [(s, {key: 0.0 if s < start else later(rng)}) for s in range(1, steps + 1)]


def test_a_mismatch_that_was_exactly_zero_is_judged_against_a_floor_the_title_names():
    """verl's training/rollout_probs_diff_mean is exactly 0 where rollout and trainer agree bit for bit; a weight-sync
    bug makes it jump. Not "(1884.0x)" or "3564x its earlier level" of a 0."""
    found = titles(replay(zero_then("training/rollout_probs_diff_mean", lambda r: 1.5 + r.random())), "rollout_mismatch")
    assert found
    for t in found:
        assert "0.001, the floor of the reference: its earlier level 0 is below it" in t, t


def test_a_kl_spike_after_a_kl_of_zero_does_not_call_the_floor_its_median():
    found = titles(replay(zero_then("actor/kl_loss", lambda r: 5.0 + r.random())), "kl_spike")
    assert found
    for t in found:
        assert "its median 0.01" not in t and "its median 0 over the 20 steps before is below it" in t, t


def test_a_kl_rising_from_zero_states_a_ratio_to_the_floor_not_to_zero():
    found = titles(replay(zero_then("actor/kl_loss", lambda r: 2.5 + r.random())), "kl_rising")
    assert found
    for t in found:
        assert all(float(m.replace(",", "")) < 1000 for m in RATIO.findall(t)), t
        assert "the floor of the reference: its first median 0 is below it" in t, t


def constant_then_noisy(swing: float, warm_noise: float = 0.0):
    rng = random.Random(1)
    return [(s, {"critic/vf_loss": 1.0, "actor/pg_loss": 1.0 + (rng.gauss(0, warm_noise) if s < 40 else
                                                             rng.gauss(0, swing))}) for s in range(1, 121)]


def test_a_loss_constant_through_its_warm_up_has_no_swings_to_judge_against():
    """A loss bounded away from 0 that is exactly constant for its first steps (a frozen policy, a loss logged before
    the first update), then moves as losses do: was "step-to-step swings 226994170987.0x the warm-up level"."""
    assert titles(replay(constant_then_noisy(0.2)), "loss_oscillation") == []


def test_a_loss_oscillating_far_beyond_its_warm_up_swings_says_both_sizes():
    found = titles(replay(constant_then_noisy(0.5, warm_noise=0.01)), "loss_oscillation")
    assert found
    assert re.search(r"step-to-step swings of 0\.\d+ over the last 30 logged steps, [0-9.]+x their 0\.0\d+ at warm-up end",
                     found[0]), found[0]
