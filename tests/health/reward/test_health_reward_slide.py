"""A paid reward sliding off the task score it equalled while that score holds (issue 29, h-cliff).

``reward_cliff``'s *fell under its task score* rule asked for a gap of ``drop_warn`` (20%) of the reward's level and
``z_under`` noise units before it spoke. A reward that slides off its score slowly (a strict grader rolled out to a
growing share of the samples, a clip bound shrinking) leaves its own range first and reaches that gap later:

- ``rlcockpit_trainer_cpu12``'s strictgraderrollout run (an exact-match grader from 0 to 100% of the samples over
  150-300, labelled collapse at 178): the reward's 10-step mean 3 noise units under its level from 185 with a gap of
  0.077 (19% of the level) and the accuracy flat; the old gap bar passed at 195, 17 steps late.
- ``trl_cpu_settings12``'s rewardclipshrinks run (the paid reward clipped to a bound 1 -> 0.1 over 120-270, labelled
  collapse at 215): the reward 3 units down from 224 with a gap of 0.065 (17%), 84% of its fall; warned at 232.

Where the score held (the gap is three quarters of the reward's fall or more) a gap of a tenth of the level is
enough. A run whose score fell with its reward keeps the old bar: ``rlcockpit_trainer_cpu11``'s Qwen2 run with the
same kind of clip (labelled healthy, the clip hardly bit) has its reward 3 units down at 400 with a gap of 19% of the
level, but the accuracy fell too (the gap 57-64% of the reward's fall): no warning.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def _fell(found):
    return [f.step for f in found if f.detector == "reward_cliff" and "fell under" in f.title]


def test_a_strict_grader_rolled_out_to_more_samples_warns_within_its_window():
    found = replay(real_run("collapse-gpt2s8-2prompt-8sample-strictgraderrollout0-100pct-150-300-350-val15",
                            "rlcockpit_trainer_cpu12"), samples=False)
    fell = _fell(found)
    assert fell and 173 <= fell[0] <= 193, fell


def test_a_shrinking_clip_on_the_paid_reward_warns_within_its_window():
    found = replay(real_run("collapse-gpt2s8-4prompt-3gen-rewardclipshrinks1-01-120-270-350", "trl_cpu_settings12"))
    fell = _fell(found)
    assert fell and 210 <= fell[0] <= 230, fell


def test_a_healthy_clip_that_hardly_bit_while_the_accuracy_fell_too_does_not_warn():
    found = replay(real_run("healthy-qwen2s7-2prompt-6sample-rewardclip1to03-150-300-450-val25",
                            "rlcockpit_trainer_cpu11"), samples=False)
    assert _fell(found) == []


def _slide(gap: float, score_fall: float, seed: int = 5):
    """144 answers a step right with probability 0.6 (``rewards/accuracy/mean`` their share), ``reward`` equal to it
    to step 150. From 150 the accuracy's probability falls by ``score_fall`` x (s - 150) / 150 and the reward is
    the accuracy less ``gap`` x (s - 150) / 150 (a ramp; at least 0)."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 301):
        ramp = max(0.0, (s - 150) / 150)
        acc = sum(rng.random() < 0.6 - score_fall * ramp for _ in range(144)) / 144
        reward = max(0.0, acc - gap * ramp)
        out.append((s, {"reward": reward, "rewards/accuracy/mean": acc, "reward_std": 0.3}))
    return out


def test_a_reward_sliding_off_a_flat_score_warns_before_the_gap_is_a_fifth_of_the_level():
    # the gap is 0.3 x (s - 150) / 150: 3 noise units of the reward's 10-step mean (0.039) at ~170 + 5, a fifth of
    # the level (0.12) only at ~210 + 5
    fell = _fell(run(_slide(0.3, 0.0)))
    assert fell and 165 <= fell[0] <= 195, fell


def test_a_small_gap_while_the_score_falls_with_the_reward_does_not_warn():
    # the policy gets worse (accuracy 0.6 -> 0.4) and the reward pays a little less on top (up to 0.06)
    assert _fell(run(_slide(0.06, 0.2))) == []
