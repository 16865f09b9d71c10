"""Turning what users pass to ``log()`` / ``log_samples()`` into rows the store can hold, off the training
thread, rejecting bad input at the smallest unit.

Accepted values: Python/numpy numbers and bools, torch 0-d tensors (and 1-element tensors), 0-d/1-element
numpy arrays, nested dicts (flattened with ``/``, at most :data:`MAX_DEPTH` levels); lists and tuples of numbers and
numpy arrays / tensors of 2..32 values are kept as lists, as W&B keeps them in its history rows (see
:func:`list_value`; the writer stores them beside the numeric series). NaN and ±Inf are kept:
they are evidence, not errors. ``None`` (also inside a nested dict) is a *null*, as W&B stores it: the key is
present at that step with no value (see :func:`flatten`'s ``nulls``). Rejected per key, with one warning
naming the key: strings, lists holding anything but numbers, ``None`` and nested lists of them (``["a"]``),
numbers no float can hold (``10**400``), keys that are not text, empty, longer than 512 characters, holding a
control character (newline, NUL...) or not UTF-8 (a lone surrogate ``"\\ud800"``) — the rules of
:mod:`rlcockpit.store.rules`, which the team server applies too.

Steps (checked on the caller's thread, see :func:`check_step`): an ``int`` (or numpy integer, or an
integral float such as ``3.0``) in ``0 ≤ step < 2**63``. ``1.5``, ``"7"``, ``True``, NaN are rejected —
the whole call, with a warning naming the value.

Sample rows: a row that is not a mapping is rejected; in a row, a cell whose key is not text, a text cell
(``prompt``/``response``, or any other text) that cannot be stored as UTF-8, or a ``reward`` that is not a
number is dropped — the rest of the row is kept.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rlcockpit.store.rules import MAX_STEP, key_problem  # noqa: F401 - the rules the team server applies too

MAX_DEPTH = 32
TEXT_COLUMNS = ("prompt", "response")


class BadStep(ValueError):
    """A step that cannot be stored; the message names it."""


def check_step(step: Any) -> int:
    """``step`` as a stored step, or :class:`BadStep` saying why not (never silently truncated)."""
    if isinstance(step, (bool, np.bool_)):
        raise BadStep(f"step {step!r} is a bool, not a step number")
    if isinstance(step, (int, np.integer)):
        value = int(step)
    elif isinstance(step, (float, np.floating)):
        if not math.isfinite(step) or step != int(step):
            raise BadStep(f"step {step!r} is not a whole number (steps are integers; nothing was truncated)")
        value = int(step)
    else:
        try:
            value = operator.index(step)  # torch/other integer scalars
        except TypeError:
            raise BadStep(f"step {step!r} is a {type(step).__name__}, not an integer") from None
    if not 0 <= value <= MAX_STEP:
        raise BadStep(f"step {value} is outside 0..2**63-1")
    return value


def to_float(value: Any) -> float | None:
    """The float for a scalar-like ``value``, or ``None`` if it is not a number a float can hold."""
    try:
        if isinstance(value, (bool, np.bool_)):
            return float(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, np.ndarray):
            return float(value.reshape(-1)[0]) if value.size == 1 and value.dtype.kind in "biuf" else None
        if type(value).__module__.startswith("torch"):
            if value.numel() == 1 and not value.dtype.is_complex:
                return float(value.detach().float().cpu().item())
    except (OverflowError, ValueError, TypeError, AttributeError, RuntimeError):
        return None
    return None


def describe(value: Any) -> str:
    """How a rejected value is named in a warning."""
    if value is None:
        return "None"
    if isinstance(value, int) and not isinstance(value, bool):
        return "an integer too large for a float"
    what = type(value).__name__
    shape = getattr(value, "shape", None)
    if shape is not None:
        what += f" of shape {tuple(shape)}"
    return f"a {what}"


def flatten(
    metrics: Mapping[Any, Any], reject: Callable[[str, str], None], prefix: str = "", depth: int = 0,
    nulls: list[str] | None = None, lists: dict[str, Any] | None = None,
) -> dict[str, float]:
    """Flatten nested mappings with ``/`` and convert values; ``reject(shown key, why)`` is called for bad ones.

    A ``None`` value goes to ``nulls`` (its flattened key) when that list is given — W&B's ``log({"x": None})``
    records a null, not an error — and is rejected like any non-number otherwise. A list of numbers, or an
    array of 2..32 of them, goes to ``lists`` (key -> the JSON list, see :func:`list_value`) when given."""
    out: dict[str, float] = {}
    for k, v in metrics.items():
        problem = key_problem(k)
        if problem is not None:
            reject(f"{prefix}{k!r}" if prefix else repr(k), problem)
            continue
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            if depth >= MAX_DEPTH:
                reject(repr(key), f"nested deeper than {MAX_DEPTH} levels")
            else:
                out.update(flatten(v, reject, key + "/", depth + 1, nulls, lists))
            continue
        if v is None and nulls is not None:
            nulls.append(key)
            continue
        if lists is not None and is_list_like(v):
            value, why = list_value(v)
            if why is not None:
                reject(repr(key), why)
            else:
                lists[key] = value
            continue
        f = to_float(v)
        if f is None:
            reject(repr(key), f"{describe(v)} is not a scalar number")
        else:
            out[key] = f
    return out


#: the most numbers one logged list may hold (W&B keeps any list in its row; a longer one is better logged as
#: a numpy array, which W&B and rlcockpit turn into a histogram past 32 values)
MAX_LIST = 4096


def is_list_like(value: Any) -> bool:
    """A list or tuple, or a numpy array / torch tensor of more than one element (one element is a number)."""
    if isinstance(value, (list, tuple)):
        return True
    size = getattr(value, "size", None) if isinstance(value, np.ndarray) else None
    if size is None and type(value).__module__.startswith("torch") and hasattr(value, "numel"):
        size = value.numel()
    return size is not None and size != 1


def list_value(value: Any) -> tuple[Any, str | None]:
    """A logged list or small array as W&B keeps it in the history row (``wandb.log({"x": [1, 2, 3]})``:
    the JSON list; numpy arrays and tensors as their ``tolist()``), or ``(None, why)``: an element that is
    not a number, ``None`` or a nested list of them, more than :data:`MAX_LIST` numbers, or an array of more
    than 32 values nested in a dict (W&B's histogram threshold: log it at the top level or as a Histogram)."""
    array = _as_array(value) if not isinstance(value, (list, tuple)) else None
    if array is not None:
        if array.size > 32:
            return None, f"an array of {array.size} values inside a dict (log it at the top level, where more than " \
                         "32 values become a histogram, or as wandb.Histogram)"
        value = array.tolist()
    elif not isinstance(value, (list, tuple)):
        return None, f"{describe(value)} is not a list of numbers"
    count = [0]

    def clean(v: Any, depth: int) -> Any:
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, (list, tuple)) and depth < MAX_DEPTH:
            return [clean(x, depth + 1) for x in v]
        count[0] += 1
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        f = to_float(v)
        if f is None:
            raise ValueError("text" if isinstance(v, str) else describe(v))
        return f

    try:
        out = clean(value, 0)
    except ValueError as exc:
        return None, f"a list holding {exc} (only numbers, None and nested lists of them are stored)"
    if count[0] > MAX_LIST:
        return None, f"a list of {count[0]} numbers, more than {MAX_LIST} (log a numpy array: W&B and rlcockpit " \
                     "store more than 32 values as a histogram)"
    return out, None


