"""The writer's hot path: validated metric rows and per-key columns from a drained run of entries.

Why this shape: a run logs the same keys step after step, so consecutive entries with the same key
tuple form a *block*; a block's keys are checked once per distinct key tuple (cached) and its values are
converted with one C-level type check and one ``np.array`` call — about 15 ns per point instead of a
Python loop per value. Anything unusual (a tensor, a nested dict, a string, an out-of-range int, a bad
key) sends just that block through the careful per-value path in :mod:`rlcockpit.tracking.write.values`.

A list (``log({"x": [1, 2, 3]})``, or an array of 2..32 values) is no point either: it is collected in
:attr:`RowCleaner.lists` for the writer to store beside the points, as W&B keeps it in its row, and is the
key's last value. A ``None`` value (W&B's null) is no point: it is collected in :attr:`RowCleaner.nulls` as
``(step, ts, [keys])`` for the writer to store beside the points, and in ``last`` as ``None`` (the key's
latest value is a null: W&B's summary drops it). Rows for loggers and observers never hold a ``None``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np

from rlcockpit.store.batch import Series
from rlcockpit.tracking.media.rich import split_media
from rlcockpit.tracking.write.values import fast_values, flatten, key_problem

logger = logging.getLogger("rlcockpit")

Row = tuple[int, float, dict[str, Any]]  # (step, unix time, {key: number}) — what loggers and observers get
SIG_CACHE_SIZE = 4096


class RowCleaner:
    """Validates metric entries on the writer thread; each rejected key is reported once per run."""

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self._sig_ok: dict[tuple[Any, ...], bool] = {}
        self.rejected: set[str] = set()
        self.tables: list[Any] = []  # (step, ts, key, Table) found in logged dicts, for the writer to store
        self.nulls: list[tuple[int, float, list[str]]] = []  # (step, ts, keys logged as None), for the writer
        self.lists: list[tuple[int, float, dict[str, Any]]] = []  # (step, ts, {key: list}) logged, for the writer
        self._warn = warn or (lambda msg: logger.warning("%s", msg))

    def reject(self, key: str, why: str) -> None:
        if key not in self.rejected:
            self.rejected.add(key)
            shown = key if len(key) <= 120 else f"{key[:100]}..."  # ``why`` gives the length
            self._warn(f"rlcockpit: log() key {shown} rejected: {why} (the other keys are kept)")

    def _keys_ok(self, sig: tuple[Any, ...]) -> bool:
        ok = self._sig_ok.get(sig)
        if ok is None:
            ok = all(key_problem(k) is None for k in sig)
            if len(self._sig_ok) >= SIG_CACHE_SIZE:
                self._sig_ok.clear()
            self._sig_ok[sig] = ok
        return ok

    def convert(self, entries: Sequence[Any], want_rows: bool = True) -> tuple[list[Row], dict[str, Series],
                                                                               dict[str, Any]]:
        """``entries`` (``(step, ts, data)`` tuples: Metrics or Derived) → (rows, columns, last value per key). Rows that end
        up empty are dropped; ``want_rows=False`` skips building rows (nobody but the store reads them)."""
        rows: list[Row] = []
        last: dict[str, Any] = {}
        parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        i, n = 0, len(entries)
        while i < n:  # (entries are (step, ts, data) tuples: indexed, not named, in these loops)
            data = entries[i][2]
            sig = tuple(data)
            j = i + 1
            while j < n and len(entries[j][2]) == len(sig) and tuple(entries[j][2]) == sig:
                j += 1
            block = entries[i:j]
            i = j
            vals = None
            if sig and self._keys_ok(sig):
                vals = fast_values(list(chain.from_iterable(map(dict.values, [e[2] for e in block]))))
            if vals is None:
                self._careful(block, rows, parts, last)
                continue
            vals = vals.reshape(len(block), len(sig))
            if want_rows:  # the caller's dict copies, numbers as logged (loggers take numpy scalars too)
                rows.extend(block)  # (step, ts, data) tuples are rows already
            last.update(block[-1][2])
            steps = np.fromiter([e[0] for e in block], np.int64, len(block))
            ts = np.fromiter([e[1] for e in block], np.float64, len(block))
            cols = np.ascontiguousarray(vals.T)
            for c, key in enumerate(sig):
                parts.setdefault(key, []).append((steps, cols[c], ts))
        return rows, _join(parts), last

    def _careful(self, block: Sequence[Any], rows: list[Row], parts: dict[str, list], last: dict[str, Any]) -> None:
        for step_, ts_, data in block:
            data, tables = split_media(step_, ts_, data, self.reject)
            self.tables.extend(tables)
            nulls: list[str] = []
            lists: dict[str, Any] = {}
            try:
                clean = flatten(data, self.reject, nulls=nulls, lists=lists)
            except RecursionError:  # flatten stops at MAX_DEPTH; this is only a last line of defence
                self.reject("(nested)", "nested too deeply")
                continue
            if nulls:
                self.nulls.append((step_, ts_, nulls))
                last.update(dict.fromkeys(nulls))
            if lists:
                self.lists.append((step_, ts_, lists))
                last.update(lists)
            if not clean:
                continue
            rows.append((step_, ts_, clean))
            last.update(clean)
            step = np.array([step_], np.int64)
            ts = np.array([ts_], np.float64)
            for key, v in clean.items():
                parts.setdefault(key, []).append((step, np.array([v], np.float64), ts))


def _join(parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]) -> dict[str, Series]:
    out: dict[str, Series] = {}
    for key, chunks in parts.items():
        if len(chunks) == 1:
            out[key] = chunks[0]
        else:
            out[key] = (np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]),
                        np.concatenate([c[2] for c in chunks]))
    return out


def rows_to_columns(rows: Sequence[Row]) -> dict[str, Series]:
    """Rows of ``(step, ts, {key: value})`` (already valid) → per-key ``(steps, values, ts)`` arrays."""
    parts: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for step, ts, data in rows:
        s, t = np.array([step], np.int64), np.array([ts], np.float64)
        for key, v in data.items():
            parts.setdefault(key, []).append((s, np.array([float(v)]), t))
    return _join(parts)
