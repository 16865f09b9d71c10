"""Diagnostics of the rollout/training policy mismatch, under verl 0.9's metric names (without the prefix).

:func:`rlcockpit.algos.compute_rollout_correction_and_rejection_mask` prefixes them ``rollout_corr/``.
Every statistic is taken over the response mask; all tensors are ``(bs, T)``.  verl documents a run as
unhealthy when ``rollout_is_mean`` leaves [0.5, 2], ``rollout_is_eff_sample_size`` < 0.3,
``rollout_is_std`` > 1, ``|kl|`` > 0.1 or ``chi2_token`` > 1 (see the metric guide).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from rlcockpit.algos.core import masked_mean, masked_sum

__all__ = ["SAFETY_BOUND", "compute_is_metrics", "compute_offpolicy_metrics", "compute_rs_metrics"]

# exp(+-20) bounds every exponentiated log-ratio (~5e8 / 2e-9), as verl's rollout_corr_helper.
SAFETY_BOUND = 20.0


def _masked_max(x: Tensor, mask: Tensor) -> float:
    return float(x.masked_fill(~mask.bool(), float("-inf")).max())


def _masked_min(x: Tensor, mask: Tensor) -> float:
    return float(x.masked_fill(~mask.bool(), float("inf")).min())


def _clamped_std(x: Tensor, mask: Tensor, low: float, high: float) -> float:
    """Masked std of ``x`` clamped to ``[low, high]`` (one outlier cannot make it explode); 0 for < 2 tokens."""
    if float(mask.sum()) <= 1:
        return 0.0
    clamped = x.clamp(min=low, max=high)
    var = masked_mean(clamped.square(), mask) - masked_mean(clamped, mask).square()
    return float(torch.sqrt(torch.clamp(var, min=0.0)))


def _frac(cond: Tensor) -> float:
    return float(cond.to(torch.float32).mean())


def compute_is_metrics(rollout_is_weights: Tensor, raw_rollout_is_weights: Tensor, log_ratio_for_metrics: Tensor,
                       response_mask: Tensor, rollout_is: str, rollout_is_threshold: float,
                       rollout_is_threshold_lower: float | None = None) -> dict[str, float]:
    """Statistics of the applied (truncated) IS weights; the ``_fraction_*`` use the raw weights.

    ``log_ratio_for_metrics`` is the token log-ratio (``token``) or the per-sequence sum ``(bs, 1)``
    (``sequence``).  Keys: ``rollout_is_{mean,max,min,std,eff_sample_size,ratio_fraction_high,
    ratio_fraction_low}`` and the per-sequence ``rollout_is_seq_{mean,std,max,min,max_deviation,
    fraction_high,fraction_low}``.
    """
    if not response_mask.any():
        raise ValueError("response_mask must contain at least one valid token (1).")
    upper = float(rollout_is_threshold)
    lower = 1.0 / upper if rollout_is_threshold_lower is None else float(rollout_is_threshold_lower)
    m: dict[str, float] = {"rollout_is_mean": float(masked_mean(rollout_is_weights, response_mask))}
    if rollout_is == "sequence":
        m["rollout_is_max"] = math.exp(min(float(log_ratio_for_metrics.max()), SAFETY_BOUND))
        m["rollout_is_min"] = math.exp(float(log_ratio_for_metrics.min()))
        m["rollout_is_ratio_fraction_high"] = _frac(log_ratio_for_metrics > math.log(upper))
        m["rollout_is_ratio_fraction_low"] = _frac(log_ratio_for_metrics < math.log(lower))
    else:
        m["rollout_is_ratio_fraction_high"] = float(masked_mean((raw_rollout_is_weights > upper).float(), response_mask))
        m["rollout_is_ratio_fraction_low"] = float(masked_mean((raw_rollout_is_weights < lower).float(), response_mask))
        m["rollout_is_max"] = _masked_max(rollout_is_weights, response_mask)
        m["rollout_is_min"] = _masked_min(rollout_is_weights, response_mask)
    m["rollout_is_std"] = _clamped_std(rollout_is_weights, response_mask, 0.0, upper)
    w = rollout_is_weights.clamp(min=0.0, max=upper)
    normalised = w / (masked_mean(w, response_mask) + 1e-8)
    m["rollout_is_eff_sample_size"] = 1.0 / float(masked_mean(normalised.square(), response_mask))
    seq_w = masked_mean(rollout_is_weights, response_mask, dim=-1)
    m["rollout_is_seq_mean"] = float(seq_w.mean())
    m["rollout_is_seq_std"] = float(seq_w.std()) if seq_w.numel() > 1 else 0.0
    m["rollout_is_seq_max"] = float(seq_w.max())
    m["rollout_is_seq_min"] = float(seq_w.min())
    m["rollout_is_seq_max_deviation"] = float((seq_w - 1.0).abs().max())
    # raw per-sequence means: a mean of truncated weights can never pass the threshold
    raw_seq = masked_mean(raw_rollout_is_weights, response_mask, dim=-1)
    m["rollout_is_seq_fraction_high"] = _frac(raw_seq > upper)
    m["rollout_is_seq_fraction_low"] = _frac(raw_seq < lower)
    return m


def compute_rs_metrics(option_name: str, rs_statistic: Tensor, response_mask: Tensor, seq_valid_mask: Tensor, *,
                       level: str, per_sequence_values: Tensor | None, rollout_rs_threshold: float,
                       rollout_rs_threshold_lower: float, apply_lower_threshold: bool) -> dict[str, float]:
    """Statistics of one rejection criterion, keys ``rollout_rs_<option>_{mean,max,min,std,fraction_high,...}``.

    ``rs_statistic`` is the per-token statistic (sequence options broadcast their per-sequence value);
    the thresholds are in the statistic's own units (log-ratios for the ``*_k1`` options).
    """
    if not response_mask.any():
        raise ValueError("response_mask must contain at least one valid token (1).")
    p = f"rollout_rs_{option_name}"
    upper, lower = float(rollout_rs_threshold), float(rollout_rs_threshold_lower)
    seq = per_sequence_values if per_sequence_values is not None else masked_mean(rs_statistic, response_mask, dim=-1)
    seq = seq.reshape(-1)[seq_valid_mask.reshape(-1)]
    by_seq = level == "sequence" and seq.numel() > 0
    m: dict[str, float] = {f"{p}_mean": float(masked_mean(rs_statistic, response_mask))}
    if by_seq:
        m[f"{p}_max"], m[f"{p}_min"] = float(seq.max()), float(seq.min())
        m[f"{p}_fraction_high"] = _frac(seq > upper)
        m[f"{p}_fraction_low"] = _frac(seq < lower) if apply_lower_threshold else 0.0
    else:
        m[f"{p}_max"] = _masked_max(rs_statistic, response_mask)
        m[f"{p}_min"] = _masked_min(rs_statistic, response_mask)
        m[f"{p}_fraction_high"] = float(masked_mean((rs_statistic > upper).float(), response_mask))
        m[f"{p}_fraction_low"] = (float(masked_mean((rs_statistic < lower).float(), response_mask))
                                  if apply_lower_threshold else 0.0)
    m[f"{p}_std"] = _clamped_std(rs_statistic, response_mask, lower if apply_lower_threshold else 0.0, upper)
    if seq.numel() > 0:
        m[f"{p}_seq_mean"] = float(seq.mean())
        m[f"{p}_seq_std"] = float(seq.std()) if seq.numel() > 1 else 0.0
        m[f"{p}_seq_max"], m[f"{p}_seq_min"] = float(seq.max()), float(seq.min())
        m[f"{p}_seq_max_deviation"] = float(seq.abs().max())
        m[f"{p}_seq_fraction_high"] = _frac(seq > upper)
        if apply_lower_threshold:
            m[f"{p}_seq_fraction_low"] = _frac(seq < lower)
    else:
        for key in ("seq_mean", "seq_std", "seq_max", "seq_min", "seq_max_deviation", "seq_fraction_high",
                    "seq_fraction_low"):
            m[f"{p}_{key}"] = 0.0
    return m


def compute_offpolicy_metrics(old_log_prob: Tensor, rollout_log_prob: Tensor | None,
                              response_mask: Tensor) -> dict[str, float]:
    """How far the training policy (``old_log_prob``) is from the policy that sampled (``rollout_log_prob``).

    Keys: ``training_ppl``, ``training_log_ppl`` and, with rollout log-probs, ``kl`` (``KL(rollout || train)``,
    k1), ``k3_kl``, ``rollout_ppl``, ``rollout_log_ppl``, ``log_ppl_diff`` (+ ``_abs_diff``, ``_max``,
    ``_min``), ``ppl_ratio``, ``chi2_token`` (``E[rho^2] - 1``) and ``chi2_seq`` (``E[prod(rho)^2] - 1``).
    Perplexities are per sequence, then averaged over the batch.
    """
    if not response_mask.any():
        raise ValueError("response_mask must contain at least one valid token (1).")
    mean_train = masked_mean(old_log_prob, response_mask, dim=-1)
    m: dict[str, float] = {"training_ppl": float(torch.exp(-mean_train).mean()),
                           "training_log_ppl": float((-mean_train).mean())}
    if rollout_log_prob is None:
        return m
    log_ratio = old_log_prob - rollout_log_prob
    m["kl"] = float(masked_mean(rollout_log_prob - old_log_prob, response_mask))
    m["k3_kl"] = float(masked_mean(torch.exp(log_ratio) - log_ratio - 1, response_mask))
    mean_rollout = masked_mean(rollout_log_prob, response_mask, dim=-1)
    m["rollout_ppl"] = float(torch.exp(-mean_rollout).mean())
    m["rollout_log_ppl"] = float((-mean_rollout).mean())
    diff = mean_rollout - mean_train
    m["log_ppl_diff"] = float(diff.mean())
    m["log_ppl_abs_diff"] = float(diff.abs().mean())
    m["log_ppl_diff_max"], m["log_ppl_diff_min"] = float(diff.max()), float(diff.min())
    m["ppl_ratio"] = float(torch.exp(diff).mean())
    rho = torch.exp(torch.clamp(log_ratio, -SAFETY_BOUND, SAFETY_BOUND))
    m["chi2_token"] = float(masked_mean(rho.square(), response_mask)) - 1.0
    seq_log_ratio = torch.clamp(masked_sum(log_ratio, response_mask, dim=-1), -SAFETY_BOUND, SAFETY_BOUND)
    m["chi2_seq"] = float(torch.exp(2.0 * seq_log_ratio).mean()) - 1.0
    return m
