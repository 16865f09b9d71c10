"""Downsampling long series for charts while keeping extremes visible.

Min/max per bucket: each bucket contributes its lowest and highest point (in step order), so a
one-step spike in a million points still shows on a 2k-point chart. NaN/Inf points are kept
(they are evidence): NaN ranks above everything for the max pick.
"""

from __future__ import annotations

import numpy as np


def minmax_downsample(
    steps: np.ndarray, values: np.ndarray, ts: np.ndarray, max_points: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reduce to at most ``max_points`` points (shapes: all ``(n,)``), keeping per-bucket extremes."""
    n = len(steps)
    if n <= max_points or max_points < 4:
        return steps, values, ts
    n_buckets = max_points // 2
    size = -(-n // n_buckets)  # ceil
    v = values
    if np.isnan(v).any():  # NaN is picked by the max side only (it ranks as +inf)
        v = np.where(np.isnan(v), np.inf, v)
    full = n // size  # whole buckets, reduced without padding copies; a partial last bucket is done apart
    body = v[: full * size].reshape(full, size)
    offsets = np.arange(full, dtype=np.int64) * size
    parts = [body.argmax(axis=1) + offsets, body.argmin(axis=1) + offsets]
    if full * size < n:
        tail = v[full * size :]
        parts.append(np.array([full * size + int(tail.argmax()), full * size + int(tail.argmin())], np.int64))
    idx = np.concatenate(parts)
    idx.sort()
    idx = idx[np.concatenate(([True], idx[1:] != idx[:-1]))]
    return steps[idx], values[idx], ts[idx]


def cut_series(steps: np.ndarray, values: np.ndarray, ts: np.ndarray, start_step: int | None,
               end_step: int | None, max_points: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points with ``start_step <= step <= end_step`` (either bound optional), downsampled to ``max_points``.

    Both SQL stores fetch whole chunks that overlap the range; this trims the chunks' edges the same way."""
    if start_step is not None or end_step is not None:
        m = np.ones(len(steps), bool)
        if start_step is not None:
            m &= steps >= start_step
        if end_step is not None:
            m &= steps <= end_step
        steps, values, ts = steps[m], values[m], ts[m]
    if max_points is not None and len(steps) > max_points:
        steps, values, ts = minmax_downsample(steps, values, ts, max_points)
    return steps, values, ts
