"""The per-response value DAPO's dynamic sampling groups on: ``algorithm.filter_groups.metric``.

verl's DAPO trainer (recipe/dapo) keeps a prompt group when the chosen metric's std over its responses is
> 0. The metric is one of

* ``seq_reward``: the sequence score (verl: ``token_level_scores.sum(-1)``; it includes DAPO's overlong
  penalty, which verl's DAPO reward manager adds to the score). verl 0.9's V1 trainer calls the same value
  ``reward`` (the canonical pre-KL reward); both names are accepted.
* ``seq_final_reward``: the reward after the in-reward KL penalty (``token_level_rewards.sum(-1)``). Without
  ``algorithm.use_kl_in_reward`` it equals ``seq_reward``; with it, the penalty needs reference log-probs that
  exist only after filtering, so the combination is refused at config time (verl's recipe fails on it too).
* any key of ``reward_extra_info`` as verl 0.9's reward loop builds it per response: a reward function that
  returns a dict contributes all its keys, ``score`` included (before the overlong penalty); one that returns
  a float contributes ``acc`` = that float. So ``acc`` works for every reward function and ``score`` only for
  dict-returning ones, as in verl.

``metric: null`` with filtering enabled is an error in verl (0.9's V1 trainer says so; the recipe raises a
KeyError); rlcockpit filters on ``seq_reward`` then, which is what DAPO's paper describes.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch

SCORE_METRICS = ("seq_reward", "reward", "seq_final_reward")  # the sequence score itself, not reward_extra_info
FILTER_METRICS = ("acc", "score", *SCORE_METRICS)  # the names verl documents; any reward_extra_info key works too


class FilterMetricError(ValueError):
    """The configured ``algorithm.filter_groups.metric`` is not in the reward's output."""


def reward_extra_info(raw_scores: list[float], extras: list[Any]) -> list[dict[str, Any]]:
    """Per response, the ``reward_extra_info`` verl 0.9's reward loop would hold: a dict result's keys plus
    its ``score``; ``{"acc": score}`` for a float result (and for a reward call that failed, scored 0)."""
    return [{**ex, "score": s} if isinstance(ex, dict) else {"acc": s} for s, ex in zip(raw_scores, extras)]


def validate_filter_metric(cfg: Any, error: type[Exception] = ValueError) -> None:
    """Config-time checks of ``algorithm.filter_groups`` (the reward's keys are only known at the first step)."""
    fg = cfg.algorithm.filter_groups
    if fg.enable and fg.metric == "seq_final_reward" and cfg.algorithm.use_kl_in_reward:
        raise error("algorithm.filter_groups.metric=seq_final_reward with algorithm.use_kl_in_reward=true: the "
                    "in-reward KL penalty needs the reference log-probs, computed after the groups are filtered "
                    "(verl's DAPO trainer cannot compute it there either); use metric=seq_reward or acc")
    if fg.metric is not None and not str(fg.metric).strip():
        raise error("algorithm.filter_groups.metric is empty: set acc, score, seq_reward, seq_final_reward or a "
                    "key your reward function returns in its dict")


def filter_metric_values(cfg: Any, exp: Any) -> torch.Tensor:
    """``(bs,)`` float64 values of ``algorithm.filter_groups.metric`` for the responses of ``exp``
    (a :class:`~rlcockpit.trainer.collect.Experience`).

    Raises :class:`FilterMetricError` naming the key and the keys the reward did return when no response
    has it, or when a value is not a number. A response that lacks a key the others have (its reward call
    failed, or the function returns the key only sometimes) takes its sequence score, with a printed note.
    """
    name = cfg.algorithm.filter_groups.metric or "seq_reward"
    if name in SCORE_METRICS:  # seq_final_reward == seq_reward here: validate_filter_metric refuses in-reward KL
        return exp.scores.to(torch.float64)
    raw = exp.scores if exp.raw_scores is None else exp.raw_scores
    infos = reward_extra_info(raw.tolist(), exp.extras or [None] * len(exp.rows))
    if not any(name in info for info in infos):
        keys = sorted({k for info in infos for k in info})
        raise FilterMetricError(
            f"algorithm.filter_groups.metric={name!r} is not in the reward's output: its reward_extra_info keys "
            f"are {keys} (plus the built-in {', '.join(SCORE_METRICS)}). A reward function that returns a float "
            f"gives only 'acc'; return a dict with {name!r} to filter on it.")
    values, missing = [], 0
    for i, (info, score) in enumerate(zip(infos, exp.scores.tolist())):
        value = info.get(name)
        if value is None:
            missing += 1
            value = score
        if isinstance(value, (bool, int, float, numbers.Real)):
            value = float(value)
        else:
            row = exp.rows[i]
            raise FilterMetricError(
                f"algorithm.filter_groups.metric={name!r}: response {i} (data_source {row.data_source!r}) has the "
                f"non-numeric value {value!r}; the metric must be a number or bool")
        if not math.isfinite(value):
            raise FilterMetricError(f"algorithm.filter_groups.metric={name!r}: response {i} has the value {value}")
        values.append(value)
    if missing:
        print(f"[rlcockpit] algorithm.filter_groups.metric={name!r}: {missing}/{len(infos)} responses lack it "
              "(a failed reward call, or the function returns it only sometimes); they use their sequence score")
    return torch.tensor(values, dtype=torch.float64)
