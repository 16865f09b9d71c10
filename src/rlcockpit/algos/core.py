"""Masked tensor arithmetic shared by every RL algorithm in :mod:`rlcockpit.algos`.

Responses in a batch have different lengths, so every statistic is taken over a mask.  The
helpers here guarantee one property the rest of the package relies on: **a position whose mask
is 0 never influences a result**, even when its value is ``nan``/``inf`` (padding garbage).  They
also never divide by zero: a fully masked reduction yields 0 rather than ``nan``.

Shapes: ``bs`` = batch size (number of responses), ``T`` = padded response length,
``V`` = vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch
from torch import Tensor

from rlcockpit.registry import Registry

__all__ = [
    "LOSS_AGG_MODES",
    "agg_loss",
    "entropy_from_logits",
    "group_ids",
    "logprobs_from_logits",
    "masked_mean",
    "masked_sum",
    "masked_var",
    "masked_whiten",
    "scores_to_token_level",
]

# Loss aggregation: (loss_mat (bs, T), loss_mask (bs, T), norm_len) -> scalar.
AggFn = Callable[[Tensor, Tensor, int], Tensor]
LOSS_AGG_MODES: Registry[AggFn] = Registry("loss_agg_mode")

# Rows processed at once when log-probs/entropy are upcast from half precision (bounds the
# transient float32 copy of the logits to roughly this many elements).
_UPCAST_CHUNK_ELEMENTS = 1 << 26


def check_same_shape(where: str, ref_name: str, ref: Tensor, **others: Tensor | None) -> None:
    """Raise ``ValueError`` naming ``where`` when any tensor in ``others`` differs in shape from ``ref``."""
    for name, t in others.items():
        if t is not None and tuple(t.shape) != tuple(ref.shape):
            raise ValueError(
                f"{where}: {name} has shape {tuple(t.shape)} but {ref_name} has shape {tuple(ref.shape)}"
            )


def _zeroed(values: Tensor, mask: Tensor) -> Tensor:
    """``values * mask`` where masked-out positions are exactly 0 even if ``values`` holds nan/inf there."""
    mask = mask.to(values.dtype) if mask.dtype == torch.bool else mask
    return torch.where(mask != 0, values, torch.zeros((), dtype=values.dtype, device=values.device)) * mask


def masked_sum(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Sum of ``values`` over positions where ``mask`` is non-zero.

    Args:
        values: any shape, e.g. ``(bs, T)``.
        mask: same shape as ``values`` (0/1, bool or float weights).
        dim: reduce only this dimension; ``None`` reduces everything to a scalar.
    """
    z = _zeroed(values, mask)
    return z.sum() if dim is None else z.sum(dim=dim)


