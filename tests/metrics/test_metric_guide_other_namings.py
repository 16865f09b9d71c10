"""Reward, correctness, perplexity and length names of trainers that are not verl resolve to the guide entries
whose meaning they have (issue 29): a hand-written GRPO loop, transformers/TRL eval copies and TRL before
``rewards/<fn>/mean``, the Tinker cookbook, OpenRLHF's eval names and NeMo-RL's validation names."""

from __future__ import annotations

import pytest

from rlcockpit.metrics import lookup, match


@pytest.mark.parametrize(("name", "canonical"), [
    ("train_reward", "critic/score/mean"),  # hand-written loops
    ("train_reward_std", "critic/score/std"),
    ("completion_tokens", "response_length/mean"),
    ("reward/total", "critic/score/mean"),  # Tinker cookbook, its env/all/ prefix and test set
    ("env/all/reward/total", "critic/score/mean"),
    ("env/all/ac_tokens_per_turn", "response_length/mean"),
    ("env/all/correct", "reward_extra/correct/mean"),
    ("test/env/all/correct", "eval/correct"),
    ("test/env/all/reward/total", "eval/reward/total"),
    ("rewards/correctness_reward_func", "critic/score/correctness_reward_func/mean"),  # TRL < 0.14
    ("reward/format", "critic/score/format/mean"),  # a reward/ section of components
    ("reward/max", "critic/score/max"),
    ("eval_rewards/accuracy/mean", "eval/rewards/accuracy/mean"),  # transformers' eval_ copies of TRL keys
    ("eval_openai_gsm8k_pass1", "eval/openai_gsm8k_pass1"),  # OpenRLHF
    ("validation/accuracy", "eval/accuracy"),  # NeMo-RL
    ("eval_perplexity", "eval/perplexity"),
])
def test_other_trainers_names_resolve_to_the_entry_they_mean(name, canonical):
    m = match(name)
    assert m is not None and m.canonical == canonical, (name, m)


def test_perplexity_of_evaluation_samples_is_a_quality_measure_where_lower_is_better():
    info = lookup("eval_perplexity")
    assert info.direction == "lower" and info.category == "validation"
    assert info.thresholds["divergence_rise_ratio"] > 1.0
    assert lookup("eval_reward").direction == "higher"
