"""DAPO's batch-level tricks (arXiv 2503.14476) as pure functions.

* Dynamic sampling: a prompt whose responses all got the same score gives every response a
  zero group-relative advantage, i.e. no learning signal; DAPO drops such groups and samples more.
* Soft overlong punishment: responses that run into the length limit are penalised linearly
  inside a buffer before the limit instead of abruptly at it.

Clip-higher is ``compute_policy_loss(clip_ratio_low=0.2, clip_ratio_high=0.28)`` and the
token-level loss is ``loss_agg_mode="token-mean"``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.advantages import group_stats

__all__ = ["dynamic_sampling_mask", "overlong_penalty"]


def dynamic_sampling_mask(seq_scores: Tensor, index: Any) -> Tensor:
    """Which rows to keep after DAPO's dynamic-sampling filter.

    Args:
        seq_scores: ``(bs,)`` per-response score (the metric verl filters on, e.g. ``acc``).
        index: ``(bs,)`` group label per row (prompt uid).

    Returns:
        ``(bs,)`` bool: True for rows whose group's scores are not all identical (std > 0).
        Groups of a single response are kept, as verl does (there is nothing to compare against).
    """
    if seq_scores.dim() != 1:
        raise ValueError(f"dynamic_sampling_mask: seq_scores must be (bs,), got {tuple(seq_scores.shape)}")
    _, count, _, std = group_stats(seq_scores.to(torch.float64), index)
    return (std > 0) | (count <= 1)


def overlong_penalty(
    response_lengths: Tensor, max_response_length: int, overlong_buffer_len: int, penalty_factor: float = 1.0
) -> Tensor:
    """DAPO's soft overlong punishment, added to each response's score.

    ``penalty = min(0, -(L - (max - buffer)) / buffer * penalty_factor)``: 0 up to
    ``max_response_length - overlong_buffer_len`` tokens, then falling linearly to
    ``-penalty_factor`` at ``max_response_length``.

    Args:
        response_lengths: ``(bs,)`` number of valid response tokens.
        max_response_length: the rollout's length limit.
        overlong_buffer_len: width of the linear ramp (``reward_model.overlong_buffer.len``).
        penalty_factor: penalty at the limit (``reward_model.overlong_buffer.penalty_factor``).

    Returns:
        ``(bs,)`` float penalties (<= 0).
    """
    if overlong_buffer_len <= 0 or overlong_buffer_len > max_response_length:
        raise ValueError(
            f"overlong_penalty: overlong_buffer_len must be in (0, max_response_length={max_response_length}], "
            f"got {overlong_buffer_len}"
        )
    lengths = response_lengths.to(torch.float32)
    expected = max_response_length - overlong_buffer_len
    penalty = -(lengths - expected) / overlong_buffer_len * penalty_factor
    return torch.clamp(penalty, max=0.0)
