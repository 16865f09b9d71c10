"""Policy losses that reshape or replace PPO's ratio clip: SAPO, CISPO, GMPO (``geo_mean``), DPPO, DRO.

Each is registered in :data:`rlcockpit.algos.POLICY_LOSSES` under verl 0.9's ``loss_mode`` name and
follows the call shape described in :mod:`rlcockpit.algos.losses`.  Shapes: all tensors ``(bs, T)``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rlcockpit.algos.core import masked_mean
from rlcockpit.algos.losses import (
    POLICY_LOSSES,
    GlobalBatchInfo,
    aggregate,
    clipped_log_ratio,
    valid,
    weighted,
    zero_like,
)

__all__ = [
    "policy_loss_cispo",
    "policy_loss_dppo_kl",
    "policy_loss_dppo_tv",
    "policy_loss_dro",
    "policy_loss_geo_mean",
    "policy_loss_sapo",
]


@POLICY_LOSSES.register("sapo")
def policy_loss_sapo(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    tau_pos: float = 1.0, tau_neg: float = 1.05, global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """SAPO (arXiv 2511.20347): a smooth sigmoid gate on the ratio instead of a hard clip.

    ``L = -A * sigmoid(tau (r - 1)) * 4 / tau`` with ``tau = tau_pos`` where ``A > 0`` else ``tau_neg``
    (``actor.tau_pos`` / ``actor.tau_neg``); the gradient fades smoothly as ``r`` leaves 1.  Always
    aggregated ``seq-mean-token-mean`` (verl ignores ``loss_agg_mode`` for SAPO, so this loss does not
    accept it).

    Returns: ``pg_loss`` and ``ppo_kl``; clip fractions are 0.
    """
    adv = valid(advantages, response_mask)
    neg_kl = clipped_log_ratio(log_prob, old_log_prob, response_mask)
    ratio = torch.exp(neg_kl)
    taus = torch.where(adv > 0, torch.as_tensor(tau_pos, dtype=adv.dtype, device=adv.device),
                       torch.as_tensor(tau_neg, dtype=adv.dtype, device=adv.device))
    gates = torch.sigmoid(taus * (ratio - 1.0)) * (4.0 / taus)
    pg_losses = weighted(-gates * adv, rollout_is_weights, response_mask)
    info = {k: v for k, v in dict(global_batch_info or {}).items() if k != "batch_num_tokens"}
    return {
        "pg_loss": aggregate(pg_losses, response_mask, "seq-mean-token-mean", info),
        "pg_clipfrac": zero_like(ratio),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": zero_like(ratio),
    }


@POLICY_LOSSES.register("cispo")
def policy_loss_cispo(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, loss_agg_mode: str = "token-mean",
    global_batch_info: GlobalBatchInfo = None, rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """CISPO (MiniMax-M1, arXiv 2506.13585): clip the importance weight, never drop a token's gradient.

    ``L = -sg(clip(r, 1 - low, 1 + high)) * A * log_prob``: unlike PPO a clipped token still
    contributes a (down-weighted) REINFORCE gradient.

    Returns: ``pg_loss``, ``pg_clipfrac`` (share of tokens whose weight was clipped), ``ppo_kl``.
    """
    adv = valid(advantages, response_mask)
    neg_kl = clipped_log_ratio(log_prob, old_log_prob, response_mask)
    ratio = torch.exp(neg_kl)
    clipped = torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    pg_losses = weighted(-clipped.detach() * adv * valid(log_prob, response_mask), rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": masked_mean((ratio != clipped).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": zero_like(ratio),
    }


@POLICY_LOSSES.register("geo_mean")
def policy_loss_geo_mean(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """GMPO (arXiv 2507.20673): maximise the geometric mean of the token ratios, clipped per token in log space.

    Per sequence ``ratio = exp(mean_t sgn(A) min(sgn(A) d_t, sgn(A) clip(d_t, -low, high)))`` with
    ``d = log_prob - old_log_prob``, ``L_i = -mean_t(A) * ratio`` and the loss the mean over the
    sequences (``loss_agg_mode`` is not used, as in verl; with micro-batches the mean is over
    ``global_batch_info["global_batch_size"]`` sequences).  Rollout IS weights enter as their per-sequence
    geometric mean.  Tokens with ``A = 0`` drop out of the ratio (``sgn(0) = 0``), as in verl.

    Returns: ``pg_loss``, ``pg_clipfrac`` / ``pg_clipfrac_lower`` (clipped tokens with ``A > 0`` / ``A < 0``),
    ``ppo_kl``.
    """
    mask = response_mask.to(log_prob.dtype)
    adv = valid(advantages, response_mask)
    neg_kl = valid(log_prob - old_log_prob, response_mask)
    sign = torch.sign(adv)
    neg_kl_clamped = torch.clamp(neg_kl, -clip_ratio_low, clip_ratio_high)
    neg_kl_min = sign * torch.minimum(sign * neg_kl, sign * neg_kl_clamped)
    lengths = mask.sum(-1) + 1e-8
    ratio = torch.exp((neg_kl_min * mask).sum(-1) / lengths)
    pg_losses = -(adv * mask).sum(-1) / lengths * ratio
    if rollout_is_weights is not None:
        w = valid(rollout_is_weights.detach().to(log_prob.dtype), response_mask)
        pg_losses = pg_losses * torch.exp((torch.log(w + 1e-10) * mask).sum(-1) / lengths)
    n_seq = dict(global_batch_info or {}).get("global_batch_size") or pg_losses.shape[0]
    clipped = (neg_kl != neg_kl_clamped).to(log_prob.dtype)
    return {
        "pg_loss": pg_losses.sum() / float(n_seq),
        "pg_clipfrac": masked_mean(clipped * (adv > 0), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": masked_mean(clipped * (adv < 0), response_mask),
    }


def _dppo(old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, keep: Tensor,
          clip_ratio_c: float, loss_agg_mode: str, global_batch_info: GlobalBatchInfo,
          rollout_is_weights: Tensor | None) -> dict[str, Tensor]:
    """DPPO's shared part: a truncated-IS REINFORCE gradient on the tokens ``keep`` lets through."""
    adv = valid(advantages, response_mask)
    neg_kl = clipped_log_ratio(log_prob, old_log_prob, response_mask)
    ratio = torch.exp(neg_kl)
    truncated = torch.clamp(ratio, max=clip_ratio_c).detach()
    keep = keep.detach().to(ratio.dtype)
    pg_losses = weighted(-adv * truncated * valid(log_prob, response_mask) * keep, rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": masked_mean(1.0 - keep, response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": masked_mean((ratio > clip_ratio_c).to(ratio.dtype) * keep, response_mask),
    }


