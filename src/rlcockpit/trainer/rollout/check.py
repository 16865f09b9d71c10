"""Rollout-vs-trainer log-prob agreement, under verl's keys (``verl/utils/debug/metrics.py``).

An inference engine (vLLM) and the training forward pass compute the same policy with different
kernels; when they drift apart (stale weights after a failed sync, bf16 kernels, a top-k mask) the
"on-policy" update silently becomes off-policy.  verl logs the gap on every step; so does rlcockpit, and
the health engine's rollout-mismatch detector reads ``training/rollout_probs_diff_mean``.
"""

from __future__ import annotations

import math

import torch


def rollout_probs_metrics(rollout_log_probs: torch.Tensor, actor_log_probs: torch.Tensor,
                          response_mask: torch.Tensor) -> dict[str, float]:
    """|p_rollout - p_actor| statistics and their Pearson correlation over response tokens, all (bs, T).

    As verl: probabilities (not log-probs) are compared, so rare tokens with a large log-prob gap but a
    tiny probability do not dominate; ``..._valid`` is 0 when there is no response token to compare.
    """
    mask = response_mask.bool()
    if not bool(mask.any()):
        nan = float("nan")
        return {"training/rollout_probs_diff_valid": 0.0, "training/rollout_probs_diff_max": nan,
                "training/rollout_probs_diff_mean": nan, "training/rollout_probs_diff_std": nan,
                "training/rollout_actor_probs_pearson_corr": nan}
    p_roll = torch.exp(rollout_log_probs.float())[mask]
    p_act = torch.exp(actor_log_probs.detach().float())[mask]
    diff = (p_act - p_roll).abs()
    corr = float(torch.corrcoef(torch.stack([p_act, p_roll]))[0, 1]) if p_act.numel() > 1 else float("nan")
    return {"training/rollout_probs_diff_valid": 1.0,
            "training/rollout_probs_diff_max": float(diff.max()),
            "training/rollout_probs_diff_mean": float(diff.mean()),
            "training/rollout_probs_diff_std": float(diff.std()) if diff.numel() > 1 else 0.0,
            "training/rollout_actor_probs_pearson_corr": corr if math.isfinite(corr) else float("nan")}
