"""More group-relative outcome estimators under verl 0.9's names: OPO, GPG, Pass@k GRPO and GDPO.

Each reduces a response to its outcome score ``sum(token_level_rewards * response_mask)``, compares it
with the other responses to the same prompt (``index``) and broadcasts the result over the response's
valid tokens (0 on padding).  Registered in :data:`rlcockpit.algos.ADV_ESTIMATORS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from rlcockpit.algos.advantages import (
    ADV_ESTIMATORS,
    broadcast_to_tokens,
    compute_grpo_outcome_advantage,
    group_stats,
    outcome_scores,
    require_index,
)
from rlcockpit.algos.core import group_ids, masked_whiten

__all__ = [
    "compute_gdpo_outcome_advantage",
    "compute_gpg_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_opo_outcome_advantage",
]


@ADV_ESTIMATORS.register("opo")
@torch.no_grad()
def compute_opo_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
) -> tuple[Tensor, Tensor]:
    """OPO (arXiv 2505.23585): the baseline is the group's *length-weighted* mean score.

    ``b = sum_j L_j s_j / sum_j L_j`` with ``L_j`` the valid-token count, the variance-optimal baseline
    for a token-level policy gradient; a group of one uses baseline 0.

    Returns: ``(advantages, returns)``, identical ``(bs, T)`` tensors.
    """
    require_index("opo", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    lengths = response_mask.to(scores.dtype).sum(-1)
    ids, n_groups = group_ids(index, scores.shape[0], scores.device)
    weighted = torch.zeros(n_groups, dtype=scores.dtype, device=scores.device).index_add_(0, ids, lengths * scores)
    total = torch.zeros_like(weighted).index_add_(0, ids, lengths)
    count = torch.zeros_like(weighted).index_add_(0, ids, torch.ones_like(scores))
    baseline = torch.where(count > 1, weighted / total.clamp(min=1), torch.zeros_like(total))[ids]
    out = broadcast_to_tokens(scores - baseline, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("gpg")
@torch.no_grad()
def compute_gpg_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, f_norm: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """GPG (arXiv 2504.02546): group-mean baseline, no std, scaled up by the share of rewarded responses.

    ``A = alpha (s - mean_group) / f_norm`` with ``alpha = bs / max(1, #{s != 0})``: when few responses in
    the batch earn any reward, their (rare) signal is amplified.  A group of one uses mean 0.

    Returns: ``(advantages, returns)``, identical ``(bs, T)`` tensors.
    """
    require_index("gpg", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    alpha = scores.shape[0] / torch.count_nonzero(scores).clamp(min=1)
    _, count, mean, _ = group_stats(scores, index)
    out = broadcast_to_tokens(alpha * (scores - torch.where(count > 1, mean, torch.zeros_like(mean))) / f_norm, response_mask)
    return out, out.clone()


@ADV_ESTIMATORS.register("grpo_passk")
@torch.no_grad()
def compute_grpo_passk_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None,
    norm_adv_by_std_in_grpo: bool = True, epsilon: float = 1e-6,
) -> tuple[Tensor, Tensor]:
    """Pass@k training (arXiv 2503.19595): only each group's best response learns, by its margin.

    The top response gets ``r_max - r_second`` (divided by ``std + epsilon`` with
    ``norm_adv_by_std_in_grpo``); every other response gets 0.  Ties are broken as ``torch.topk`` breaks
    them (as verl).  Every group needs at least two responses.

    Returns: ``(advantages, returns)``, identical ``(bs, T)`` tensors.

    Raises:
        ValueError: a group of one response.
    """
    require_index("grpo_passk", index)
    scores = outcome_scores(token_level_rewards, response_mask)
    ids, n_groups = group_ids(index, scores.shape[0], scores.device)
    advantages = torch.zeros_like(scores)
    for g in range(n_groups):
        rows = torch.nonzero(ids == g).squeeze(-1)
        rewards = scores[rows]
        if rewards.numel() < 2:
            label = (index.tolist() if hasattr(index, "tolist") else list(index))[int(rows[0])]
            raise ValueError(f"grpo_passk: Pass@k needs at least 2 samples per group; group {label!r} has 1")
        top, top_idx = torch.topk(rewards, 2)
        margin = top[0] - top[1]
        if norm_adv_by_std_in_grpo:
            margin = margin / (torch.std(rewards) + epsilon)
        advantages[rows[top_idx[0]]] = margin
    out = broadcast_to_tokens(advantages, response_mask)
    return out, out.clone()


def _component_scores(non_tensor_batch: Mapping[str, Any], keys: Sequence[str], bs: int,
                      device: torch.device) -> list[Tensor]:
    scores = []
    for key in keys:
        if key not in non_tensor_batch:
            raise ValueError(f"GDPO reward key {key!r} not found in non_tensor_batch (available: "
                             f"{sorted(non_tensor_batch)}); make the reward function return a dict containing {key!r}")
        values = np.asarray(non_tensor_batch[key], dtype=np.float32).reshape(-1)
        if values.shape[0] != bs:
            raise ValueError(f"GDPO reward key {key!r} has {values.shape[0]} values but the batch has {bs} rows")
        scores.append(torch.from_numpy(values).to(device))
    return scores


@ADV_ESTIMATORS.register("gdpo")
@torch.no_grad()
def compute_gdpo_outcome_advantage(
    *, token_level_rewards: Tensor, response_mask: Tensor, index: Any = None, epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True, gdpo_reward_keys: Sequence[str] | None = None,
    gdpo_reward_weights: Sequence[float] | None = None, non_tensor_batch: Mapping[str, Any] | None = None,
) -> tuple[Tensor, Tensor]:
    """GDPO (arXiv 2601.05242): normalise each reward component within its group, then sum and whiten.

    ``A = whiten(sum_k w_k * GRPO(r_k))`` over the batch's valid tokens, so a dominant component cannot
    drown the others.  The components are ``non_tensor_batch[key]`` (one score per response, the extra
    keys a verl ``compute_score`` returns in its dict) for ``key`` in ``algorithm.gdpo_reward_keys``,
    weighted by ``algorithm.gdpo_reward_weights`` (default 1 each).  With neither given, the single
    component is the total reward (GRPO followed by batch whitening), as verl without a config.

    Returns: ``(advantages, returns)``, identical ``(bs, T)`` tensors.

    Raises:
        ValueError: keys without the per-component data or the other way round, a missing key, or a
            weight list whose length differs from the keys'.
    """
    require_index("gdpo", index)
    if (gdpo_reward_keys is None) != (non_tensor_batch is None) or (gdpo_reward_keys is not None
                                                                    and len(gdpo_reward_keys) == 0):
        raise ValueError("GDPO needs both algorithm.gdpo_reward_keys (the reward components, e.g. "
                         "['format_reward', 'accuracy_reward']) and non_tensor_batch holding them, or neither")
    bs = token_level_rewards.shape[0]
    if gdpo_reward_keys is None:
        components = [outcome_scores(token_level_rewards, response_mask)]
    else:
        components = _component_scores(non_tensor_batch or {}, list(gdpo_reward_keys), bs, token_level_rewards.device)
    weights = [1.0] * len(components) if gdpo_reward_weights is None else [float(w) for w in gdpo_reward_weights]
    if len(weights) != len(components):
        raise ValueError(f"gdpo_reward_weights has {len(weights)} entries for {len(components)} gdpo_reward_keys")
    mask = response_mask.to(torch.float32)
    total = torch.zeros_like(mask)
    for weight, score in zip(weights, components):
        per_row, _ = compute_grpo_outcome_advantage(  # (bs, 1): the component's group-normalised score
            token_level_rewards=score.to(torch.float32).unsqueeze(-1), response_mask=torch.ones_like(mask[:, :1]),
            index=index, epsilon=epsilon, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo)
        total = total + weight * per_row * mask
    out = (masked_whiten(total, mask) * mask).to(token_level_rewards.dtype)
    return out, out.clone()
