"""Masked tensor arithmetic shared by every RL algorithm in :mod:`rlcockpit.algos`.

Responses in a batch have different lengths, so every statistic is taken over a mask.  The
helpers here guarantee one property the rest of the package relies on: **a position whose mask
is 0 never influences a result**, even when its value is ``nan``/``inf`` (padding garbage).  They
also never divide by zero: a fully masked reduction yields 0 rather than ``nan``.

Shapes: ``bs`` = batch size (number of responses), ``T`` = padded response length,
``V`` = vocabulary size.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rlcockpit.registry import Registry

__all__ = [
    "LOSS_AGG_MODES",
    "AggScale",
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


@dataclass(frozen=True)
class AggScale:
    """The global normalisers of one aggregation (verl's ``global_batch_info`` plus ``loss_scale_factor``).

    With gradient accumulation a mini-batch is split into micro-batches whose losses are *summed*;
    dividing each by the mini-batch's token count (``batch_num_tokens``) or sequence count
    (``global_batch_size``) instead of its own makes the summed gradient independent of the split,
    as in verl.  ``None`` means "this micro-batch is the whole batch".
    """

    dp_size: int = 1
    batch_num_tokens: float | None = None
    global_batch_size: float | None = None
    loss_scale_factor: float | None = None


# Loss aggregation: (loss_mat (bs, T), loss_mask (bs, T), scale) -> scalar.
AggFn = Callable[[Tensor, Tensor, AggScale], Tensor]
LOSS_AGG_MODES: Registry[AggFn] = Registry("loss_agg_mode")


def _seq_terms(loss_mat: Tensor, loss_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-row token sums ``(bs,)``, per-row valid token counts ``(bs,)`` and the non-empty-row indicator ``(bs,)``."""
    tokens = loss_mask.to(loss_mat.dtype).sum(dim=-1)
    return masked_sum(loss_mat, loss_mask, dim=-1), tokens, (tokens > 0).to(loss_mat.dtype)


def _per(total: Tensor, count: float | Tensor | None, default: Tensor, dp_size: int) -> Tensor:
    """``total / count * dp_size``; the local ``default`` count when none is given; 0 over an empty batch."""
    denom = default if count is None else torch.as_tensor(count, dtype=total.dtype, device=total.device)
    return total / torch.where(denom > 0, denom, torch.ones_like(denom)) * dp_size


@LOSS_AGG_MODES.register("token-mean")
def _agg_token_mean(loss_mat: Tensor, loss_mask: Tensor, scale: AggScale) -> Tensor:
    """Every valid token weighs the same (long responses weigh more)."""
    count = loss_mask.to(loss_mat.dtype).sum()
    return _per(masked_sum(loss_mat, loss_mask), scale.batch_num_tokens, count, scale.dp_size)


@LOSS_AGG_MODES.register("token-sum")
def _agg_token_sum(loss_mat: Tensor, loss_mask: Tensor, scale: AggScale) -> Tensor:
    """Plain sum over every valid token (times ``dp_size`` so the data-parallel mean of gradients is the global sum)."""
    return masked_sum(loss_mat, loss_mask) * scale.dp_size


@LOSS_AGG_MODES.register("seq-mean-token-sum")
def _agg_seq_mean_token_sum(loss_mat: Tensor, loss_mask: Tensor, scale: AggScale) -> Tensor:
    """Sum over a sequence's tokens, then mean over the (non-empty) sequences."""
    seq_sum, _, nonempty = _seq_terms(loss_mat, loss_mask)
    return _per((seq_sum * nonempty).sum(), scale.global_batch_size, nonempty.sum(), scale.dp_size)


@LOSS_AGG_MODES.register("seq-mean-token-mean")
def _agg_seq_mean_token_mean(loss_mat: Tensor, loss_mask: Tensor, scale: AggScale) -> Tensor:
    """Mean over a sequence's tokens, then mean over the (non-empty) sequences: every response weighs the same."""
    seq_sum, tokens, nonempty = _seq_terms(loss_mat, loss_mask)
    per_seq = seq_sum / tokens.clamp(min=1)
    return _per((per_seq * nonempty).sum(), scale.global_batch_size, nonempty.sum(), scale.dp_size)


@LOSS_AGG_MODES.register("seq-mean-token-sum-norm")
def _agg_seq_mean_token_sum_norm(loss_mat: Tensor, loss_mask: Tensor, scale: AggScale) -> Tensor:
    """Dr.GRPO: token sum divided by a constant length, then mean over sequences (no length bias)."""
    length = float(loss_mat.shape[-1]) if scale.loss_scale_factor is None else float(scale.loss_scale_factor)
    return _agg_seq_mean_token_sum(loss_mat, loss_mask, scale) / length


def agg_loss(
    loss_mat: Tensor,
    loss_mask: Tensor,
    loss_agg_mode: str,
    *,
    dp_size: int = 1,
    batch_num_tokens: float | Tensor | None = None,
    global_batch_size: float | Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> Tensor:
    """Reduce a per-token loss matrix to the scalar that is back-propagated (verl's ``agg_loss``).

    Args:
        loss_mat: ``(bs, T)`` per-token losses.
        loss_mask: ``(bs, T)``; 0 marks padding (never counted).
        loss_agg_mode: ``token-mean`` | ``token-sum`` | ``seq-mean-token-sum`` | ``seq-mean-token-mean`` |
            ``seq-mean-token-sum-norm`` (or a mode registered in :data:`LOSS_AGG_MODES`).
        dp_size: data-parallel world size (each rank's loss is scaled so the averaged gradient is the global one).
        batch_num_tokens: valid tokens in the whole (mini-)batch, for ``token-mean`` over micro-batches;
            default: this call's own count.
        global_batch_size: non-empty sequences in the whole (mini-)batch, for the ``seq-mean-*`` modes;
            default: this call's own count.
        loss_scale_factor: constant divisor of ``seq-mean-token-sum-norm`` (Dr.GRPO: the configured
            response length); defaults to ``T``, the padded length of ``loss_mat``.

    Returns:
        Scalar tensor (keeps the graph of ``loss_mat``).  Rows with no valid token are left out
        of the sequence means, so padding rows never dilute the loss; an empty batch gives 0.

    Raises:
        KeyError: unknown mode (names the closest one).
        ValueError: mismatched shapes or a non-positive ``loss_scale_factor``.
    """
    check_same_shape("agg_loss", "loss_mat", loss_mat, loss_mask=loss_mask)
    fn = LOSS_AGG_MODES.get(loss_agg_mode)
    if loss_scale_factor is not None and float(loss_scale_factor) <= 0:
        raise ValueError(f"agg_loss: loss_scale_factor must be positive, got {loss_scale_factor}")
    if int(dp_size) < 1:
        raise ValueError(f"agg_loss: dp_size must be >= 1, got {dp_size}")
    scale = AggScale(int(dp_size), _scalar(batch_num_tokens), _scalar(global_batch_size),
                     None if loss_scale_factor is None else float(loss_scale_factor))
    return fn(loss_mat, loss_mask, scale)


def _scalar(x: float | Tensor | None) -> float | None:
    return None if x is None else float(x)


# --------------------------------------------------------------------------- calling registered functions


@functools.cache
def _signature(fn: Callable[..., Any]) -> tuple[frozenset[str], bool]:
    params = inspect.signature(fn).parameters.values()
    names = frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    return names, any(p.kind is p.VAR_KEYWORD for p in params)


def accepted_params(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword parameters ``fn`` declares, or ``None`` when it takes ``**kwargs`` (accepts anything)."""
    names, var_kw = _signature(fn)
    return None if var_kw else names


def call_with_accepted(fn: Callable[..., Any], where: str, args: tuple[Any, ...], *, inputs: dict[str, Any],
                       knobs: dict[str, Any], known_knobs: frozenset[str]) -> Any:
    """Call ``fn(*args, ...)`` passing what it uses, refusing what it would silently ignore.

    * ``inputs`` are data (tensors such as ``rollout_is_weights``): one given (not ``None``) that
      ``fn`` does not declare raises ``ValueError`` -- an ignored correction must never look applied.
    * ``knobs`` are config values every caller has (``gamma``, ``clip_ratio_c``, ``loss_agg_mode``):
      each is passed only where ``fn`` declares it, as verl's functions read only their own fields
      of a shared config.  A knob no registered function knows is a typo and raises ``TypeError``.

    A function taking ``**kwargs`` (a user's own) receives everything.
    """
    accepted = accepted_params(fn)
    unknown = sorted(k for k in knobs if k not in known_knobs and (accepted is None or k not in accepted))
    if unknown and accepted is not None:
        close = difflib.get_close_matches(unknown[0], sorted(known_knobs), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise TypeError(f"{where}: unknown argument {unknown[0]!r}.{hint}")
    kwargs: dict[str, Any] = {}
    for name, value in inputs.items():
        if value is None:
            continue
        if accepted is not None and name not in accepted:
            raise ValueError(f"{where} does not use {name}; it would be silently ignored. Leave it out, or choose "
                             f"a function that applies it")
        kwargs[name] = value
    kwargs.update({k: v for k, v in knobs.items() if accepted is None or k in accepted})
    return fn(*args, **kwargs)


def registry_params(registry: Registry[Any]) -> frozenset[str]:
    """Every keyword parameter declared by some entry of ``registry`` (the universe of valid knob names)."""
    out: set[str] = set()
    for _, fn in registry.items():
        names, _ = _signature(fn)
        out |= names
    return frozenset(out)


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
