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
    pad = n_buckets * size - n
    v = values
    hi_v = np.where(np.isnan(v), np.inf, v)
    lo_v = np.where(np.isnan(v), np.inf, v)  # NaN is picked by the max side only
    if pad:
        hi_v = np.concatenate([hi_v, np.full(pad, -np.inf)])
        lo_v = np.concatenate([lo_v, np.full(pad, np.inf)])
    hi_idx = np.argmax(hi_v.reshape(n_buckets, size), axis=1) + np.arange(n_buckets) * size
    lo_idx = np.argmin(lo_v.reshape(n_buckets, size), axis=1) + np.arange(n_buckets) * size
    idx = np.unique(np.concatenate([np.minimum(hi_idx, n - 1), np.minimum(lo_idx, n - 1)]))
    return steps[idx], values[idx], ts[idx]
