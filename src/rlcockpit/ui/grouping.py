"""Run groups for compare charts: the mean of several runs' curves with a min–max band.

Runs of one group rarely log at identical steps (different ``test_freq``, a crashed run, resumed
runs), so each run is linearly interpolated onto the union of the group's steps *within its own
step range* (never extrapolated): at a step the band covers the runs that were alive there, and
``n`` says how many that is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rlcockpit.ui.analysis import flatten

Series2 = tuple[np.ndarray, np.ndarray]  # steps, values


def group_label(run: Mapping[str, Any], by: str) -> str:
    """The group a run falls in for ``by`` = ``group`` | ``tags`` | ``project`` | a config path."""
    if by == "group":
        return str(run.get("group") or "(no group)")
    if by == "project":
        return str(run.get("project"))
    if by == "tags":
        return ",".join(sorted(run.get("tags") or [])) or "(no tags)"
    path = by[len("config."):] if by.startswith("config.") else by
    value = flatten(run.get("config") or {}).get(path)
    return f"{path}={value}" if value is not None else f"{path}=(unset)"


def _last_per_step(steps: np.ndarray, vals: np.ndarray) -> Series2:
    if len(steps) == 0:
        return steps.astype(np.float64), vals
    rev_steps, rev_idx = np.unique(steps[::-1], return_index=True)
    return rev_steps.astype(np.float64), vals[::-1][rev_idx]


def aggregate(series: Sequence[Series2], max_points: int = 1000) -> dict[str, Any]:
    """``{"steps", "mean", "lo", "hi", "n"}`` of several runs' ``(steps, values)`` (see module doc).

    Non-finite values are ignored per run. With more than ``max_points`` steps, buckets of
    consecutive steps are merged: mean of means, min of minima, max of maxima (the band still shows
    every excursion).
    """
    clean = []
    for steps, vals in series:
        s, v = _last_per_step(np.asarray(steps), np.asarray(vals, np.float64))
        ok = np.isfinite(v)
        if ok.any():
            clean.append((s[ok], v[ok]))
    if not clean:
        return {"steps": [], "mean": [], "lo": [], "hi": [], "n": []}
    grid = np.unique(np.concatenate([s for s, _ in clean]))
    stack = np.full((len(clean), len(grid)), np.nan)
    for i, (s, v) in enumerate(clean):
        inside = (grid >= s[0]) & (grid <= s[-1])
        stack[i, inside] = np.interp(grid[inside], s, v)
    n = np.sum(~np.isnan(stack), axis=0)
    with np.errstate(all="ignore"):
        mean = np.nanmean(stack, axis=0)
        lo = np.nanmin(stack, axis=0)
        hi = np.nanmax(stack, axis=0)
    if len(grid) > max_points:
        edges = np.linspace(0, len(grid), max_points + 1).astype(int)
        starts = edges[:-1][np.diff(edges) > 0]
        grid = grid[starts]
        mean = np.add.reduceat(mean * n, starts) / np.maximum(np.add.reduceat(n, starts), 1)
        lo = np.minimum.reduceat(lo, starts)
        hi = np.maximum.reduceat(hi, starts)
        n = np.maximum.reduceat(n, starts)
    return {"steps": grid.tolist(), "mean": mean.tolist(), "lo": lo.tolist(), "hi": hi.tolist(),
            "n": n.astype(int).tolist()}
