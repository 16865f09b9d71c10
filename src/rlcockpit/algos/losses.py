"""Actor (policy-gradient) and critic losses, chosen by verl's ``actor.policy_loss.loss_mode`` name.

A policy loss registered in :data:`POLICY_LOSSES` is called as::

    fn(old_log_prob, log_prob, advantages, response_mask, *, <its own keyword arguments>) -> dict | tuple

(all tensors ``(bs, T)``) and returns either a dict with at least ``pg_loss`` or verl's 4-tuple
``(pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower)``; :func:`compute_policy_loss` normalises
both to the dict the trainer logs (``actor/pg_loss``, ``actor/pg_clipfrac``, ``actor/ppo_kl``,
``actor/pg_clipfrac_lower``, plus whatever else a loss reports, e.g. bypass mode's ``rollout_corr/*``).

Keyword arguments keep verl's names: the config fields a loss reads (``clip_ratio_low``,
``clip_ratio_high``, ``clip_ratio_c``, ``loss_agg_mode``, ``tau_pos``, ``clip_cov_ratio``, ``dro_beta``...),
``global_batch_info`` (verl's ``dp_size`` / ``batch_num_tokens`` / ``global_batch_size`` /
``loss_scale_factor`` for micro-batched aggregation) and ``rollout_is_weights``.  A built-in loss declares
exactly what it uses: :func:`compute_policy_loss` passes each config field only to the losses that read
it, and refuses a ``rollout_is_weights`` the chosen loss would ignore.

The built-in losses zero the advantage and the log-ratio at padded positions *before* doing
any arithmetic, so padding (even nan) changes neither the loss nor any gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.core import (
    agg_loss,
    call_with_accepted,
    check_same_shape,
    masked_mean,
    registry_params,
)
from rlcockpit.registry import Registry

__all__ = [
    "POLICY_LOSSES",
    "compute_entropy_bonus",
    "compute_policy_loss",
    "compute_value_loss",
    "policy_loss_gpg",
    "policy_loss_gspo",
    "policy_loss_reinforce",
    "policy_loss_vanilla",
]

PolicyLossFn = Callable[..., "dict[str, Tensor] | tuple[Tensor, Tensor, Tensor, Tensor]"]
POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")
GlobalBatchInfo = Mapping[str, Any] | None

_METRIC_KEYS = ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower")
_LOG_RATIO_CLAMP = 20.0  # exp(20) ~ 5e8: keeps the ratio finite when the policies drift far apart


def valid(x: Tensor, mask: Tensor) -> Tensor:
    """``x`` on valid positions, exactly 0 (and gradient-free) on padding."""
    return torch.where(mask != 0, x, torch.zeros_like(x))


def weighted(pg_losses: Tensor, rollout_is_weights: Tensor | None, mask: Tensor) -> Tensor:
    """Per-token losses times the (detached) rollout importance weights, when given."""
    if rollout_is_weights is None:
        return pg_losses
    check_same_shape("rollout_is_weights", "response_mask", mask, rollout_is_weights=rollout_is_weights)
    return pg_losses * valid(rollout_is_weights.detach().to(pg_losses.dtype), mask)


def aggregate(pg_losses: Tensor, mask: Tensor, loss_agg_mode: str, global_batch_info: GlobalBatchInfo) -> Tensor:
    """:func:`agg_loss` with verl's ``global_batch_info`` dict (``None`` = the call is the whole batch)."""
    return agg_loss(pg_losses, mask, loss_agg_mode, **dict(global_batch_info or {}))


def clipped_log_ratio(log_prob: Tensor, old_log_prob: Tensor, mask: Tensor) -> Tensor:
    """``log_prob - old_log_prob`` clamped to +-20 (verl's stability clamp), 0 on padding."""
    return valid(torch.clamp(log_prob - old_log_prob, -_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP), mask)


def zero_like(ref: Tensor) -> Tensor:
    return torch.zeros((), dtype=ref.dtype, device=ref.device)


