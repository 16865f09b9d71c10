"""Rollout correction (verl 0.9's ``algorithm.rollout_correction``): importance weights and rejection for
the gap between the policy that *sampled* a batch (the rollout engine: vLLM, bf16, a stale checkpoint)
and the policy being trained.

* IS weights ``rho = pi_train / pi_rollout`` per token (``rollout_is=token``) or per sequence
  (``sequence``: the product of the token ratios), truncated at ``rollout_is_threshold`` (TIS) or, for a
  ``"lower_upper"`` threshold, zeroed outside ``[lower, upper]`` (IcePop); optionally normalised to mean 1.
* Rejection sampling (``rollout_rs``, comma-separated criteria, all must pass) masks tokens or whole
  sequences whose divergence ``k1 = -log rho``, ``k2 = (log rho)^2 / 2`` or ``k3 = rho - 1 - log rho``
  (per token, or the sum / mean / max over a sequence) leaves the threshold.
* ``bypass_mode``: no separate old-policy pass; the rollout log-probs serve as ``old_log_prob`` and the loss
  (PPO-clip, or REINFORCE with explicit weights) computes the correction against the policy being trained.

Metrics are verl's ``rollout_corr/*`` keys (see :mod:`rlcockpit.algos.rollout_corr_metrics`).
All tensors are ``(bs, T)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from rlcockpit.algos.core import masked_mean, masked_sum
from rlcockpit.algos.losses import POLICY_LOSSES, GlobalBatchInfo, policy_loss_reinforce, policy_loss_vanilla
from rlcockpit.algos.rollout_corr_metrics import (
    SAFETY_BOUND,
    compute_is_metrics,
    compute_offpolicy_metrics,
    compute_rs_metrics,
)

__all__ = [
    "ROLLOUT_IS_LEVELS",
    "ROLLOUT_RS_OPTIONS",
    "compute_rollout_corr_metrics_from_logprobs",
    "compute_rollout_correction_and_rejection_mask",
    "compute_rollout_correction_weights",
    "compute_rollout_rejection_mask",
    "policy_loss_bypass_mode",
]

ROLLOUT_IS_LEVELS = ("token", "sequence")
ROLLOUT_RS_OPTIONS = ("token_k1", "token_k2", "token_k3", "seq_sum_k1", "seq_sum_k2", "seq_sum_k3",
                      "seq_mean_k1", "seq_mean_k2", "seq_mean_k3", "seq_max_k2", "seq_max_k3")


def parse_is_threshold(spec: str | float) -> tuple[float, float | None]:
    """``2.0`` / ``"2.0"`` -> (2.0, None) (truncate); ``"0.5_5.0"`` -> (5.0, 0.5) (IcePop bounds)."""
    if isinstance(spec, bool) or not isinstance(spec, (int, float, str)):
        raise TypeError(f"rollout_is_threshold must be a float or a 'lower_upper' string, got {spec!r}")
    text = str(spec).strip()
    if not text:
        raise ValueError("rollout_is_threshold must not be an empty string.")
    try:
        lower, upper = (float(x) for x in text.split("_", 1)) if "_" in text else (None, float(text))
    except ValueError as exc:
        raise ValueError(f"Invalid rollout_is_threshold {spec!r}.") from exc
    if upper <= 0 or (lower is not None and lower <= 0):
        raise ValueError(f"rollout_is_threshold bounds must be positive, got {spec!r}.")
    if lower is not None and lower > upper:
        raise ValueError(f"rollout_is_threshold lower bound must be <= upper bound, got {spec!r}.")
    return upper, lower


def parse_rs_thresholds(options: list[str], spec: str | float | None) -> dict[str, tuple[float | None, float]]:
    """One ``(lower, upper)`` per option: one shared value or one per option (comma-separated).

    ``*_k1`` options take ratio bounds ``"lower_upper"`` (a single value ``u`` means ``1/u .. u``); k2/k3
    options a single upper bound.
    """
    if spec is None:
        raise ValueError("rollout_rs_threshold must be provided for rejection sampling.")
    if isinstance(spec, bool) or not isinstance(spec, (int, float, str)):
        raise TypeError("rollout_rs_threshold must be a string or numeric value specifying per-option thresholds.")
    specs = [str(spec)] if not isinstance(spec, str) else [p.strip() for p in spec.split(",") if p.strip()]
    if len(specs) not in (1, len(options)):
        raise ValueError(f"rollout_rs_threshold expects one threshold shared by all options or exactly "
                         f"{len(options)} thresholds to match the rollout_rs options.")
    specs = specs * len(options) if len(specs) == 1 else specs
    out: dict[str, tuple[float | None, float]] = {}
    for option, text in zip(options, specs):
        try:
            if option.endswith("k1"):
                lo_s, hi_s = text.split("_", 1) if "_" in text else (str(1.0 / float(text)), text)
                lower, upper = float(lo_s), float(hi_s)
            elif "_" in text:
                raise ValueError(f"rollout_rs_threshold for option {option!r} takes a single upper bound, got {text!r}")
            else:
                lower, upper = None, float(text)
        except ValueError as exc:
            raise ValueError(f"Invalid threshold {text!r} for rollout_rs option {option!r}: {exc}") from exc
        if upper <= 0 or (lower is not None and (lower <= 0 or lower > upper)):
            raise ValueError(f"Thresholds for rollout_rs option {option!r} must be positive with lower <= upper, "
                             f"got {text!r}.")
        out[option] = (lower, upper)
    return out


def parse_rs_options(rollout_rs: str) -> list[str]:
    """``"token_k1,seq_mean_k3"`` -> the distinct options in order; unknown ones raise ``ValueError``."""
    if not isinstance(rollout_rs, str) or not rollout_rs.strip():
        raise ValueError("rollout_rs must be a non-empty string (comma separated for multiple options).")
    options = list(dict.fromkeys(o.strip() for o in rollout_rs.split(",") if o.strip()))
    bad = [o for o in options if o not in ROLLOUT_RS_OPTIONS]
    if bad:
        raise ValueError(f"Invalid rollout_rs option: {bad[0]}. Must be one of {sorted(ROLLOUT_RS_OPTIONS)}.")
    return options


def compute_rollout_correction_weights(log_ratio: Tensor, response_mask: Tensor, rollout_is: str = "token",
                                       rollout_is_threshold: str | float = 2.0,
                                       rollout_is_batch_normalize: bool = False) -> tuple[Tensor, dict[str, float]]:
    """Truncated (TIS) or bounded (IcePop) importance weights from ``log_ratio = log pi_train - log pi_rollout``.

    Returns ``(weights (bs, T), metrics)``: weights detached and 0 on padding; with
    ``rollout_is_batch_normalize`` divided by their mean (per token or per sequence), the factor logged as
    ``rollout_is_batch_norm_factor``.  Metrics describe the weights before that normalisation.
    """
    if rollout_is not in ROLLOUT_IS_LEVELS:
        raise ValueError(f"Invalid rollout_is: {rollout_is}. Must be one of {set(ROLLOUT_IS_LEVELS)}.")
    upper, lower = parse_is_threshold(rollout_is_threshold)
    mask = response_mask.to(log_ratio.dtype)
    if rollout_is == "token":
        for_metrics = log_ratio
        raw = torch.exp(torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND))
    else:
        for_metrics = masked_sum(log_ratio, response_mask, dim=-1).unsqueeze(-1)
        raw = torch.exp(torch.clamp(for_metrics, -SAFETY_BOUND, SAFETY_BOUND)).expand_as(log_ratio)
    raw = torch.where(response_mask != 0, raw, torch.zeros_like(raw)) * mask
    if lower is None:
        weights = raw.clamp(max=upper)
    else:
        weights = torch.where((raw >= lower) & (raw <= upper), raw, torch.zeros_like(raw))
    metrics = compute_is_metrics(weights, raw, for_metrics, response_mask, rollout_is, upper, lower)
    if lower is not None:
        metrics["rollout_is_oob_ratio"] = float(masked_mean(((raw < lower) | (raw > upper)).float(), response_mask))
    weights = weights.detach()
    if rollout_is_batch_normalize:
        if rollout_is == "token":
            mean = masked_mean(weights, response_mask)
        else:
            seq_mask = (mask.sum(-1) > 0).to(weights.dtype)
            mean = (masked_mean(weights, response_mask, dim=-1) * seq_mask).sum() / seq_mask.sum().clamp(min=1e-8)
        if float(mean) > 1e-8:
            weights = weights / mean
            metrics["rollout_is_batch_norm_factor"] = float(mean)
        else:
            metrics["rollout_is_batch_norm_factor"] = 1.0
    return weights, metrics


def _seq_max(values: Tensor, mask: Tensor) -> Tensor:
    best = values.masked_fill(~mask.bool(), float("-inf")).max(dim=-1).values
    return torch.where(torch.isinf(best) & (best < 0), torch.zeros_like(best), best)


def _option_keep(option: str, stats: dict[str, Tensor], mask: Tensor, bounds: tuple[float | None, float]
                 ) -> tuple[Tensor, Tensor, Tensor | None, float, float]:
    """(token keep (bs, T) bool, per-token statistic, per-sequence statistic or None, upper, lower) in stat units."""
    level, kind = option.rsplit("_", 1)
    lower, upper = bounds
    if kind == "k1":
        lo, hi = math.log(lower), math.log(upper)  # type: ignore[arg-type]
    else:
        lo, hi = 0.0, upper
    token_stat = stats[kind]
    if level == "token":
        seq_stat, stat = None, token_stat
    else:
        reduce = {"seq_sum": lambda v: masked_sum(v, mask, dim=-1), "seq_mean": lambda v: masked_mean(v, mask, dim=-1),
                  "seq_max": lambda v: _seq_max(v, mask)}[level]
        seq_stat = reduce(token_stat)
        stat = seq_stat.unsqueeze(-1).expand_as(token_stat)
    keep = (stat >= lo) & (stat <= hi) if kind == "k1" else stat <= hi
    return keep, stat, seq_stat, hi, lo


def compute_rollout_rejection_mask(log_ratio: Tensor, response_mask: Tensor, rollout_rs: str = "token_k1",
                                   rollout_rs_threshold: str | float | None = None) -> tuple[Tensor, dict[str, float]]:
    """Mask tokens / sequences whose divergence estimate leaves its threshold (a hard trust region).

    Returns ``(response_mask with rejections set to 0, metrics)``: per option ``rollout_rs_<option>_*``
    statistics and ``_masked_fraction`` / ``_seq_masked_fraction``, overall ``rollout_rs_masked_fraction``
    (share of valid tokens rejected) and ``rollout_rs_seq_masked_fraction`` (share of sequences with any).
    """
    options = parse_rs_options(rollout_rs)
    bounds = parse_rs_thresholds(options, rollout_rs_threshold)
    if log_ratio.shape[0] == 0:
        return response_mask, {}
    safe = torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND)
    stats = {"k1": -safe, "k2": 0.5 * safe.square(), "k3": torch.exp(safe) - 1.0 - safe}
    mask_bool = response_mask.bool()
    seq_valid = response_mask.sum(dim=-1) > 0
    combined = torch.ones_like(response_mask, dtype=log_ratio.dtype)
    metrics: dict[str, float] = {}
    for option in options:
        keep, stat, seq_stat, hi, lo = _option_keep(option, stats, response_mask, bounds[option])
        is_k1 = option.endswith("k1")
        metrics.update(compute_rs_metrics(option, stat, response_mask, seq_valid,
                                          level="token" if option.startswith("token") else "sequence",
                                          per_sequence_values=seq_stat, rollout_rs_threshold=hi,
                                          rollout_rs_threshold_lower=lo if is_k1 else 0.0,
                                          apply_lower_threshold=is_k1))
        keep_f = keep.to(log_ratio.dtype)
        combined = combined * keep_f
        seq_kept = (~(~keep & mask_bool)).all(dim=-1).to(log_ratio.dtype)
        n_valid = seq_valid.to(log_ratio.dtype).sum()
        metrics[f"rollout_rs_{option}_masked_fraction"] = float(masked_mean(1 - keep_f, response_mask))
        metrics[f"rollout_rs_{option}_seq_masked_fraction"] = (
            float(((1.0 - seq_kept) * seq_valid).sum() / n_valid) if n_valid > 0 else 0.0)
    metrics["rollout_rs_masked_fraction"] = float(masked_mean(1 - combined, response_mask))
    kept = (combined > 0.5) & mask_bool
    metrics["rollout_rs_seq_masked_fraction"] = float((~kept & mask_bool).any(dim=-1).float().mean())
    return (response_mask * combined).to(response_mask.dtype), metrics


def compute_rollout_correction_and_rejection_mask(
    old_log_prob: Tensor,
    rollout_log_prob: Tensor,
    response_mask: Tensor,
    rollout_is: str | None = None,
    rollout_is_threshold: str | float | None = 2.0,
    rollout_is_batch_normalize: bool = False,
    rollout_rs: str | None = None,
    rollout_rs_threshold: str | float | None = None,
) -> tuple[Tensor | None, Tensor, dict[str, float]]:
    """IS weights, rejection mask and mismatch metrics in one call (verl's function of the same name).

    Args:
        old_log_prob: ``(bs, T)`` log-probs under the training policy (FSDP fp32 in verl; the trainer's
            own forward pass here).
        rollout_log_prob: ``(bs, T)`` log-probs the rollout engine reported for the sampled tokens.
        response_mask: ``(bs, T)``; must hold at least one valid token.
        rollout_is: ``None`` (no weights, metrics only), ``token`` or ``sequence``.
        rollout_is_threshold: ``2.0`` (truncate at 2) or ``"0.5_5.0"`` (IcePop: zero outside the bounds).
        rollout_is_batch_normalize: rescale the weights to mean 1.
        rollout_rs: comma-separated rejection criteria (:data:`ROLLOUT_RS_OPTIONS`) or ``None``.
        rollout_rs_threshold: one threshold per criterion (or one for all); required with ``rollout_rs``.

    Returns:
        ``(rollout_is_weights (bs, T) or None, modified response_mask, metrics)``; the metric keys carry
        the ``rollout_corr/`` prefix.  (verl wraps the weights in a ``DataProto``; here it is the tensor.)
    """
    if not response_mask.any():
        raise ValueError("response_mask must contain at least one valid token (1).")
    if old_log_prob.shape != rollout_log_prob.shape:
        raise ValueError(f"old_log_prob shape {tuple(old_log_prob.shape)} does not match rollout_log_prob shape "
                         f"{tuple(rollout_log_prob.shape)}.")
    if old_log_prob.shape != response_mask.shape:
        raise ValueError(f"log_prob shape {tuple(old_log_prob.shape)} does not match response_mask shape "
                         f"{tuple(response_mask.shape)}.")
    log_ratio = old_log_prob - rollout_log_prob
    metrics: dict[str, float] = {}
    weights = None
    if rollout_is is not None and rollout_is_threshold is not None:
        weights, is_metrics = compute_rollout_correction_weights(log_ratio, response_mask, rollout_is,
                                                                 rollout_is_threshold, rollout_is_batch_normalize)
        metrics.update(is_metrics)
    modified = response_mask.clone()
    if rollout_rs is not None:
        if rollout_rs_threshold is None:
            raise ValueError("rollout_rs_threshold must be explicitly provided when rollout_rs is enabled.")
        modified, rs_metrics = compute_rollout_rejection_mask(log_ratio, response_mask, rollout_rs,
                                                              rollout_rs_threshold)
        metrics.update(rs_metrics)
    metrics.update(compute_offpolicy_metrics(old_log_prob, rollout_log_prob, response_mask))
    return weights, modified, {f"rollout_corr/{k}": float(v) for k, v in metrics.items()}


def compute_rollout_corr_metrics_from_logprobs(log_prob: Tensor, rollout_log_prob: Tensor,
                                               response_mask: Tensor) -> dict[str, float]:
    """The ``rollout_corr/*`` mismatch metrics (KL, PPL, chi2) of the current policy vs the rollout's log-probs."""
    return {f"rollout_corr/{k}": v for k, v in
            compute_offpolicy_metrics(log_prob.detach(), rollout_log_prob, response_mask).items()}


@POLICY_LOSSES.register("bypass_mode")
def policy_loss_bypass_mode(
    old_log_prob: Tensor, log_prob: Tensor, advantages: Tensor, response_mask: Tensor, *,
    loss_type: str = "ppo_clip", rollout_is: str | None = None, rollout_is_threshold: str | float | None = 2.0,
    rollout_is_batch_normalize: bool = False, rollout_rs: str | None = None,
    rollout_rs_threshold: str | float | None = None, clip_ratio_low: float = 0.2, clip_ratio_high: float = 0.2,
    clip_ratio_c: float = 3.0, loss_agg_mode: str = "token-mean", global_batch_info: GlobalBatchInfo = None,
) -> dict[str, Tensor]:
    """verl's bypass mode (``algorithm.rollout_correction.bypass_mode=true``): ``old_log_prob`` *is* the rollout's.

    The correction is computed here against the policy being trained (``log_prob``, no grad): its
    rejection mask always applies; with ``loss_type=reinforce`` the IS weights multiply
    ``-A log_prob`` (:func:`policy_loss_reinforce`), with ``ppo_clip`` (default) PPO's ratio already is
    ``pi / pi_rollout`` so the weights are only measured, not applied.  Precomputed
    ``rollout_is_weights`` are therefore refused.

    Returns: the inner loss's metrics plus the ``rollout_corr/*`` metrics.
    """
    if loss_type not in ("ppo_clip", "reinforce"):
        raise ValueError(f"Invalid loss_type: {loss_type}. Must be 'reinforce' or 'ppo_clip'.")
    with torch.no_grad():
        weights, mask, corr_metrics = compute_rollout_correction_and_rejection_mask(
            log_prob.detach(), old_log_prob, response_mask, rollout_is=rollout_is,
            rollout_is_threshold=rollout_is_threshold, rollout_is_batch_normalize=rollout_is_batch_normalize,
            rollout_rs=rollout_rs, rollout_rs_threshold=rollout_rs_threshold)
    if loss_type == "reinforce":
        out = policy_loss_reinforce(old_log_prob, log_prob, advantages, mask, loss_agg_mode=loss_agg_mode,
                                    global_batch_info=global_batch_info, rollout_is_weights=weights)
    else:
        out = policy_loss_vanilla(old_log_prob, log_prob, advantages, mask, clip_ratio_low=clip_ratio_low,
                                  clip_ratio_high=clip_ratio_high, clip_ratio_c=clip_ratio_c,
                                  loss_agg_mode=loss_agg_mode, global_batch_info=global_batch_info)
    ref = out["pg_loss"]
    out.update({k: torch.tensor(v, dtype=ref.dtype, device=ref.device) for k, v in corr_metrics.items()})
    return out
