"""Advantage estimators, chosen by verl's ``algorithm.adv_estimator`` name.

Every estimator is a pure function registered in :data:`ADV_ESTIMATORS` and called with the
same keyword arguments (unused ones are absorbed by ``**kwargs``)::

    fn(*, token_level_rewards, response_mask, index, values, reward_baselines,
       gamma, lam, norm_adv_by_std_in_grpo, epsilon, **kwargs) -> (advantages, returns)

with ``token_level_rewards``, ``response_mask``, ``values``, ``advantages`` and ``returns`` all
``(bs, T)``, ``index`` ``(bs,)`` hashable group labels and ``reward_baselines`` ``(bs,)``.
Users add their own with ``@ADV_ESTIMATORS.register("name")`` and select it by name.

Outcome-reward estimators (grpo, rloo, remax, reinforce_plus_plus_baseline) reduce each row to
its score ``sum(token_level_rewards * response_mask)``; padded positions never contribute and
always receive advantage 0.  All estimators run under ``torch.no_grad``: advantages are targets,
not part of the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.core import check_same_shape, group_ids, masked_whiten
from rlcockpit.registry import Registry

__all__ = [
    "ADV_ESTIMATORS",
    "compute_advantage",
    "compute_gae_advantage_return",
    "compute_grpo_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_reinforce_plus_plus_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "group_stats",
]

AdvEstimator = Callable[..., tuple[Tensor, Tensor]]
ADV_ESTIMATORS: Registry[AdvEstimator] = Registry("advantage estimator")


def _outcome_scores(token_level_rewards: Tensor, response_mask: Tensor) -> Tensor:
    """``(bs,)`` per-sequence score: the sum of the rewards on valid tokens."""
    return _zero_padding(token_level_rewards, response_mask.to(token_level_rewards.dtype)).sum(-1)


def _zero_padding(x: Tensor, mask: Tensor) -> Tensor:
    """``x * mask`` with padded positions exactly 0 even when ``x`` holds nan/inf there."""
    return torch.where(mask != 0, x, torch.zeros_like(x)) * mask


def _require_index(name: str, index: Any) -> None:
    if index is None:
        raise ValueError(f"adv_estimator {name!r} needs index: one group label (prompt uid) per row")


def group_stats(scores: Tensor, index: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per-row statistics of the group each row belongs to.

    Args:
        scores: ``(bs,)``.
        index: ``(bs,)`` hashable group labels.

    Returns:
        ``(ids, count, mean, std)``, each ``(bs,)`` and aligned with the rows: the dense group id,
        the group size, the group mean and the group's unbiased (``n - 1``) standard deviation
        (0 for groups of one).
    """
    ids, n_groups = group_ids(index, scores.shape[0], scores.device)
    work = scores.to(torch.float64)
    count = torch.zeros(n_groups, dtype=torch.float64, device=scores.device).index_add_(
        0, ids, torch.ones_like(work)
    )
    mean = torch.zeros_like(count).index_add_(0, ids, work) / count
    sq = torch.zeros_like(count).index_add_(0, ids, (work - mean[ids]) ** 2)
    std = torch.where(count > 1, (sq / (count - 1).clamp(min=1)).sqrt(), torch.zeros_like(sq))
    dt = scores.dtype
    return ids, count[ids].to(dt), mean[ids].to(dt), std[ids].to(dt)


def _broadcast(per_row: Tensor, response_mask: Tensor) -> Tensor:
    """``(bs,)`` -> ``(bs, T)`` on valid tokens, 0 on padding."""
    return per_row.unsqueeze(-1) * response_mask.to(per_row.dtype)


