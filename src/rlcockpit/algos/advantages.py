"""Advantage estimators, chosen by verl's ``algorithm.adv_estimator`` name.

Every estimator is a pure function registered in :data:`ADV_ESTIMATORS`, called with keyword
arguments under verl's names and declaring exactly the ones it uses::

    fn(*, token_level_rewards, response_mask, <its inputs: index, values, reward_baselines,
       old_log_probs, sum_pi_squared, rollout_is_weights, non_tensor_batch>,
       <its config fields: gamma, lam, norm_adv_by_std_in_grpo, epsilon, handle_zero_tail,
       gdpo_reward_keys, ...>) -> (advantages, returns)

with ``token_level_rewards``, ``response_mask``, ``values``, ``advantages`` and ``returns`` all
``(bs, T)``, ``index`` ``(bs,)`` hashable group labels and ``reward_baselines`` ``(bs,)``.
:func:`compute_advantage` passes each config field only to the estimators that read it and refuses
an input tensor the chosen estimator would ignore.  Users add their own with
``@ADV_ESTIMATORS.register("name")`` (a function taking ``**kwargs`` receives everything).

Outcome-reward estimators reduce each row to its score ``sum(token_level_rewards * response_mask)``;
padded positions never contribute and always receive advantage 0.  All estimators run under
``torch.no_grad``: advantages are targets, not part of the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.core import (
    call_with_accepted,
    check_same_shape,
    group_ids,
    masked_whiten,
    registry_params,
)
from rlcockpit.registry import Registry

__all__ = [
    "ADV_ESTIMATORS",
    "compute_advantage",
    "compute_gae_advantage_return",
    "compute_grpo_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_reinforce_plus_plus_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "group_stats",
]

AdvEstimator = Callable[..., tuple[Tensor, Tensor]]
ADV_ESTIMATORS: Registry[AdvEstimator] = Registry("advantage estimator")

# Inputs that are data: passing one to an estimator that does not use it is an error (it would be ignored).
ESTIMATOR_INPUTS = ("values", "reward_baselines", "old_log_probs", "sum_pi_squared", "rollout_is_weights",
                    "non_tensor_batch")


def outcome_scores(token_level_rewards: Tensor, response_mask: Tensor) -> Tensor:
    """``(bs,)`` per-sequence score: the sum of the rewards on valid tokens."""
    return _zero_padding(token_level_rewards, response_mask.to(token_level_rewards.dtype)).sum(-1)


def _zero_padding(x: Tensor, mask: Tensor) -> Tensor:
    """``x * mask`` with padded positions exactly 0 even when ``x`` holds nan/inf there."""
    return torch.where(mask != 0, x, torch.zeros_like(x)) * mask


def require_index(name: str, index: Any) -> None:
    """Group estimators need a group label per row: fail with the estimator's name when there is none."""
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


def broadcast_to_tokens(per_row: Tensor, response_mask: Tensor) -> Tensor:
    """``(bs,)`` -> ``(bs, T)`` on valid tokens, 0 on padding."""
    return per_row.unsqueeze(-1) * response_mask.to(per_row.dtype)