def masked_mean(values: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """Mean of ``values`` over positions where ``mask`` is non-zero (verl's ``masked_mean``).

    Args:
        values: ``(bs, T)`` (any shape works).
        mask: same shape as ``values``.
        dim: reduce only this dimension (e.g. ``-1`` gives a per-sequence mean ``(bs,)``);
            ``None`` gives a scalar.

    Returns:
        The masked mean; reductions over zero valid positions give 0 (not ``nan``), so an empty
        micro-batch cannot poison a metric or a loss.
    """
    total = masked_sum(values, mask, dim)
    count = mask.to(values.dtype).sum() if dim is None else mask.to(values.dtype).sum(dim=dim)
    return total / torch.where(count > 0, count, torch.ones_like(count))


def masked_var(values: Tensor, mask: Tensor, unbiased: bool = True) -> Tensor:
    """Variance of ``values`` over the valid positions of ``mask`` (scalar).

    Args:
        values: ``(bs, T)``.
        mask: ``(bs, T)``.
        unbiased: apply Bessel's correction ``n / (n - 1)`` as verl does.

    Raises:
        ValueError: no valid position, or exactly one with ``unbiased=True`` (the variance is
            undefined; verl raises in the same cases).
    """
    mean = masked_mean(values, mask)
    var = masked_mean((values - mean) ** 2, mask)
    if unbiased:
        n = float(mask.to(values.dtype).sum())
        if n == 0:
            raise ValueError("masked_var: the mask has no valid position (all zeros)")
        if n == 1:
            raise ValueError("masked_var: unbiased variance needs at least 2 valid positions, mask has 1")
        var = var * (n / (n - 1))
    return var


def masked_whiten(values: Tensor, mask: Tensor, shift_mean: bool = True) -> Tensor:
    """Standardise ``values`` with the mean/variance of its valid positions.

    Args:
        values: ``(bs, T)``.
        mask: ``(bs, T)``.
        shift_mean: when False the mean is added back (scale only), as verl's option.

    Returns:
        ``(bs, T)``: ``(values - mean) / sqrt(var + 1e-8)``.  Masked positions carry numbers too;
        callers multiply by the mask when they must be 0.
    """
    mean = masked_mean(values, mask)
    var = masked_var(values, mask)
    whitened = (values - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        whitened = whitened + mean
    return whitened


# --------------------------------------------------------------------------- loss aggregation


def _seq_weights(loss_mask: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """Per-row valid token counts ``(bs,)`` and the count of non-empty rows (scalar)."""
    tokens = loss_mask.to(dtype).sum(dim=-1)
    nonempty = (tokens > 0).to(dtype)
    return tokens, nonempty.sum()


@LOSS_AGG_MODES.register("token-mean")
def _agg_token_mean(loss_mat: Tensor, loss_mask: Tensor, norm_len: int) -> Tensor:
    """Every valid token weighs the same (long responses weigh more)."""
    return masked_mean(loss_mat, loss_mask)


@LOSS_AGG_MODES.register("seq-mean-token-sum")
def _agg_seq_mean_token_sum(loss_mat: Tensor, loss_mask: Tensor, norm_len: int) -> Tensor:
    """Sum over a sequence's tokens, then mean over the (non-empty) sequences."""
    _, n_seq = _seq_weights(loss_mask, loss_mat.dtype)
    return masked_sum(loss_mat, loss_mask) / n_seq.clamp(min=1)


@LOSS_AGG_MODES.register("seq-mean-token-mean")
def _agg_seq_mean_token_mean(loss_mat: Tensor, loss_mask: Tensor, norm_len: int) -> Tensor:
    """Mean over a sequence's tokens, then mean over the (non-empty) sequences: every response weighs the same."""
    tokens, n_seq = _seq_weights(loss_mask, loss_mat.dtype)
    per_seq = masked_sum(loss_mat, loss_mask, dim=-1) / tokens.clamp(min=1)
    return per_seq.sum() / n_seq.clamp(min=1)


@LOSS_AGG_MODES.register("seq-mean-token-sum-norm")
def _agg_seq_mean_token_sum_norm(loss_mat: Tensor, loss_mask: Tensor, norm_len: int) -> Tensor:
    """Dr.GRPO: token sum divided by a constant length, then mean over sequences (no length bias)."""
    _, n_seq = _seq_weights(loss_mask, loss_mat.dtype)
    return masked_sum(loss_mat, loss_mask) / norm_len / n_seq.clamp(min=1)


def agg_loss(loss_mat: Tensor, loss_mask: Tensor, loss_agg_mode: str, *, norm_len: int | None = None) -> Tensor:
    """Reduce a per-token loss matrix to the scalar that is back-propagated.

    Args:
        loss_mat: ``(bs, T)`` per-token losses.
        loss_mask: ``(bs, T)``; 0 marks padding (never counted).
        loss_agg_mode: ``token-mean`` | ``seq-mean-token-sum`` | ``seq-mean-token-mean`` |
            ``seq-mean-token-sum-norm`` (or a mode registered in :data:`LOSS_AGG_MODES`).
        norm_len: constant divisor of ``seq-mean-token-sum-norm`` (verl's ``loss_scale_factor``);
            defaults to ``T``, the padded max response length.

    Returns:
        Scalar tensor (keeps the graph of ``loss_mat``).  Rows with no valid token are left out
        of the sequence means, so padding rows never dilute the loss.

    Raises:
        KeyError: unknown mode (names the closest one).
    """
    check_same_shape("agg_loss", "loss_mat", loss_mat, loss_mask=loss_mask)
    fn = LOSS_AGG_MODES.get(loss_agg_mode)
    length = int(loss_mat.shape[-1]) if norm_len is None else int(norm_len)
    if length <= 0:
        raise ValueError(f"agg_loss: norm_len must be positive, got {norm_len}")
    return fn(loss_mat, loss_mask, length)


# --------------------------------------------------------------------------- logits helpers


def _rowwise_fp32(logits: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Apply ``fn`` (last dim reduced) in float32, chunking rows so half-precision logits never get a full fp32 copy."""
    if logits.dtype in (torch.float32, torch.float64):
        return fn(logits)
    flat = logits.reshape(-1, logits.shape[-1])
    rows = max(1, _UPCAST_CHUNK_ELEMENTS // max(1, logits.shape[-1]))
    parts = [fn(chunk.float()) for chunk in flat.split(rows, dim=0)]
    return torch.cat(parts, dim=0).reshape(logits.shape[:-1])


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of the categorical distribution given by ``logits``.

    Computed as ``logsumexp(z) - sum(softmax(z) * z)`` on max-shifted logits, which is exact and
    stable for large logits (no ``log(softmax)`` of tiny probabilities).  Half-precision input is computed in
    float32.

    Args:
        logits: ``(..., V)``, e.g. ``(bs, T, V)``.

    Returns:
        ``(...)``, e.g. ``(bs, T)`` in float32 (or the input dtype when it is float32/64).
    """

    def _entropy(z: Tensor) -> Tensor:
        # Shift by the row max first: the two terms are then O(log V) instead of O(max logit),
        # so their difference keeps full precision even for logits in the thousands.
        z = z - z.detach().amax(dim=-1, keepdim=True)
        return torch.logsumexp(z, dim=-1) - (torch.softmax(z, dim=-1) * z).sum(dim=-1)

    return _rowwise_fp32(logits, _entropy)


def logprobs_from_logits(logits: Tensor, labels: Tensor) -> Tensor:
    """Log-probability of each label under ``softmax(logits)``.

    Args:
        logits: ``(..., V)``, e.g. ``(bs, T, V)``.
        labels: ``(...)`` integer token ids, e.g. ``(bs, T)``.

    Returns:
        ``(...)`` log-probs (float32 for half-precision logits); differentiable w.r.t. ``logits``.
    """
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"logprobs_from_logits: labels shape {tuple(labels.shape)} must equal logits shape without the "
            f"vocab dim {tuple(logits.shape[:-1])}"
        )
    picked = logits.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1)
    lse = _rowwise_fp32(logits, lambda z: torch.logsumexp(z, dim=-1))
    return picked.to(lse.dtype) - lse


# --------------------------------------------------------------------------- rewards/grouping


def scores_to_token_level(scores: Tensor, response_mask: Tensor) -> Tensor:
    """Place each sequence's scalar score on its last valid response token.

    Args:
        scores: ``(bs,)`` outcome rewards.
        response_mask: ``(bs, T)``.

    Returns:
        ``(bs, T)`` zeros except ``scores[i]`` at the last position of row ``i`` whose mask is 1
        (a row without valid tokens stays all zero).
    """
    if scores.dim() != 1 or response_mask.dim() != 2 or scores.shape[0] != response_mask.shape[0]:
        raise ValueError(
            f"scores_to_token_level: expected scores (bs,) and response_mask (bs, T), got "
            f"{tuple(scores.shape)} and {tuple(response_mask.shape)}"
        )
    bs, length = response_mask.shape
    positions = torch.arange(length, device=response_mask.device).expand(bs, length)
    last = torch.where(response_mask != 0, positions, torch.full_like(positions, -1)).max(dim=-1).values
    out = torch.zeros(bs, length, dtype=scores.dtype if scores.is_floating_point() else torch.float32,
                      device=scores.device)
    rows = torch.nonzero(last >= 0).squeeze(-1)
    out[rows, last[rows]] = scores[rows].to(out.dtype)
    return out


def group_ids(index: Any, batch_size: int, device: torch.device | None = None) -> tuple[Tensor, int]:
    """Map an array-like of hashable group labels to dense ids.

    Args:
        index: ``(bs,)`` labels (np.ndarray of str/int, list, tuple or an integer tensor); rows with
            equal labels are responses to the same prompt.
        batch_size: expected length ``bs``.

    Returns:
        ``(ids (bs,) int64, n_groups)`` with ids numbered in order of first appearance.
    """
    if index is None:
        raise ValueError("index (one group id per row) is required for group-based estimators")
    labels: Sequence[Hashable] = index.tolist() if hasattr(index, "tolist") else list(index)
    if len(labels) != batch_size:
        raise ValueError(f"index has {len(labels)} entries but the batch has {batch_size} rows")
    mapping: dict[Hashable, int] = {}
    ids = [mapping.setdefault(label, len(mapping)) for label in labels]
    return torch.tensor(ids, dtype=torch.long, device=device), len(mapping)