def _probs(old_log_prob: Tensor, log_prob: Tensor, response_mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    lp, old = valid(log_prob, response_mask), valid(old_log_prob, response_mask)
    return lp, old, torch.exp(lp), torch.exp(old)


@POLICY_LOSSES.register("dppo_tv")
def policy_loss_dppo_tv(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, clip_ratio_c: float = 20.0,
    loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """DPPO-Binary-TV (arXiv 2602.04879): a trust region on the probability change, not on the ratio.

    A token with ``A > 0`` is kept while ``pi - pi_old <= clip_ratio_high``, one with ``A <= 0`` while
    ``pi - pi_old >= -clip_ratio_low`` (here the clip ratios are total-variation thresholds); kept tokens
    get ``-A * sg(min(r, clip_ratio_c)) * log_prob`` (truncated IS instead of a dual clip).

    Returns: ``pg_loss``, ``pg_clipfrac`` (tokens outside the trust region), ``pg_clipfrac_lower``
    (kept tokens whose ratio was truncated), ``ppo_kl``.
    """
    _, _, prob, old_prob = _probs(old_log_prob, log_prob, response_mask)
    keep = torch.where(advantages > 0, (prob - old_prob) <= clip_ratio_high, (prob - old_prob) >= -clip_ratio_low)
    return _dppo(old_log_prob, log_prob, advantages, response_mask, keep, clip_ratio_c, loss_agg_mode,
                 global_batch_info, rollout_is_weights)


@POLICY_LOSSES.register("dppo_kl")
def policy_loss_dppo_kl(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, clip_ratio_c: float = 20.0,
    loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """DPPO-Binary-KL (arXiv 2602.04879): as ``dppo_tv`` with the binary KL of the token's probability.

    ``kl_b = p_old log(p_old / p) + (1 - p_old) log((1 - p_old) / (1 - p))``; a token is dropped when
    ``kl_b`` exceeds ``clip_ratio_high`` while its probability rose with ``A > 0`` (``clip_ratio_low``
    while it fell with ``A <= 0``).

    Returns: as :func:`policy_loss_dppo_tv`.
    """
    lp, old, prob, old_prob = _probs(old_log_prob, log_prob, response_mask)
    binary_kl = old_prob * (old - lp) + (1 - old_prob) * torch.log((1.0 - old_prob + 1e-8) / (1.0 - prob + 1e-8))
    keep = torch.where(advantages > 0, (binary_kl <= clip_ratio_high) | (prob <= old_prob),
                       (binary_kl <= clip_ratio_low) | (prob >= old_prob))
    return _dppo(old_log_prob, log_prob, advantages, response_mask, keep, clip_ratio_c, loss_agg_mode,
                 global_batch_info, rollout_is_weights)


@POLICY_LOSSES.register("dro")
def policy_loss_dro(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    dro_beta: float | None = None, loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """Direct Reward Optimization: ``L = -(A log_prob - beta/2 (log_prob - old_log_prob)^2)``.

    The quadratic log-ratio penalty (``actor.policy_loss.dro_beta`` > 0, required) keeps the update
    near the sampling policy without a clip.

    Returns: ``pg_loss`` and ``ppo_kl``.
    """
    if dro_beta is None or dro_beta <= 0:
        raise ValueError(f"policy_loss.dro_beta must be a positive value when using DRO, got {dro_beta}")
    adv = valid(advantages, response_mask)
    lp = valid(log_prob, response_mask)
    log_ratio = valid(log_prob - old_log_prob, response_mask)
    pg_losses = weighted(-(lp * adv - 0.5 * dro_beta * log_ratio.square()), rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": zero_like(lp),
        "ppo_kl": masked_mean(-log_ratio, response_mask),
        "pg_clipfrac_lower": zero_like(lp),
    }
