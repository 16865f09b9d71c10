"""``reward_cliff`` on real runs (issue 29, fourteenth pass, branch h-rewardfall):

- a drop under way is judged against the reference frozen where it began, not against the EMA that opened it: the
  EMA follows the drop down and its deviation grows with it, so two low steps later it no longer called the reward
  low and the drop was forgotten (``rlcockpit_trainer_cpu9`` shuffledlabels200: the paid score 0.44 -> 0.19-0.25 from
  step 202, no alert);
- the reference's noise is at least the sampling noise of a mean of 0/1 scores, and the mean of the last few rewards
  counts as down only with their median: a 1-prompt x 6-completion reward that dips for four observations and comes
  back is that noise (``trl_cpu_settings6`` healthy GSPO; a reward over 128 answers 0.17 -> 0.117 for four steps,
  back at 0.2 on the fifth, was a warning and a critical on ``tinker_jsonl_public2`` llama3b llmjudge, step 14);
- the warm-up test's scale (the range of individual rewards) is at least sqrt(2) x the largest logged reward spread
  when no max/min is logged: one right answer of 16 at the first step is no level to fall from
  (``trl_state_public14`` finance-poison, a reward 0 at 84 of 100 steps).
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def _cliff(suffix: str, source: str) -> list[tuple[int, str]]:
    return [(f.step, f.severity) for f in replay(real_run(suffix, source))
            if f.detector == "reward_cliff" and f.severity in ("warning", "critical")]


def test_shuffled_labels_from_step_200_are_a_reward_drop_near_the_onset():
    trace = real_run("llamas5-4prompt-4sample-shuffledlabels200-constlr1e-4-400-val20", "rlcockpit_trainer_cpu9")
    found = [(f.step, f.step_start) for f in replay(trace) if f.detector == "reward_cliff" and f.severity == "warning"]
    assert found, "the paid score fell 0.44 -> 0.2 at step 202 and stayed there: no reward_cliff warning"
    step, start = found[0]
    assert trace["onset"] - 5 <= start <= step <= trace["onset"] + 15, found


def test_a_small_group_reward_that_dips_and_comes_back_is_no_cliff():
    assert _cliff("llamas2-1prompt-6gen-gspo-iter2-delta15-400-log2", "trl_cpu_settings6") == []


def test_a_sparse_reward_never_earned_is_no_cliff_at_the_start():
    assert _cliff("healthy-finance-poison-grpo-4x4-100", "trl_state_public14") == []


def test_a_dip_of_seven_answers_of_128_that_comes_back_is_no_cliff():
    assert _cliff("leetcode-llama3b-medium-llmjudge", "tinker_jsonl_public2") == []
