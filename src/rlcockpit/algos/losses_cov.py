"""Clip-Cov and KL-Cov (arXiv 2505.22617, "The Entropy Mechanism of RL for Reasoning LMs").

Entropy collapses because a few tokens with a high covariance between their advantage and their
log-prob dominate the update.  Both losses find those tokens in the batch and restrain only them:
Clip-Cov drops their gradient, KL-Cov adds a KL penalty on them.  Registered in
:data:`rlcockpit.algos.POLICY_LOSSES` as ``clip_cov`` and ``kl_cov``; all tensors ``(bs, T)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlcockpit.algos.core import masked_mean
from rlcockpit.algos.losses import POLICY_LOSSES, GlobalBatchInfo, aggregate, valid, weighted

__all__ = ["policy_loss_clip_cov", "policy_loss_kl_cov"]


@POLICY_LOSSES.register("clip_cov")
def policy_loss_clip_cov(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, clip_cov_ratio: float = 0.0002,
    clip_cov_lb: float = 1.0, clip_cov_ub: float = 5.0, loss_agg_mode: str = "token-mean",
    global_batch_info: GlobalBatchInfo = None, rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """PPO clip plus Clip-Cov: detach a random ``clip_cov_ratio`` share of the high-covariance tokens.

    Tokens not already clipped by PPO whose centred covariance ``(A - mean A)(log_prob - mean log_prob)``
    lies in ``(clip_cov_lb, clip_cov_ub)`` are candidates; ``max(1, int(clip_cov_ratio * n_tokens))`` of them,
    drawn with ``torch.randperm`` (the global torch RNG, as verl), get zero loss.  No log-ratio clamp, as in verl.

    Returns: ``pg_loss``, ``pg_clipfrac`` (share of tokens detached by Clip-Cov), ``ppo_kl``.
    """
    if clip_cov_ratio <= 0:
        raise ValueError(f"policy_loss.clip_cov_ratio must be > 0, got {clip_cov_ratio}")
    valid_mask = response_mask > 0
    adv = valid(advantages, response_mask)
    lp = valid(log_prob, response_mask)
    neg_kl = valid(log_prob - old_log_prob, response_mask)
    ratio = torch.exp(neg_kl)
    losses1 = -adv * ratio
    losses2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    with torch.no_grad():
        cov = (adv - masked_mean(adv, response_mask)) * (lp - masked_mean(lp, response_mask))
        cov = cov.masked_fill(~valid_mask | ((losses2 > losses1) & valid_mask), -torch.inf)
        n_clip = max(int(clip_cov_ratio * float(response_mask.sum())), 1)
        candidates = torch.nonzero((cov < clip_cov_ub) & (cov > clip_cov_lb) & valid_mask)
        if len(candidates) > 0:
            candidates = candidates[torch.randperm(len(candidates))[: min(n_clip, len(candidates))]]
        corr = torch.ones_like(adv)
        corr[candidates[:, 0], candidates[:, 1]] = 0
    pg_losses = weighted(torch.maximum(losses1, losses2) * corr, rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": masked_mean((corr == 0).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
    }


@POLICY_LOSSES.register("kl_cov")
def policy_loss_kl_cov(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    kl_cov_ratio: float = 0.0002, ppo_kl_coef: float = 0.1, loss_agg_mode: str = "token-mean",
    global_batch_info: GlobalBatchInfo = None, rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """Unclipped ratio loss ``-A r`` plus KL-Cov: ``+ ppo_kl_coef * |log r|`` on the top-covariance tokens.

    The ``max(1, int(kl_cov_ratio * n_tokens))`` valid tokens with the largest centred covariance
    ``(A - mean A)(log_prob - mean log_prob)`` get the penalty (``actor.policy_loss.kl_cov_ratio`` /
    ``ppo_kl_coef``, verl's defaults 0.0002 / 0.1).

    Returns: ``pg_loss`` and ``ppo_kl`` = mean ``|log_prob - old_log_prob|`` (what verl reports for KL-Cov).
    """
    if kl_cov_ratio <= 0:
        raise ValueError(f"policy_loss.kl_cov_ratio must be > 0, got {kl_cov_ratio}")
    valid_mask = response_mask > 0
    adv = valid(advantages, response_mask)
    neg_kl = valid(log_prob - old_log_prob, response_mask)
    abs_kl = neg_kl.abs()
    ratio = torch.exp(neg_kl)
    losses = -adv * ratio
    penalised = torch.zeros_like(valid_mask)
    flat_valid = torch.nonzero(valid_mask.reshape(-1), as_tuple=True)[0]
    if len(flat_valid) > 0:
        with torch.no_grad():
            a, lp = adv[valid_mask].reshape(-1), log_prob.detach()[valid_mask].reshape(-1)
            cov = (a - a.mean()) * (lp - lp.mean())
            top = torch.topk(cov, max(1, int(len(cov) * kl_cov_ratio)), largest=True).indices
            penalised.view(-1)[flat_valid[top]] = True
    losses = torch.where(penalised, losses + ppo_kl_coef * abs_kl, losses)
    pg_losses = weighted(losses, rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "ppo_kl": masked_mean(abs_kl, response_mask),
    }