@POLICY_LOSSES.register("vanilla", "ppo")
def policy_loss_vanilla(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """PPO's clipped surrogate with asymmetric clip (DAPO clip-higher) and dual clip.

    Per token, with ``r = exp(log_prob - old_log_prob)``:
    ``L = max(-A r, -A clip(r, 1 - low, 1 + high))``; for ``A < 0`` additionally
    ``L = min(L, -A c)`` (dual clip: a huge ratio on a bad token cannot blow the loss up).
    ``rollout_is_weights`` (rollout correction) multiply the per-token losses.

    Args:
        old_log_prob, log_prob, advantages, response_mask: ``(bs, T)``.
        clip_ratio_low, clip_ratio_high: clip range below/above 1.
        clip_ratio_c: dual-clip bound, must be > 1.

    Returns:
        ``pg_loss`` (scalar, with grad), ``pg_clipfrac`` (share of valid tokens where the
        ratio clip was active), ``ppo_kl`` (mean ``old_log_prob - log_prob``) and
        ``pg_clipfrac_lower`` (share where the dual clip was active).
    """
    if clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c (dual-clip bound) must be > 1.0, got {clip_ratio_c}")
    adv = valid(advantages, response_mask)
    neg_kl = clipped_log_ratio(log_prob, old_log_prob, response_mask)
    ratio = torch.exp(neg_kl)
    losses1 = -adv * ratio
    losses2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    clipped1 = torch.maximum(losses1, losses2)
    losses3 = -adv * clip_ratio_c
    clipped2 = torch.minimum(losses3, clipped1)
    negative = adv < 0
    pg_losses = weighted(torch.where(negative, clipped2, clipped1), rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": masked_mean((losses2 > losses1).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": masked_mean(((clipped1 > losses3) & negative).to(ratio.dtype), response_mask),
    }


@POLICY_LOSSES.register("gspo")
def policy_loss_gspo(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, loss_agg_mode: str = "seq-mean-token-mean",
    global_batch_info: GlobalBatchInfo = None, rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """GSPO (arXiv 2507.18071): one importance ratio per *sequence*, the geometric mean of the token ratios.

    Token ``t`` of sequence ``i`` uses ``s_i * pi(y_t) / sg[pi(y_t)]`` with
    ``s_i = exp(mean_t(log_prob - old_log_prob))`` detached, so the value is the sequence ratio
    while the gradient still flows per token.  The paper aggregates ``seq-mean-token-mean``; like
    verl 0.9 the configured ``loss_agg_mode`` is honoured.  Use small clip ranges (e.g. 3e-4/4e-4).

    Returns: as :func:`policy_loss_vanilla`, ``pg_clipfrac_lower`` is always 0.
    """
    adv = valid(advantages, response_mask)
    neg_kl = valid(log_prob - old_log_prob, response_mask)
    mask = response_mask.to(neg_kl.dtype)
    seq_neg_kl = neg_kl.sum(-1) / mask.sum(-1).clamp(min=1)
    lp = valid(log_prob, response_mask)
    log_ratio = torch.clamp(lp - lp.detach() + seq_neg_kl.detach().unsqueeze(-1), max=10.0)
    ratio = torch.exp(log_ratio)
    losses1 = -adv * ratio
    losses2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    pg_losses = weighted(torch.maximum(losses1, losses2), rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": masked_mean((losses2 > losses1).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": zero_like(ratio),
    }


@POLICY_LOSSES.register("gpg")
def policy_loss_gpg(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """GPG's plain policy gradient ``-A * log_prob``: no ratio, no clipping.

    Returns: as :func:`policy_loss_vanilla`; clip fractions are 0, ``ppo_kl`` is still reported.
    """
    adv = valid(advantages, response_mask)
    lp = valid(log_prob, response_mask)
    return {
        "pg_loss": aggregate(weighted(-adv * lp, rollout_is_weights, response_mask), response_mask, loss_agg_mode,
                             global_batch_info),
        "pg_clipfrac": zero_like(lp),
        "ppo_kl": masked_mean(-valid(log_prob - old_log_prob, response_mask), response_mask),
        "pg_clipfrac_lower": zero_like(lp),
    }


@POLICY_LOSSES.register("reinforce")
def policy_loss_reinforce(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    loss_agg_mode: str = "seq-mean-token-sum", global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
) -> dict[str, Tensor]:
    """REINFORCE with optional importance weights (verl's ``compute_policy_loss_reinforce``).

    ``L = -w * A * log_prob`` with ``w`` the (detached, truncated) rollout importance weights
    ``pi_train / pi_rollout`` when given.  ``old_log_prob`` here is the *rollout* policy's log-prob
    (verl calls it ``rollout_log_prob``); it only feeds ``ppo_kl``.  verl uses this loss in bypass mode
    with ``rollout_correction.loss_type=reinforce``; rlcockpit also registers it by name.

    Returns: ``pg_loss`` and ``ppo_kl`` (mean ``old_log_prob - log_prob``); clip fractions are 0.
    """
    adv = valid(advantages, response_mask)
    lp = valid(log_prob, response_mask)
    pg_losses = weighted(-adv * lp, rollout_is_weights, response_mask)
    return {
        "pg_loss": aggregate(pg_losses, response_mask, loss_agg_mode, global_batch_info),
        "pg_clipfrac": zero_like(lp),
        "ppo_kl": masked_mean(-valid(log_prob - old_log_prob, response_mask), response_mask),
        "pg_clipfrac_lower": zero_like(lp),
    }


def _as_loss_dict(loss_name: str, result: Any, ref: Tensor) -> dict[str, Tensor]:
    """Normalise a loss function's return value to ``{pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower, ...}``.

    Metrics a loss does not report are 0; every metric is detached (only ``pg_loss`` carries the graph).
    """
    if isinstance(result, (tuple, list)):
        if len(result) != 4:
            raise ValueError(
                f"policy loss {loss_name!r} returned a {len(result)}-tuple; expected a dict with 'pg_loss' "
                "or (pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower)"
            )
        result = dict(zip(("pg_loss", *_METRIC_KEYS), result))
    if not isinstance(result, dict) or "pg_loss" not in result:
        raise ValueError(f"policy loss {loss_name!r} must return a dict with 'pg_loss', got {type(result).__name__}")
    out = {"pg_loss": result["pg_loss"]}
    for key in (*_METRIC_KEYS, *(k for k in result if k != "pg_loss" and k not in _METRIC_KEYS)):
        value = result.get(key)
        if value is None:
            value = zero_like(ref)
        elif not isinstance(value, Tensor):
            value = torch.tensor(float(value), dtype=ref.dtype, device=ref.device)
        out[key] = value.detach()
    return out


def compute_policy_loss(
    old_log_prob: Tensor,
    log_prob: Tensor,
    advantages: Tensor,
    response_mask: Tensor,
    *,
    loss_name: str = "vanilla",
    clip_ratio: float = 0.2,
    clip_ratio_low: float | None = None,
    clip_ratio_high: float | None = None,
    clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean",
    global_batch_info: GlobalBatchInfo = None,
    rollout_is_weights: Tensor | None = None,
    **config: Any,
) -> dict[str, Tensor]:
    """The actor's policy-gradient loss, computed by the loss registered as ``loss_name``.

    Args:
        old_log_prob: ``(bs, T)`` log-probs of the policy that sampled the batch (no grad).
        log_prob: ``(bs, T)`` log-probs of the policy being trained (with grad).
        advantages: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        loss_name: ``actor.policy_loss.loss_mode``: ``vanilla`` (alias ``ppo``), ``gspo``, ``gpg``,
            ``reinforce``, ``sapo``, ``cispo``, ``geo_mean``, ``clip_cov``, ``kl_cov``, ``dro``, ``dppo_tv``,
            ``dppo_kl``, ``bypass_mode`` or a user-registered name.
        clip_ratio: symmetric PPO clip; ``clip_ratio_low``/``clip_ratio_high`` override each
            side (DAPO clip-higher, e.g. 0.2/0.28).
        clip_ratio_c: dual-clip bound (> 1) applied to negative advantages (DPPO's truncation bound).
        loss_agg_mode: see :func:`rlcockpit.algos.agg_loss`.
        global_batch_info: verl's ``{dp_size, batch_num_tokens, global_batch_size, loss_scale_factor}``
            for aggregating micro-batches of one mini-batch (see :func:`agg_loss`).
        rollout_is_weights: ``(bs, T)`` rollout-correction importance weights; refused (``ValueError``)
            by a loss that would not apply them (``bypass_mode`` computes its own).
        **config: further fields of verl's actor config under their verl names (``tau_pos``, ``tau_neg``,
            ``clip_cov_ratio``, ``clip_cov_lb``, ``clip_cov_ub``, ``kl_cov_ratio``, ``ppo_kl_coef``,
            ``dro_beta``, bypass mode's ``loss_type`` / ``rollout_is`` / ...).

    Every config field is passed only to the losses that read it (verl's losses read their own
    fields of one shared config); a name no registered loss knows raises ``TypeError``.

    Returns:
        ``{"pg_loss": scalar with grad, "pg_clipfrac", "ppo_kl", "pg_clipfrac_lower": detached scalars}``
        (a loss may add more keys, e.g. ``rollout_corr/*``).

    Raises:
        KeyError: unknown ``loss_name`` (names the closest one).
        ValueError: mismatched shapes, an argument the loss would ignore, or an invalid setting.
    """
    fn = POLICY_LOSSES.get(loss_name)
    where = f"compute_policy_loss({loss_name!r})"
    check_same_shape(where, "log_prob", log_prob, old_log_prob=old_log_prob, advantages=advantages,
                     response_mask=response_mask)
    knobs = {
        "clip_ratio_low": clip_ratio if clip_ratio_low is None else clip_ratio_low,
        "clip_ratio_high": clip_ratio if clip_ratio_high is None else clip_ratio_high,
        "clip_ratio_c": clip_ratio_c, "loss_agg_mode": loss_agg_mode, "global_batch_info": global_batch_info,
        **config,
    }
    result = call_with_accepted(fn, where, (old_log_prob, log_prob, advantages, response_mask),
                                inputs={"rollout_is_weights": rollout_is_weights}, knobs=knobs,
                                known_knobs=registry_params(POLICY_LOSSES))
    return _as_loss_dict(loss_name, result, log_prob)


def compute_value_loss(
    vpreds: Tensor,
    returns: Tensor,
    values: Tensor,
    response_mask: Tensor,
    *,
    cliprange_value: float = 0.5,
    loss_agg_mode: str = "token-mean",
    dp_size: int = 1,
    batch_num_tokens: float | Tensor | None = None,
    global_batch_size: float | Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> tuple[Tensor, Tensor]:
    """PPO's clipped critic loss.

    ``vpred_clipped = clip(vpreds, values - c, values + c)``;
    ``loss = 0.5 * agg(max((vpreds - R)^2, (vpred_clipped - R)^2))``: the critic cannot profit
    from moving further than ``c`` from the rollout values in one update.

    Args:
        vpreds: ``(bs, T)`` current critic predictions (with grad).
        returns: ``(bs, T)`` targets from the advantage estimator.
        values: ``(bs, T)`` critic values at rollout time.
        response_mask: ``(bs, T)``.
        cliprange_value: ``c``.
        dp_size, batch_num_tokens, global_batch_size, loss_scale_factor: see :func:`agg_loss`.

    Returns:
        ``(vf_loss scalar with grad, vf_clipfrac detached scalar)``: the clip fraction is the
        share of valid tokens where the clipped branch was larger.
    """
    check_same_shape("compute_value_loss", "vpreds", vpreds, returns=returns, values=values,
                     response_mask=response_mask)
    vp = valid(vpreds, response_mask)
    ret = valid(returns, response_mask)
    old = valid(values, response_mask)
    vp_clipped = torch.maximum(torch.minimum(vp, old + cliprange_value), old - cliprange_value)
    losses1 = (vp - ret) ** 2
    losses2 = (vp_clipped - ret) ** 2
    vf_loss = 0.5 * agg_loss(torch.maximum(losses1, losses2), response_mask, loss_agg_mode, dp_size=dp_size,
                             batch_num_tokens=batch_num_tokens, global_batch_size=global_batch_size,
                             loss_scale_factor=loss_scale_factor)
    vf_clipfrac = masked_mean((losses2 > losses1).to(vp.dtype), response_mask).detach()
    return vf_loss, vf_clipfrac


def compute_entropy_bonus(
    entropy: Tensor, response_mask: Tensor, loss_agg_mode: str = "token-mean", **global_batch_info: Any
) -> Tensor:
    """Aggregate per-token entropy ``(bs, T)`` into the scalar the trainer subtracts (times ``entropy_coeff``).

    ``global_batch_info``: :func:`agg_loss`'s ``dp_size`` / ``batch_num_tokens`` / ``global_batch_size`` /
    ``loss_scale_factor``.
    """
    return agg_loss(entropy, response_mask, loss_agg_mode, **global_batch_info)
