"""Optimal Token Baseline (OTB): a per-timestep baseline weighted by each trajectory's path variance.

For the responses to one prompt, the baseline at step ``t`` is ``B_t = sum_i G_it W_it / sum_i W_it``
with ``G`` the reward-to-go and ``W_t = sum_{j<=t} (1 - 2 pi_j + sum_v pi(v)^2)`` the cumulative
squared-score-norm proxy: trajectories whose gradient is noisier so far count more.  With rollout
importance weights ``rho``, ``W`` uses ``w_j rho_j^2`` (variance under truncated IS).

These estimators need two inputs a plain rollout does not give: ``old_log_probs`` (the sampled tokens'
log-probs under the training policy) and ``sum_pi_squared`` (``sum_v pi(v)^2`` per position, verl's
``actor.calculate_sum_pi_squared``); rlcockpit's trainer computes both in its old-log-prob pass when one
of these estimators is chosen.  Registered as ``optimal_token_baseline`` and
``tir_optimal_token_baseline`` (multi-turn: the baseline runs over each trajectory's own tokens with the
tool/observation tokens removed, so step ``t`` means the t-th *generated* token).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.advantages import ADV_ESTIMATORS, require_index
from rlcockpit.algos.core import check_same_shape, group_ids

__all__ = ["compute_multi_turn_optimal_token_baseline_advantage", "compute_optimal_token_baseline_advantage"]


def _path_weights(response_mask: Tensor, old_log_probs: Tensor | None, sum_pi_squared: Tensor | None,
                  rollout_is_weights: Tensor | None, name: str) -> tuple[Tensor, Tensor]:
    """(mask as float, cumulative path-variance proxy ``W`` (bs, T)); checks the inputs."""
    if old_log_probs is None or sum_pi_squared is None:
        raise ValueError(f"adv_estimator {name!r} needs old_log_probs and sum_pi_squared (bs, T): set "
                         "actor_rollout_ref.actor.calculate_sum_pi_squared=true (rlcockpit's trainer does it for you)")
    check_same_shape(name, "response_mask", response_mask, old_log_probs=old_log_probs, sum_pi_squared=sum_pi_squared,
                     rollout_is_weights=rollout_is_weights)
    mask = response_mask.to(old_log_probs.dtype)
    w = 1 - 2 * torch.exp(old_log_probs) + sum_pi_squared
    if rollout_is_weights is not None:
        w = w * rollout_is_weights.to(w.dtype) ** 2
    w = torch.where(mask != 0, w, torch.zeros_like(w))
    return mask, (w * mask).cumsum(dim=-1)


def _zero_tail(baselines: Tensor, rows: list[int], lengths: Tensor) -> None:
    """Zero the baseline where only the group's single longest trajectory still runs (its tail has no peers)."""
    group_lengths = lengths[rows]
    ordered = torch.sort(group_lengths).values
    longest, second = int(ordered[-1]), int(ordered[-2])
    at_max = torch.nonzero(group_lengths == longest).squeeze(-1)
    if at_max.numel() == 1 and longest > second:
        baselines[rows[int(at_max[0])], second:] = 0.0


def _groups(index: Any, bs: int, device: torch.device, keep: Tensor | None = None) -> list[list[int]]:
    ids, n_groups = group_ids(index, bs, device)
    members: list[list[int]] = [[] for _ in range(n_groups)]
    for row, g in enumerate(ids.tolist()):
        if keep is None or bool(keep[row]):
            members[g].append(row)
    return [m for m in members if m]


