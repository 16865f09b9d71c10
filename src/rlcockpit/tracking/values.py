"""Turning what users pass to ``log()`` into flat ``{key: float}`` rows, off the training thread.

Accepted: Python/numpy numbers and bools, torch 0-d tensors (and 1-element tensors), nested
dicts (flattened with ``/``). NaN and ±Inf are kept as such: they are evidence, not errors.
Rejected per key, with one warning naming the key: strings, None, and non-scalar arrays/tensors.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np


def to_float(value: Any) -> float | None:
    """The float for a scalar-like ``value``, or ``None`` if it is not a number."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, np.ndarray):
        return float(value.reshape(-1)[0]) if value.size == 1 and value.dtype.kind in "biuf" else None
    if type(value).__module__.startswith("torch"):
        try:
            if value.numel() == 1 and (value.dtype.is_floating_point or not value.dtype.is_complex):
                return float(value.detach().float().cpu().item())
        except Exception:  # noqa: BLE001 - anything odd is "not a scalar"
            return None
    return None


def flatten(
    metrics: Mapping[str, Any], reject: Callable[[str, Any], None], prefix: str = ""
) -> dict[str, float]:
    """Flatten nested mappings with ``/`` and convert values; ``reject(key, value)`` is called for bad ones."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, reject, key + "/"))
            continue
        f = to_float(v)
        if f is None:
            reject(key, v)
        else:
            out[key] = f
    return out


def fast_block(rows: list[dict[str, Any]]) -> np.ndarray | None:
    """All rows share one key order and hold only plain numbers → a 2-D float array, else ``None``.

    This is the hot path of ingest: one C-level conversion instead of a Python loop per point.
    """
    fast = _FAST_TYPES
    for r in rows:
        for v in r.values():
            if type(v) not in fast:
                return None
    try:
        arr = np.array([list(r.values()) for r in rows], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr if arr.ndim == 2 else None


_FAST_TYPES = frozenset({float, int, bool, np.float64, np.float32, np.float16, np.int64, np.int32, np.bool_})


def is_finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))
