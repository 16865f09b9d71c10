"""A grader that fails rather than a policy that does (issue 29, h-reward13): ``reward_cliff``'s *reward calls
failing* and *parted from its task score both ways* rules.

- ``rlcockpit_trainer_cpu13``'s two raising graders (a remote grader's time-out, scored 0 and counted by the trainer in
  ``reward/failures``): 0 -> 100% of the samples over 150-260 (labelled collapse at 153, the first failure; the
  counter grows again at 158) and 30% from 200 (labelled collapse at 200; 8 failures at 200, 13 at 201). The paid
  score's 10-step mean leaves its range only at 165 / 205: the cliff test warned at 169 and 209.
- ``rlcockpit_trainer_cpu13``'s memoised reward (from 180 every response to a question gets the score of the first
  one graded: labelled collapse at 180): ``critic/score/mean`` equalled ``reward_extra/acc/mean`` on every step
  before and parts from it at 183, above it on 3 and under it on 3 of 188's 6 paired steps, 0.1 apart on a level of
  0.39, while its own level does not move (25-step medians 0.33-0.42 both sides): the first alert was at 300.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

SRC = "rlcockpit_trainer_cpu13"


def _titled(found, words: str) -> list[int]:
    return [f.step for f in found if f.detector == "reward_cliff" and words in f.title]


def test_a_grader_raising_for_a_growing_share_warns_within_its_window():
    found = replay(real_run("collapse-gpt2s9-4prompt-3sample-graderraises0-100pct-150-260-350-val12", SRC),
                   samples=False)
    failing = [f for f in found if f.detector == "reward_cliff" and "Reward calls failing" in f.title]
    assert failing and 148 <= failing[0].step <= 168 and failing[0].step_start == 153, [f.step for f in failing]


def test_a_grader_raising_on_30pct_from_200_warns_at_once():
    found = replay(real_run("collapse-llamas9-3prompt-6sample-graderraises30pct-from200-maxfail05-350-val18", SRC),
                   samples=False)
    steps = _titled(found, "Reward calls failing")
    assert steps and 200 <= steps[0] <= 203, steps


def test_a_reward_memoised_by_question_warns_that_it_parted_from_its_accuracy():
    found = replay(real_run("collapse-llamas9-4prompt-3sample-rewardmemo-from180-350-val12", SRC), samples=False)
    steps = _titled(found, "Reward parted from reward_extra/acc/mean")
    assert steps and 175 <= steps[0] <= 195, steps


def _stream(failures: dict[int, float], reward=None, seed: int = 3):
    """300 steps of a 0/1 reward over 48 answers (right with probability 0.4), ``reward_extra/acc/mean`` beside it;
    ``reward/failures`` the trainer's running count, ``failures`` {step: count from that step}; ``reward(s, acc)``
    the paid score (default: the accuracy)."""
    rng = random.Random(seed)
    out, count = [], 0.0
    for s in range(1, 301):
        count = failures.get(s, count)
        acc = sum(rng.random() < 0.4 for _ in range(48)) / 48
        paid = acc if reward is None else reward(s, acc, rng)
        out.append((s, {"critic/score/mean": paid, "reward_extra/acc/mean": acc, "reward/failures": count}))
    return out


def test_one_failed_call_is_a_transient_and_a_counter_restarted_by_a_resume_is_no_new_failure():
    assert _titled(run(_stream({120: 1.0})), "Reward calls failing") == []
    # 3 failures before a resume at 200 restarts the count at 0, then the 3 again by 260: growth at 100, 260
    assert _titled(run(_stream({100: 3.0, 200: 0.0, 260: 3.0})), "Reward calls failing") == []
    assert _titled(run(_stream({100: 1.0, 104: 2.0})), "Reward calls failing") == [104]


def test_a_bonus_on_top_of_the_score_or_a_small_noise_does_not_part_it_both_ways():
    def bonus(s, acc, rng):  # a format bonus paid from 150: the reward only rises over its score
        return acc + (0.1 * (rng.random() < 0.5) if s >= 150 else 0.0)

    def noise(s, acc, rng):  # a small noise on the paid score from 150: both ways, 0.01 apart on a level of 0.4
        return acc + (rng.gauss(0.0, 0.012) if s >= 150 else 0.0)

    def changed(s, acc, rng):  # from 150 the reward scores 12 other answers: both ways, ~0.13 apart
        return sum(rng.random() < 0.4 for _ in range(12)) / 12 if s >= 150 else acc

    assert _titled(run(_stream({}, bonus)), "Reward parted") == []
    assert _titled(run(_stream({}, noise)), "Reward parted") == []
    steps = _titled(run(_stream({}, changed)), "Reward parted")
    assert steps and 155 <= steps[0] <= 165, steps