@ADV_ESTIMATORS.register("optimal_token_baseline")
@torch.no_grad()
def compute_optimal_token_baseline_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, old_log_probs: Tensor | None = None,
    sum_pi_squared: Tensor | None = None, rollout_is_weights: Tensor | None = None, handle_zero_tail: bool = True,
    epsilon: float = 1e-8,
) -> tuple[Tensor, Tensor]:
    """OTB over padded positions: ``A_t = G_t - B_t`` with ``B_t`` shared by the group at position ``t``.

    A group of one keeps its return as advantage.  ``handle_zero_tail`` (``algorithm.handle_zero_tail``)
    zeroes the baseline past the second-longest response for a unique longest one.

    Returns:
        ``advantages (bs, T)`` (0 on padding) and ``returns (bs, T)``: the reward-to-go.
    """
    require_index("optimal_token_baseline", index)
    mask, w_cum = _path_weights(response_mask, old_log_probs, sum_pi_squared, rollout_is_weights,
                                "optimal_token_baseline")
    rewards = torch.where(mask != 0, token_level_rewards, torch.zeros_like(token_level_rewards)) * mask
    returns = rewards.flip(-1).cumsum(-1).flip(-1)
    baselines = torch.zeros_like(returns)
    lengths = mask.sum(-1)
    for rows in _groups(index, returns.shape[0], returns.device):
        if len(rows) == 1:
            continue
        g_ret, g_w, g_mask = returns[rows], w_cum[rows], mask[rows]
        baselines[rows] = ((g_ret * g_w * g_mask).sum(0) / ((g_w * g_mask).sum(0) + epsilon)).expand(len(rows), -1)
        if handle_zero_tail:
            _zero_tail(baselines, rows, lengths)
    return (returns - baselines) * mask, returns


@ADV_ESTIMATORS.register("tir_optimal_token_baseline")
@torch.no_grad()
def compute_multi_turn_optimal_token_baseline_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, old_log_probs: Tensor | None = None,
    sum_pi_squared: Tensor | None = None, rollout_is_weights: Tensor | None = None, handle_zero_tail: bool = True,
    epsilon: float = 1e-8,
) -> tuple[Tensor, Tensor]:
    """OTB for multi-turn (tool-integrated) responses: step ``t`` is each trajectory's t-th valid token.

    The valid tokens of every trajectory are packed to the left, the baseline is computed over those
    packed steps within each group and the advantages are scattered back; responses without any valid
    token are left out.  Otherwise as :func:`compute_optimal_token_baseline_advantage`.

    Returns:
        ``advantages (bs, T)`` (0 on padding and observation tokens) and ``returns (bs, T)``.
    """
    require_index("tir_optimal_token_baseline", index)
    mask, w_cum = _path_weights(response_mask, old_log_probs, sum_pi_squared, rollout_is_weights,
                                "tir_optimal_token_baseline")
    rewards = torch.where(mask != 0, token_level_rewards, torch.zeros_like(token_level_rewards)) * mask
    returns = rewards.flip(-1).cumsum(-1).flip(-1)
    lengths = mask.sum(-1).long()
    width = int(lengths.max()) if lengths.numel() else 0
    valid = mask.bool()
    # position of each valid token among its row's valid tokens: the packed step index
    step = (valid.long().cumsum(-1) - 1).clamp(min=0)
    rows_idx = torch.arange(mask.shape[0], device=mask.device).unsqueeze(-1).expand_as(step)
    packed_w = w_cum.new_zeros(mask.shape[0], width)
    packed_ret = torch.zeros_like(packed_w)
    packed_w[rows_idx[valid], step[valid]] = w_cum[valid]
    packed_ret[rows_idx[valid], step[valid]] = returns[valid]
    baselines = torch.zeros_like(packed_ret)
    for rows in _groups(index, mask.shape[0], mask.device, keep=lengths > 0):
        if len(rows) == 1:
            continue
        g_w, g_ret = packed_w[rows], packed_ret[rows]
        baselines[rows] = ((g_ret * g_w).sum(0) / (g_w.sum(0) + epsilon)).to(baselines.dtype)
        if handle_zero_tail:
            _zero_tail(baselines, rows, lengths)
    advantages = torch.zeros_like(returns)
    advantages[valid] = (packed_ret - baselines)[rows_idx[valid], step[valid]]
    return advantages * mask, returns