def fast_values(values: list[Any]) -> np.ndarray | None:
    """``values`` as float64 when every one is a plain number, else ``None`` (one C-level pass).

    numpy infers one dtype for the whole list: all bools/ints/floats/numpy numbers give a numeric array;
    a string, ``None``, an int beyond float range, a non-scalar array or tensor gives another dtype (or
    raises) and the caller takes the careful per-value path."""
    try:
        arr = np.array(values)
    except (OverflowError, TypeError, ValueError, RuntimeError):
        return None
    if arr.ndim != 1 or arr.dtype.kind not in "fiub":
        return None
    return arr if arr.dtype == np.float64 else arr.astype(np.float64)


def clean_text(value: Any) -> tuple[Any, str | None]:
    """A sample cell's value as stored, or ``(None, why)`` when it cannot be stored."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None, "text with a lone surrogate"
    return value, None


def clean_sample_row(row: Any, reject: Callable[[str, str], None]) -> dict[str, Any] | None:
    """A sample row as stored; bad cells are dropped (``reject(column, why)``), a non-mapping is ``None``."""
    if not isinstance(row, Mapping):
        reject("", f"a {type(row).__name__} is not a row (rows are dicts)")
        return None
    out: dict[str, Any] = {}
    for k, v in row.items():
        problem = key_problem(k)
        if problem is not None:
            reject(repr(k), problem)
            continue
        if k == "reward":
            if v is None:
                out[k] = None
                continue
            f = to_float(v)
            if f is None:
                reject(k, f"{describe(v)} is not a number")
                continue
            out[k] = None if math.isnan(f) else f
            continue
        v, why = clean_value(v)
        if why is not None:
            reject(k, why)
            continue
        out[k] = v
    return out


def clean_value(value: Any, depth: int = 0) -> tuple[Any, str | None]:
    """Text, numbers and small JSON-like structures are kept; anything else becomes its ``str``."""
    if value is None or isinstance(value, (bool, int, float)):
        return value, None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, (np.generic,)):
        return value.item(), None
    if depth < MAX_DEPTH and isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if key_problem(k) is not None:
                return None, f"a nested key {k!r} is not text"
            out[k], why = clean_value(v, depth + 1)
            if why is not None:
                return None, why
        return out, None
    if depth < MAX_DEPTH and isinstance(value, (list, tuple)):
        items = []
        for v in value:
            item, why = clean_value(v, depth + 1)
            if why is not None:
                return None, why
            items.append(item)
        return items, None
    if depth >= MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    array = _as_array(value)
    if array is not None:
        return _array_value(array), None
    return clean_text(str(value))


def _as_array(value: Any) -> np.ndarray | None:
    """A numpy array or torch tensor of real numbers as a numpy array (moved to the CPU), else None."""
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind in "biuf" else None
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        try:
            if value.dtype.is_complex or str(value.dtype) == "torch.bool":
                return None
            return value.detach().cpu().numpy()
        except (TypeError, RuntimeError, AttributeError):
            return None
    return None


def _array_value(array: np.ndarray) -> Any:
    """An array as W&B stores it in a summary (wandb/util.py ``maybe_compress_summary``): one element is that
    number, up to 32 a list, more their statistics (``var``, ``mean``, ``min``, ``max``, percentiles, ``size``);
    NaN and ±Inf are left out of the statistics."""
    if array.size == 1:
        return array.reshape(-1)[0].item()
    if array.size <= 32:
        return array.tolist()
    finite = array[np.isfinite(array)] if array.dtype.kind == "f" else array.ravel()
    if not finite.size:
        return {"_type": "numpy.ndarray", "size": int(array.size)}
    p10, p25, p75, p90 = np.percentile(finite, [10, 25, 75, 90]).tolist()
    return {"_type": "numpy.ndarray", "var": float(np.var(finite)), "mean": float(np.mean(finite)),
            "min": float(np.min(finite)), "max": float(np.max(finite)), "10%": p10, "25%": p25, "75%": p75,
            "90%": p90, "size": int(array.size)}


def is_finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))
