"""``entropy_collapse``'s slow-fall rule and the reward's gain (issue 29): a policy that sharpens while its reward
grows is learning, and the rule stays quiet; but where the run logs a correctness score of the same samples beside
the reward (TRL's ``rewards/accuracy/mean``, verl's ``reward_extra/acc/mean``), the reward's gain counts as learning
only when that score gains too. A self-agreement reward (majority vote, self-consistency) or a judge pays for the
policy agreeing with itself: the paid reward climbs as the entropy falls, and the answers get no more right. The
ninth CPU pass's TRL `digitvote160` run (paid by digit-by-digit agreement among a prompt's six completions from step
160, accuracy beside it with weight 0) was found 30 steps after its labelled onset 185, by the fast-fall rule."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

FALL_AT, STEPS = 160, 300


def sharpening(rng: random.Random, accuracy_follows: bool, log_accuracy: bool = True) -> list:
    """TRL's keys: entropy around 1.8 (noise 0.08) falling by 0.006 a step from ``FALL_AT``, the paid reward around
    0.4 (a mean of 12 scores) climbing by 0.004 a step from there, the accuracy of the same samples flat at 0.4 or
    climbing with the reward."""
    out = []
    for step in range(1, STEPS + 1):
        t = max(0, step - FALL_AT)
        reward = 0.4 + 0.004 * t + rng.gauss(0, 0.05)
        metrics = {"entropy": 1.8 - 0.006 * t + rng.gauss(0, 0.08), "reward": reward}
        if log_accuracy:
            metrics["rewards/accuracy/mean"] = (reward if accuracy_follows else 0.4 + rng.gauss(0, 0.05))
        out.append((step, metrics))
    return out


def entropy_alerts(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.title) for f in found if f.detector == "entropy_collapse" and f.severity in ("warning", "critical")]


@pytest.mark.parametrize("seed", range(5))
def test_entropy_falling_while_only_the_paid_reward_climbs_is_found_near_the_fall(seed):
    """The entropy's 12-step mean is 2 noise units (0.16) and 12% (0.22) under 1.8 about 40 steps into the fall;
    with only the paid reward gaining, 6% (0.11) and 2 noise units of a 12-step mean count (about 25 steps in,
    test_health_entropy_paid_fall.py)."""
    hits = entropy_alerts(run(sharpening(random.Random(seed), accuracy_follows=False)))
    assert hits and FALL_AT + 15 <= hits[0][0] <= FALL_AT + 60, hits


@pytest.mark.parametrize("seed", range(5))
def test_entropy_falling_while_the_accuracy_climbs_with_the_reward_is_learning(seed):
    assert entropy_alerts(run(sharpening(random.Random(seed), accuracy_follows=True))) == []


@pytest.mark.parametrize("seed", range(5))
def test_entropy_falling_while_the_reward_climbs_and_no_accuracy_is_logged_is_learning(seed):
    """No score beside the reward: the reward's gain is all the run says about learning (unchanged)."""
    assert entropy_alerts(run(sharpening(random.Random(seed), accuracy_follows=False, log_accuracy=False))) == []


def test_a_self_agreement_reward_sharpening_the_policy_is_found_inside_the_window():
    """TRL, 2 prompts x 6, paid from step 160 by digit-by-digit agreement among a prompt's completions: entropy's
    10-step mean below its range for good from 185 (the label), the paid reward's medians 0.47 -> 0.62 -> 0.75,
    ``rewards/accuracy/mean`` 0.35-0.42 -> 0.29-0.33."""
    trace = real_run("entropy_collapse-llamas2-2prompt-6gen-digitvote160-lr3e-4-400", source="trl_cpu_settings6")
    hits = entropy_alerts(replay(trace))
    assert hits and 180 <= hits[0][0] <= 200, hits