@ADV_ESTIMATORS.register("gae")
@torch.no_grad()
def compute_gae_advantage_return(
    *, token_level_rewards: Tensor, response_mask: Tensor, values: Tensor | None = None,
    gamma: float = 1.0, lam: float = 1.0, **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """Generalised Advantage Estimation (PPO with a critic).

    ``delta_t = r_t + gamma * V_{t+1} - V_t``, ``A_t = delta_t + gamma * lam * A_{t+1}``, where
    "t+1" is the next *valid* position: masked positions in the middle of a response
    (e.g. tool-output tokens in multi-turn rollouts) are skipped, their values and TD errors
    are ignored, exactly like verl.

    Args:
        token_level_rewards: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        values: ``(bs, T)`` critic values of the rollout.
        gamma: discount; lam: GAE lambda.

    Returns:
        ``advantages (bs, T)`` whitened over the mask (0 on padding) and
        ``returns (bs, T) = raw advantages + values`` (0 on padding): the critic's targets.
    """
    if values is None:
        raise ValueError("adv_estimator 'gae' needs values (bs, T) from the critic")
    check_same_shape("gae", "token_level_rewards", token_level_rewards, values=values)
    mask = response_mask.to(token_level_rewards.dtype)
    rewards = _zero_padding(token_level_rewards, mask)
    values = _zero_padding(values, mask)  # nan/inf in padding must not leak through 0 * nan
    bs, length = rewards.shape
    next_value = torch.zeros(bs, dtype=rewards.dtype, device=rewards.device)
    last_gae = torch.zeros_like(next_value)
    adv_rev = []
    for t in reversed(range(length)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        gae_t = delta + gamma * lam * last_gae
        next_value = torch.where(m != 0, values[:, t], next_value)
        last_gae = torch.where(m != 0, gae_t, last_gae)
        adv_rev.append(last_gae)
    raw = torch.stack(adv_rev[::-1], dim=1)
    returns = (raw + values) * mask
    advantages = masked_whiten(raw, mask) * mask
    return advantages, returns


@ADV_ESTIMATORS.register("grpo")
@torch.no_grad()
def compute_grpo_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
    norm_adv_by_std_in_grpo: bool = True, epsilon: float = 1e-6, **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """GRPO: each response's score relative to its group, ``(s - mean) / (std + epsilon)``.

    ``std`` is the unbiased group standard deviation.  A group of one response gets mean 0 and
    std 1 (verl's convention), i.e. advantage ``s / (1 + epsilon)``.  With
    ``norm_adv_by_std_in_grpo=False`` the division is skipped (Dr.GRPO).

    Args:
        token_level_rewards: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        index: ``(bs,)`` group label per row (the prompt uid).

    Returns:
        ``(advantages, returns)``, identical ``(bs, T)`` tensors: the row's advantage on every
        valid token, 0 on padding.
    """
    _require_index("grpo", index)
    scores = _outcome_scores(token_level_rewards, response_mask)
    _, count, mean, std = group_stats(scores, index)
    single = count <= 1
    mean = torch.where(single, torch.zeros_like(mean), mean)
    std = torch.where(single, torch.ones_like(std), std)
    adv = scores - mean
    if norm_adv_by_std_in_grpo:
        adv = adv / (std + epsilon)
    out = _broadcast(adv, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("rloo")
@torch.no_grad()
def compute_rloo_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, **kwargs: Any
) -> tuple[Tensor, Tensor]:
    """RLOO: score minus the mean score of the *other* responses to the same prompt.

    ``s_i - mean_{j != i} s_j = n / (n - 1) * (s_i - mean)``.  A group of one keeps its raw score.

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    _require_index("rloo", index)
    scores = _outcome_scores(token_level_rewards, response_mask)
    _, count, mean, _ = group_stats(scores, index)
    loo = count / (count - 1).clamp(min=1) * (scores - mean)
    adv = torch.where(count > 1, loo, scores)
    out = _broadcast(adv, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("remax")
@torch.no_grad()
def compute_remax_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, reward_baselines: Tensor | None = None,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """ReMax: reward-to-go minus the greedy rollout's score (the baseline).

    Args:
        token_level_rewards: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        reward_baselines: ``(bs,)`` score of the greedy response to the same prompt.

    Returns:
        ``returns (bs, T)``: undiscounted reward-to-go ``sum_{k>=t} r_k`` over valid tokens;
        ``advantages = returns - baseline`` on valid tokens, 0 on padding.
    """
    if reward_baselines is None:
        raise ValueError("adv_estimator 'remax' needs reward_baselines (bs,): the greedy rollout's score")
    if tuple(reward_baselines.shape) != (token_level_rewards.shape[0],):
        raise ValueError(
            f"remax: reward_baselines must have shape ({token_level_rewards.shape[0]},), "
            f"got {tuple(reward_baselines.shape)}"
        )
    mask = response_mask.to(token_level_rewards.dtype)
    rewards = _zero_padding(token_level_rewards, mask)
    returns = rewards.flip(-1).cumsum(-1).flip(-1) * mask
    advantages = returns - reward_baselines.to(returns.dtype).unsqueeze(-1) * mask
    return advantages, returns


@ADV_ESTIMATORS.register("reinforce_plus_plus")
@torch.no_grad()
def compute_reinforce_plus_plus_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, gamma: float = 1.0, **kwargs: Any
) -> tuple[Tensor, Tensor]:
    """REINFORCE++: discounted reward-to-go, whitened over the whole batch (no critic, no groups).

    ``G_t = r_t + gamma * G_{t+1}``; the running return is reset at masked positions so nothing
    after a response's end flows back into it.

    Args:
        token_level_rewards: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        gamma: discount.

    Returns:
        ``advantages (bs, T)``: returns whitened over all valid tokens of the batch (0 on
        padding); ``returns (bs, T)``: the raw discounted returns (0 on padding).
    """
    mask = response_mask.to(token_level_rewards.dtype)
    rewards = _zero_padding(token_level_rewards, mask)
    returns = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
        running = running * mask[:, t]  # reset at masked positions (after EOS), as verl does
    advantages = masked_whiten(returns, mask) * mask
    return advantages, returns * mask


@ADV_ESTIMATORS.register("reinforce_plus_plus_baseline")
@torch.no_grad()
def compute_reinforce_plus_plus_baseline_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, **kwargs: Any
) -> tuple[Tensor, Tensor]:
    """REINFORCE++-baseline: subtract the group mean score, then whiten over the whole batch.

    A group of one uses baseline 0.  Whitening is over every valid token of the batch, so long
    responses weigh more in the batch statistics (verl's behaviour).

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    _require_index("reinforce_plus_plus_baseline", index)
    scores = _outcome_scores(token_level_rewards, response_mask)
    _, count, mean, _ = group_stats(scores, index)
    centered = scores - torch.where(count > 1, mean, torch.zeros_like(mean))
    mask = response_mask.to(scores.dtype)
    tiled = _broadcast(centered, mask)
    out = masked_whiten(tiled, mask) * mask
    return out, out.clone()


def compute_advantage(
    name: str,
    *,
    token_level_rewards: Tensor,
    response_mask: Tensor,
    index: Any = None,
    values: Tensor | None = None,
    reward_baselines: Tensor | None = None,
    gamma: float = 1.0,
    lam: float = 1.0,
    norm_adv_by_std_in_grpo: bool = True,
    epsilon: float = 1e-6,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """Compute ``(advantages, returns)`` with the estimator registered as ``name``.

    Args:
        name: ``gae`` | ``grpo`` | ``rloo`` | ``remax`` | ``reinforce_plus_plus`` |
            ``reinforce_plus_plus_baseline`` or a user-registered name.
        token_level_rewards: ``(bs, T)`` rewards (outcome score on the last token, minus any
            in-reward KL penalty).
        response_mask: ``(bs, T)``; 1 on generated tokens, 0 on padding.
        index: ``(bs,)`` group labels (needed by grpo / rloo / reinforce_plus_plus_baseline).
        values: ``(bs, T)`` critic values (needed by gae).
        reward_baselines: ``(bs,)`` greedy scores (needed by remax).
        gamma, lam: discount and GAE lambda.
        norm_adv_by_std_in_grpo: GRPO divides by the group std (False = Dr.GRPO).
        epsilon: GRPO's std guard.
        **kwargs: forwarded to custom estimators.

    Returns:
        ``(advantages, returns)``, both ``(bs, T)``.

    Raises:
        KeyError: unknown ``name`` (the message names the closest registered one).
        ValueError: wrong shapes or a missing input the estimator needs.
    """
    fn = ADV_ESTIMATORS.get(name)
    if token_level_rewards.dim() != 2:
        raise ValueError(
            f"compute_advantage({name!r}): token_level_rewards must be (bs, T), got {tuple(token_level_rewards.shape)}"
        )
    check_same_shape(f"compute_advantage({name!r})", "token_level_rewards", token_level_rewards,
                     response_mask=response_mask, values=values)
    return fn(
        token_level_rewards=token_level_rewards,
        response_mask=response_mask,
        index=index,
        values=values,
        reward_baselines=reward_baselines,
        gamma=gamma,
        lam=lam,
        norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
        epsilon=epsilon,
        **kwargs,
    )