@ADV_ESTIMATORS.register("gae")
@torch.no_grad()
def compute_gae_advantage_return(
    *, token_level_rewards: Tensor, response_mask: Tensor, values: Tensor | None = None,
    gamma: float = 1.0, lam: float = 1.0,
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
    norm_adv_by_std_in_grpo: bool = True, epsilon: float = 1e-6,
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
    require_index("grpo", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    _, count, mean, std = group_stats(scores, index)
    single = count <= 1
    mean = torch.where(single, torch.zeros_like(mean), mean)
    std = torch.where(single, torch.ones_like(std), std)
    adv = scores - mean
    if norm_adv_by_std_in_grpo:
        adv = adv / (std + epsilon)
    out = broadcast_to_tokens(adv, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("rloo")
@torch.no_grad()
def compute_rloo_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
) -> tuple[Tensor, Tensor]:
    """RLOO: score minus the mean score of the *other* responses to the same prompt.

    ``s_i - mean_{j != i} s_j = n / (n - 1) * (s_i - mean)``.  A group of one keeps its raw score.

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    require_index("rloo", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    _, count, mean, _ = group_stats(scores, index)
    loo = count / (count - 1).clamp(min=1) * (scores - mean)
    adv = torch.where(count > 1, loo, scores)
    out = broadcast_to_tokens(adv, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("grpo_vectorized")
@torch.no_grad()
def compute_grpo_vectorized_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
    norm_adv_by_std_in_grpo: bool = True, epsilon: float = 1e-6,
) -> tuple[Tensor, Tensor]:
    """GRPO computed with scatter-adds instead of a Python loop over groups (verl's ``grpo_vectorized``).

    Same numbers as ``grpo`` (singletons: mean 0, std 1; the group std is the unbiased one), in one
    pass over the batch; the faster choice for large batches.

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    require_index("grpo_vectorized", index)
    scores = outcome_scores(token_level_rewards, response_mask).to(torch.float32)
    _, count, mean, std = group_stats(scores, index)
    single = count <= 1
    mean = torch.where(single, torch.zeros_like(mean), mean)
    std = torch.where(single, torch.ones_like(std), std)
    adv = (scores - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else scores - mean
    out = broadcast_to_tokens(adv.to(token_level_rewards.dtype), response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("rloo_vectorized")
@torch.no_grad()
def compute_rloo_vectorized_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
) -> tuple[Tensor, Tensor]:
    """RLOO with scatter-adds (verl's ``rloo_vectorized``): ``(n s_i - sum_g s) / (n - 1)``.

    Unlike ``rloo``, a group of one gets advantage 0 (there is no other response to compare with),
    exactly as verl's vectorised version.

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    require_index("rloo_vectorized", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    _, count, mean, _ = group_stats(scores, index)
    adv = torch.where(count > 1, (count * scores - count * mean) / (count - 1).clamp(min=1), torch.zeros_like(scores))
    out = broadcast_to_tokens(adv, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("remax")
@torch.no_grad()
def compute_remax_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, reward_baselines: Tensor | None = None,
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
    *, token_level_rewards: Tensor, response_mask: Tensor, gamma: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """REINFORCE++: discounted reward-to-go, whitened over the whole batch (no critic, no groups).

    ``G_t = r_t + gamma * G_{t+1}`` where ``t+1`` is the next *valid* position: the running return is
    carried unchanged through masked positions (tool/observation tokens inside a multi-turn response),
    so earlier turns still receive later rewards, as verl 0.9 does.  Rewards on masked positions are
    ignored.

    Args:
        token_level_rewards: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        gamma: discount (``algorithm.gamma``).

    Returns:
        ``advantages (bs, T)``: returns whitened over all valid tokens of the batch (0 on
        padding); ``returns (bs, T)``: the raw discounted returns (0 on padding).
    """
    mask = response_mask.to(token_level_rewards.dtype)
    rewards = _zero_padding(token_level_rewards, mask)
    returns = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(rewards.shape[1])):
        m = mask[:, t]
        new = rewards[:, t] + gamma * running
        returns[:, t] = new * m
        running = torch.where(m != 0, new, running)
    advantages = masked_whiten(returns, mask) * mask
    return advantages, returns


@ADV_ESTIMATORS.register("reinforce_plus_plus_baseline")
@torch.no_grad()
def compute_reinforce_plus_plus_baseline_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
) -> tuple[Tensor, Tensor]:
    """REINFORCE++-baseline: subtract the group mean score, then whiten over the whole batch.

    A group of one uses baseline 0.  Whitening is over every valid token of the batch, so long
    responses weigh more in the batch statistics (verl's behaviour).

    Args/Returns: as :func:`compute_grpo_outcome_advantage`.
    """
    require_index("reinforce_plus_plus_baseline", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    _, count, mean, _ = group_stats(scores, index)
    centered = scores - torch.where(count > 1, mean, torch.zeros_like(mean))
    mask = response_mask.to(scores.dtype)
    tiled = broadcast_to_tokens(centered, mask)
    out = masked_whiten(tiled, mask) * mask
    return out, out.clone()


def compute_advantage(
    name: str,
    *,
    token_level_rewards: Tensor,
    response_mask: Tensor,
    **kwargs: Any,
) -> tuple[Tensor, Tensor]:
    """Compute ``(advantages, returns)`` with the estimator registered as ``name``.

    Args:
        name: ``algorithm.adv_estimator``: ``gae``, ``grpo``, ``grpo_vectorized``, ``grpo_passk``, ``rloo``,
            ``rloo_vectorized``, ``remax``, ``reinforce_plus_plus``, ``reinforce_plus_plus_baseline``, ``opo``,
            ``gpg``, ``gdpo``, ``optimal_token_baseline``, ``tir_optimal_token_baseline`` or a user-registered name.
        token_level_rewards: ``(bs, T)`` rewards (outcome score on the last token, minus any
            in-reward KL penalty).
        response_mask: ``(bs, T)``; 1 on generated tokens, 0 on padding and on tool/observation tokens.
        **kwargs: verl's names.  Inputs -- ``index`` ``(bs,)`` group labels, ``values`` ``(bs, T)`` (gae),
            ``reward_baselines`` ``(bs,)`` (remax), ``old_log_probs`` / ``sum_pi_squared`` /
            ``rollout_is_weights`` ``(bs, T)`` (optimal token baselines), ``non_tensor_batch`` (gdpo's
            per-component rewards).  Config fields -- ``gamma``, ``lam``, ``norm_adv_by_std_in_grpo``,
            ``epsilon``, ``handle_zero_tail``, ``gdpo_reward_keys``, ``gdpo_reward_weights``, ``f_norm``.
            ``index`` and the config fields go only to the estimators that read them; an input the chosen
            estimator does not use raises ``ValueError`` (it would silently change nothing), and a name no
            registered estimator knows raises ``TypeError``.

    Returns:
        ``(advantages, returns)``, both ``(bs, T)``.

    Raises:
        KeyError: unknown ``name`` (the message names the closest registered one).
        ValueError: wrong shapes, a missing input the estimator needs or one it would ignore.
    """
    fn = ADV_ESTIMATORS.get(name)
    where = f"compute_advantage({name!r})"
    if token_level_rewards.dim() != 2:
        raise ValueError(f"{where}: token_level_rewards must be (bs, T), got {tuple(token_level_rewards.shape)}")
    tensors = {k: v for k, v in kwargs.items() if k in ESTIMATOR_INPUTS and isinstance(v, Tensor) and v.dim() == 2}
    check_same_shape(where, "token_level_rewards", token_level_rewards, response_mask=response_mask, **tensors)
    inputs = {k: v for k, v in kwargs.items() if k in ESTIMATOR_INPUTS}
    knobs = {k: v for k, v in kwargs.items() if k not in ESTIMATOR_INPUTS}
    return call_with_accepted(fn, where, (), inputs={"token_level_rewards": token_level_rewards,
                                                     "response_mask": response_mask, **inputs},
                              knobs=knobs, known_knobs=registry_params(ADV_ESTIMATORS))
