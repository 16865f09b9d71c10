"""DAPO dynamic sampling as verl's DAPO trainer runs it: ``algorithm.filter_groups.metric`` picks the value the
groups are compared on, ``max_num_gen_batches`` bounds the generation batches (<= 0: no limit) and raises
past it, ``train/num_gen_batches`` counts them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlcockpit.algos import dynamic_sampling_mask
from rlcockpit.trainer.collect import DynamicSamplingExhausted, Experience
from rlcockpit.trainer.config import ConfigError, load_config, no_effect_table
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.observe.filter_metric import FilterMetricError, filter_metric_values, reward_extra_info


def _cfg(*extra: str):
    return load_config(preset="arith-grpo", overrides=["algorithm.filter_groups.enable=true", *extra])


def _exp(scores, extras, raw=None) -> Experience:
    n = len(scores)
    rows = [PromptRow(prompt="p", ground_truth="1", data_source="src") for _ in range(n)]
    return Experience(rows=rows, uids=np.repeat(np.arange(n // 2), 2), out=None, texts=[""] * n,
                      scores=torch.tensor(scores), extras=extras,
                      raw_scores=None if raw is None else torch.tensor(raw))


# two groups of two: group 0's score varies but its acc does not; group 1 the other way round
DICT_EXTRAS = [{"acc": 1.0, "pred": "3"}, {"acc": 1.0, "pred": "4"}, {"acc": 0.0, "pred": "x"}, {"acc": 1.0, "pred": "5"}]
SCORES = [0.9, 0.4, 0.5, 0.5]


def test_acc_metric_filters_on_acc_not_the_score():
    exp = _exp(SCORES, DICT_EXTRAS)
    keep_acc = dynamic_sampling_mask(filter_metric_values(_cfg("algorithm.filter_groups.metric=acc"), exp), exp.uids)
    keep_score = dynamic_sampling_mask(
        filter_metric_values(_cfg("algorithm.filter_groups.metric=seq_reward"), exp), exp.uids)
    assert keep_acc.tolist() == [False, False, True, True]
    assert keep_score.tolist() == [True, True, False, False]


def test_score_is_the_functions_score_before_the_overlong_penalty():
    # scores after the penalty are equal within group 0; the function's own scores are not
    exp = _exp([0.5, 0.5, 1.0, 0.0], DICT_EXTRAS, raw=[1.0, 0.5, 1.0, 0.0])
    assert filter_metric_values(_cfg("algorithm.filter_groups.metric=score"), exp).tolist() == [1.0, 0.5, 1.0, 0.0]
    for name in ("seq_reward", "reward", "seq_final_reward"):
        assert filter_metric_values(_cfg(f"algorithm.filter_groups.metric={name}"), exp).tolist() == [0.5, 0.5, 1.0, 0.0]
    # metric null: rlcockpit filters on seq_reward (verl refuses a null metric)
    assert filter_metric_values(_cfg(), exp).tolist() == [0.5, 0.5, 1.0, 0.0]


def test_float_reward_functions_give_acc_only_as_verl_reward_loop():
    assert reward_extra_info([1.0, 0.0], [None, {"acc": True}]) == [{"acc": 1.0}, {"acc": True, "score": 0.0}]
    exp = _exp(SCORES, [None] * 4)
    assert filter_metric_values(_cfg("algorithm.filter_groups.metric=acc"), exp).tolist() == pytest.approx(SCORES)
    with pytest.raises(FilterMetricError, match=r"metric='score' is not in the reward's output.*\['acc'\]"):
        filter_metric_values(_cfg("algorithm.filter_groups.metric=score"), exp)


def test_unknown_metric_names_the_key_and_the_keys_there_are():
    with pytest.raises(FilterMetricError) as err:
        filter_metric_values(_cfg("algorithm.filter_groups.metric=correct"), _exp(SCORES, DICT_EXTRAS))
    msg = str(err.value)
    assert "'correct'" in msg and "['acc', 'pred', 'score']" in msg
    with pytest.raises(FilterMetricError, match="response 0 .*non-numeric value '3'"):
        filter_metric_values(_cfg("algorithm.filter_groups.metric=pred"), _exp(SCORES, DICT_EXTRAS))


def test_bool_metric_and_rows_missing_it(capsys):
    extras = [{"ok": True}, {"ok": False}, None, {"ok": True}]  # row 2: a failed reward call
    values = filter_metric_values(_cfg("algorithm.filter_groups.metric=ok"), _exp([1.0, 0.0, 0.0, 1.0], extras))
    assert values.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert "1/4 responses lack it" in capsys.readouterr().out


def test_config_keys_as_verl():
    cfg = _cfg("algorithm.filter_groups.metric=acc")
    assert cfg.algorithm.filter_groups.metric == "acc"
    assert load_config(preset="arith-grpo").algorithm.filter_groups.max_num_gen_batches == 0  # verl's default
    assert not any("algorithm.filter_groups.metric" in keys for _, keys in no_effect_table(cfg))
    with pytest.raises(ConfigError, match="seq_final_reward with algorithm.use_kl_in_reward=true"):
        _cfg("algorithm.filter_groups.metric=seq_final_reward", "algorithm.use_kl_in_reward=true")


REWARD_FILE = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    # the score varies with the text, acc never does: metric=acc leaves no group with a signal
    right = solution_str.strip() == str(ground_truth)
    return {"score": 1.0 if right else (sum(map(ord, solution_str)) % 7) / 14.0, "acc": 1.0,
            "digits": float(solution_str.strip().isdigit())}
'''


@pytest.fixture
def dict_reward(tmp_path):
    path = tmp_path / "my_reward.py"
    path.write_text(REWARD_FILE)
    return [f"custom_reward_function.path={path}", "custom_reward_function.name=compute_score",
            "algorithm.filter_groups.enable=true", "trainer.test_freq=-1"]


@pytest.mark.slow
def test_metric_with_no_signal_raises_after_max_num_gen_batches(tiny_cfg, dict_reward):
    from rlcockpit.trainer.loop import train

    cfg = tiny_cfg(*dict_reward, "algorithm.filter_groups.metric=acc", "algorithm.filter_groups.max_num_gen_batches=2")
    with pytest.raises(DynamicSamplingExhausted, match="2 generation batches .*max_num_gen_batches=2.* kept 0 of"):
        train(cfg)


@pytest.mark.slow
def test_missing_metric_fails_naming_it(tiny_cfg, dict_reward):
    from rlcockpit.trainer.loop import train

    with pytest.raises(FilterMetricError, match="'correct' is not in the reward's output"):
        train(tiny_cfg(*dict_reward, "algorithm.filter_groups.metric=correct"))


@pytest.mark.slow
def test_score_metric_trains_and_logs_num_gen_batches(tiny_cfg, dict_reward, tmp_path):
    import rlcockpit
    from rlcockpit.trainer.loop import train

    result = train(tiny_cfg(*dict_reward, "algorithm.filter_groups.metric=score"))
    assert result.status == "finished"
    hist = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()
    assert hist["train/num_gen_batches"].dropna().ge(1).all() and len(hist["train/num_gen_batches"].dropna()) == 2
