"""Next-token sampling for the built-in rollout: top-k / top-p filtering and one inverse-CDF draw per row.

Why inverse-CDF and not ``torch.multinomial``: multinomial draws an exponential for *every* vocabulary
entry (32 rows x 8k vocabulary: 7 ms per decoded token on this CPU, a sixth of the realistic benchmark's
rollout); a draw here is one uniform located in the row's cumulative sum.  The same distribution, and
with per-row uniforms (``rollout/seeds.py``) the same tokens however the batch is split.

Rows that share a history share one distribution (``rollout.py``'s nodes): the cumulative sums are taken
once per distribution and each row indexes its own (``rows``).
"""

from __future__ import annotations

from typing import Any

import torch


def filter_logits(logits: torch.Tensor, top_k: int = -1, top_p: float = 1.0) -> torch.Tensor:
    """Mask (to -inf) tokens outside the top-k and outside the top-p nucleus; logits (bs, V)."""
    if top_k is not None and 0 < top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True, dim=-1)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass of the tokens before it already reaches top_p (keeps >= 1 token)
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, sorted_idx, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
    """Per draw, the first token whose cumulative probability exceeds ``u`` times the row's total.

    ``probs`` (n, V) need not sum to 1; ``u`` (draws,) uniforms in [0, 1); ``rows`` (draws,) picks each
    draw's row of ``probs`` (None: draw i uses row i).  A token of probability 0 is never drawn: the first
    cumulative sum above the target is always reached by a positive step; when ``u * total`` rounds up to
    the total itself (u within 1e-16 of 1), the last token with probability > 0 is taken.
    """
    cdf = torch.cumsum(probs, -1, dtype=torch.float64)
    u = u.to(cdf.dtype).reshape(-1)
    if rows is not None and rows.numel() == probs.size(0) and _is_permutation(rows):
        # one draw per distribution, in another order (a rollout whose rows have all diverged): search each
        # distribution with its own draw's uniform, then reorder the tokens; no (rows, V) copy of the sums
        node_u = torch.empty_like(u).index_copy_(0, rows, u)
        return _search(probs, cdf, node_u)[rows]
    if rows is not None:
        cdf, probs = cdf[rows], probs[rows]
    return _search(probs, cdf, u)


def _is_permutation(rows: torch.Tensor) -> bool:
    seen = torch.zeros(rows.numel(), dtype=torch.bool, device=rows.device)
    seen[rows] = True
    return bool(seen.all())


def _search(probs: torch.Tensor, cdf: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Row i's first token whose cumulative sum exceeds ``u[i]`` times the row's total (see inverse_cdf)."""
    idx = torch.searchsorted(cdf, u[:, None] * cdf[:, -1:], right=True).squeeze(-1)
    over = idx >= cdf.size(-1)
    if bool(over.any()):
        last = probs.size(-1) - 1 - (probs > 0).flip(-1).int().argmax(-1)
        idx = torch.where(over, last, idx)
    return idx


def sample_categorical(probs: torch.Tensor, rows: torch.Tensor | None = None,
                       generator: torch.Generator | None = None) -> torch.Tensor:
    """One draw per row from ``probs`` (n, V) with uniforms from ``generator`` (torch's global RNG when
    None); ``rows`` (bs,) picks each draw's distribution (None: one draw per row of ``probs``)."""
    draws = probs.size(0) if rows is None else rows.numel()
    u = torch.rand(draws, dtype=torch.float64, device=probs.device, generator=generator)
    return inverse_cdf(probs, u, rows)


def _probs(logits: torch.Tensor, params: Any) -> torch.Tensor:
    """The sampling distribution of ``logits`` (n, V) under temperature, top-k and top-p, in fp32."""
    logits = logits.float()
    if params.temperature != 1.0:  # (x / 1.0 is x: skip a pass over the rows' logits)
        logits = logits / params.temperature
    return torch.softmax(filter_logits(logits, params.top_k, params.top_p), dim=-1)


def _greedy(params: Any) -> bool:
    return bool(params.greedy or params.temperature <= 0)


def sample_next_token(logits: torch.Tensor, params: Any, generator: torch.Generator | None = None,
                      rows: torch.Tensor | None = None) -> torch.Tensor:
    """Next tokens from ``logits`` (n, V) under ``params``; ``rows`` (bs,): the logits row of each draw
    (rows that share a history share one logits row), None = one draw per logits row."""
    if _greedy(params):
        tok = logits.argmax(dim=-1)
        return tok if rows is None else tok[rows]
    return sample_categorical(_probs(logits, params), rows, generator)


def sample_with_uniforms(logits: torch.Tensor, params: Any, u: torch.Tensor,
                         rows: torch.Tensor | None = None) -> torch.Tensor:
    """Next tokens (draws,) from ``logits`` (n, V) under ``params``, draw i with uniform ``u[i]`` (its row's
    own stream, ``rollout_seeds.row_uniforms``) from logits row ``rows[i]`` (None: row i)."""
    if _greedy(params):
        tok = logits.argmax(dim=-1)
        return tok if rows is None else tok[rows]
    return inverse_cdf(_probs(logits, params), u, rows)
