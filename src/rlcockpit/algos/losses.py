"""Actor (policy-gradient) and critic losses, chosen by verl's ``actor.policy_loss.loss_mode`` name.

A policy loss registered in :data:`POLICY_LOSSES` is called as::

    fn(old_log_prob, log_prob, advantages, response_mask, *, clip_ratio_low, clip_ratio_high,
       clip_ratio_c, loss_agg_mode, norm_len, **kwargs) -> dict | tuple

(all tensors ``(bs, T)``) and returns either a dict with at least ``pg_loss`` or verl's 4-tuple
``(pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower)``; :func:`compute_policy_loss` normalises
both to the dict the trainer logs (``actor/pg_loss``, ``actor/pg_clipfrac``, ``actor/ppo_kl``,
``actor/pg_clipfrac_lower``).

The built-in losses zero the advantage and the log-ratio at padded positions *before* doing
any arithmetic, so padding (even nan) changes neither the loss nor any gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from rlcockpit.algos.core import agg_loss, check_same_shape, masked_mean
from rlcockpit.registry import Registry

__all__ = [
    "POLICY_LOSSES",
    "compute_entropy_bonus",
    "compute_policy_loss",
    "compute_value_loss",
    "policy_loss_gpg",
    "policy_loss_gspo",
    "policy_loss_vanilla",
]

PolicyLossFn = Callable[..., "dict[str, Tensor] | tuple[Tensor, Tensor, Tensor, Tensor]"]
POLICY_LOSSES: Registry[PolicyLossFn] = Registry("policy loss")

_METRIC_KEYS = ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower")
_LOG_RATIO_CLAMP = 20.0  # exp(20) ~ 5e8: keeps the ratio finite when the policies drift far apart


def _valid(x: Tensor, mask: Tensor) -> Tensor:
    """``x`` on valid positions, exactly 0 (and gradient-free) on padding."""
    return torch.where(mask != 0, x, torch.zeros_like(x))


@POLICY_LOSSES.register("vanilla", "ppo")
def policy_loss_vanilla(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean", norm_len: int | None = None, **kwargs: Any,
) -> dict[str, Tensor]:
    """PPO's clipped surrogate with asymmetric clip (DAPO clip-higher) and dual clip.

    Per token, with ``r = exp(log_prob - old_log_prob)``:
    ``L = max(-A r, -A clip(r, 1 - low, 1 + high))``; for ``A < 0`` additionally
    ``L = min(L, -A c)`` (dual clip: a huge ratio on a bad token cannot blow the loss up).

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
    adv = _valid(advantages, response_mask)
    neg_kl = _valid(torch.clamp(log_prob - old_log_prob, -_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP), response_mask)
    ratio = torch.exp(neg_kl)
    losses1 = -adv * ratio
    losses2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    clipped1 = torch.maximum(losses1, losses2)
    losses3 = -adv * clip_ratio_c
    clipped2 = torch.minimum(losses3, clipped1)
    negative = adv < 0
    pg_losses = torch.where(negative, clipped2, clipped1)
    return {
        "pg_loss": agg_loss(pg_losses, response_mask, loss_agg_mode, norm_len=norm_len),
        "pg_clipfrac": masked_mean((losses2 > losses1).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": masked_mean(((clipped1 > losses3) & negative).to(ratio.dtype), response_mask),
    }


@POLICY_LOSSES.register("gspo")
def policy_loss_gspo(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2, norm_len: int | None = None, **kwargs: Any,
) -> dict[str, Tensor]:
    """GSPO (arXiv 2507.18071): one importance ratio per *sequence*, the geometric mean of the token ratios.

    Token ``t`` of sequence ``i`` uses ``s_i * pi(y_t) / sg[pi(y_t)]`` with
    ``s_i = exp(mean_t(log_prob - old_log_prob))`` detached, so the value is the sequence ratio
    while the gradient still flows per token.  Like verl, the loss is always aggregated
    ``seq-mean-token-mean`` whatever ``loss_agg_mode`` says; use small clip ranges (e.g. 3e-4/4e-4).

    Returns: as :func:`policy_loss_vanilla`, ``pg_clipfrac_lower`` is always 0.
    """
    adv = _valid(advantages, response_mask)
    neg_kl = _valid(log_prob - old_log_prob, response_mask)
    mask = response_mask.to(neg_kl.dtype)
    seq_neg_kl = neg_kl.sum(-1) / mask.sum(-1).clamp(min=1)
    lp = _valid(log_prob, response_mask)
    log_ratio = torch.clamp(lp - lp.detach() + seq_neg_kl.detach().unsqueeze(-1), max=10.0)
    ratio = torch.exp(log_ratio)
    losses1 = -adv * ratio
    losses2 = -adv * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    pg_losses = torch.maximum(losses1, losses2)
    return {
        "pg_loss": agg_loss(pg_losses, response_mask, "seq-mean-token-mean"),
        "pg_clipfrac": masked_mean((losses2 > losses1).to(ratio.dtype), response_mask),
        "ppo_kl": masked_mean(-neg_kl, response_mask),
        "pg_clipfrac_lower": torch.zeros((), dtype=ratio.dtype, device=ratio.device),
    }


@POLICY_LOSSES.register("gpg", "reinforce")
def policy_loss_gpg(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    loss_agg_mode: str = "token-mean", norm_len: int | None = None, **kwargs: Any,
) -> dict[str, Tensor]:
    """Plain policy gradient ``-A * log_prob`` (GPG / REINFORCE): no ratio, no clipping.

    Returns: as :func:`policy_loss_vanilla`; clip fractions are 0, ``ppo_kl`` is still reported.
    """
    adv = _valid(advantages, response_mask)
    lp = _valid(log_prob, response_mask)
    zero = torch.zeros((), dtype=lp.dtype, device=lp.device)
    return {
        "pg_loss": agg_loss(-adv * lp, response_mask, loss_agg_mode, norm_len=norm_len),
        "pg_clipfrac": zero,
        "ppo_kl": masked_mean(-_valid(log_prob - old_log_prob, response_mask), response_mask),
        "pg_clipfrac_lower": zero.clone(),
    }


def _as_loss_dict(loss_name: str, result: Any, ref: Tensor) -> dict[str, Tensor]:
    """Normalise a loss function's return value to ``{pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower}``."""
    if isinstance(result, (tuple, list)):
        if len(result) != 4:
            raise ValueError(
                f"policy loss {loss_name!r} returned a {len(result)}-tuple; expected a dict with 'pg_loss' "
                "or (pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower)"
            )
        result = dict(zip(("pg_loss", *_METRIC_KEYS), result))
    if not isinstance(result, dict) or "pg_loss" not in result:
        raise ValueError(f"policy loss {loss_name!r} must return a dict with 'pg_loss', got {type(result).__name__}")
    out = dict(result)
    for key in _METRIC_KEYS:
        value = out.get(key)
        if value is None:
            value = torch.zeros((), dtype=ref.dtype, device=ref.device)
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
    clip_ratio: float = 0.2,
    clip_ratio_low: float | None = None,
    clip_ratio_high: float | None = None,
    clip_ratio_c: float = 3.0,
    loss_agg_mode: str = "token-mean",
    loss_name: str = "vanilla",
    norm_len: int | None = None,
    **kwargs: Any,
) -> dict[str, Tensor]:
    """The actor's policy-gradient loss, computed by the loss registered as ``loss_name``.

    Args:
        old_log_prob: ``(bs, T)`` log-probs of the rollout policy (no grad).
        log_prob: ``(bs, T)`` log-probs of the policy being trained (with grad).
        advantages: ``(bs, T)``.
        response_mask: ``(bs, T)``.
        clip_ratio: symmetric PPO clip; ``clip_ratio_low``/``clip_ratio_high`` override each
            side (DAPO clip-higher, e.g. 0.2/0.28).
        clip_ratio_c: dual-clip bound (> 1) applied to negative advantages.
        loss_agg_mode: see :func:`rlcockpit.algos.agg_loss`.
        loss_name: ``vanilla`` (alias ``ppo``), ``gspo``, ``gpg`` (alias ``reinforce``) or a
            user-registered name.
        norm_len: divisor for ``seq-mean-token-sum-norm`` (default ``T``).
        **kwargs: forwarded to custom losses.

    Returns:
        ``{"pg_loss": scalar with grad, "pg_clipfrac", "ppo_kl", "pg_clipfrac_lower": detached scalars}``
        (a custom loss may add more keys).

    Raises:
        KeyError: unknown ``loss_name`` (names the closest one).
        ValueError: mismatched shapes or ``clip_ratio_c <= 1``.
    """
    fn = POLICY_LOSSES.get(loss_name)
    check_same_shape(f"compute_policy_loss({loss_name!r})", "log_prob", log_prob,
                     old_log_prob=old_log_prob, advantages=advantages, response_mask=response_mask)
    result = fn(
        old_log_prob, log_prob, advantages, response_mask,
        clip_ratio_low=clip_ratio if clip_ratio_low is None else clip_ratio_low,
        clip_ratio_high=clip_ratio if clip_ratio_high is None else clip_ratio_high,
        clip_ratio_c=clip_ratio_c,
        loss_agg_mode=loss_agg_mode,
        norm_len=norm_len,
        **kwargs,
    )
    return _as_loss_dict(loss_name, result, log_prob)


def compute_value_loss(
    vpreds: Tensor,
    returns: Tensor,
    values: Tensor,
    response_mask: Tensor,
    *,
    cliprange_value: float = 0.5,
    loss_agg_mode: str = "token-mean",
    norm_len: int | None = None,
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

    Returns:
        ``(vf_loss scalar with grad, vf_clipfrac detached scalar)``: the clip fraction is the
        share of valid tokens where the clipped branch was larger.
    """
    check_same_shape("compute_value_loss", "vpreds", vpreds, returns=returns, values=values,
                     response_mask=response_mask)
    vp = _valid(vpreds, response_mask)
    ret = _valid(returns, response_mask)
    old = _valid(values, response_mask)
    vp_clipped = torch.maximum(torch.minimum(vp, old + cliprange_value), old - cliprange_value)
    losses1 = (vp - ret) ** 2
    losses2 = (vp_clipped - ret) ** 2
    vf_loss = 0.5 * agg_loss(torch.maximum(losses1, losses2), response_mask, loss_agg_mode, norm_len=norm_len)
    vf_clipfrac = masked_mean((losses2 > losses1).to(vp.dtype), response_mask).detach()
    return vf_loss, vf_clipfrac


def compute_entropy_bonus(
    entropy: Tensor, response_mask: Tensor, loss_agg_mode: str = "token-mean", *, norm_len: int | None = None
) -> Tensor:
    """Aggregate per-token entropy ``(bs, T)`` into the scalar the trainer subtracts (times ``entropy_coeff``)."""
    return agg_loss(entropy, response_mask, loss_agg_mode, norm_len=norm_len)
