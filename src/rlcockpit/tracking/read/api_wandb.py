"""W&B's public-API habits on the read side: ``"entity/project"`` paths, MongoDB-style ``filters``, ``order``,
``history(samples=, pandas=)`` and ``scan_history()`` rows with ``_step``.

Why: analysis notebooks written against ``wandb.Api()`` are the other half of a W&B user's code; with
these they read an rlcockpit store unchanged. Filters are evaluated here, on the run rows (a store holds
thousands of runs, not millions), with W&B's field names: ``state``, ``display_name``, ``config.<key>``,
``summary_metrics.<key>``, ``tags``, ``group``, ``jobType``, ``created_at``, and the operators ``$eq $ne
$gt $gte $lt $lte $in $nin $exists $regex $and $or $nor``. An unknown operator is a ``ValueError`` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

_MISSING = object()
_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$regex", "$options")


def split_path(path: str | None) -> tuple[str | None, str | None]:
    """``"entity/project"`` or ``"project"`` → ``(entity, project)``."""
    if not path:
        return None, None
    parts = path.split("/")
    return ("/".join(parts[:-1]) or None, parts[-1]) if len(parts) > 1 else (None, path)


def run_ref(path: str) -> str:
    """``"entity/project/run_id"``, ``"project/run_id"``, ``"entity/project/runs/run_id"`` → ``run_id``."""
    parts = [p for p in path.split("/") if p]
    return parts[-1] if parts else path


def _field(row: Mapping[str, Any], name: str) -> Any:
    if name in ("state", "status"):
        return row.get("status")
    if name in ("display_name", "displayName", "name"):
        return row.get("name")
    if name in ("jobType", "job_type"):
        return (row.get("meta") or {}).get("job_type")
    if name in ("createdAt", "created_at"):
        return row.get("created_at")
    for prefix, col in (("config.", "config"), ("summary_metrics.", "summary"), ("summary.", "summary")):
        if name.startswith(prefix):
            value: Any = row.get(col) or {}
            rest = name[len(prefix):]
            if rest.endswith(".value"):  # W&B's filter paths name config values as config.lr.value
                rest = rest[: -len(".value")]
            if rest in value:
                return value[rest]
            parts = rest.split(".")
            top = value.get(parts[0]) if isinstance(value, Mapping) else None
            if len(parts) > 2 and parts[1] == "value" and not (isinstance(top, Mapping) and "value" in top):
                del parts[1]  # ... and nested ones as config.optimizer.value.name (W&B keeps {"value": ...} per key)
            for part in parts:
                if not isinstance(value, Mapping) or part not in value:
                    return _MISSING
                value = value[part]
            return value
    return row.get(name, _MISSING)


def _cmp(value: Any, op: str, arg: Any, opts: str = "") -> bool:
    if op == "$exists":
        return (value is not _MISSING) == bool(arg)
    if value is _MISSING:
        return op in ("$ne", "$nin")
    if isinstance(value, list) and op in ("$eq", "$in", "$ne", "$nin"):  # tags: any element matches
        hit = any(_cmp(v, "$in" if op in ("$in", "$nin") else "$eq", arg) for v in value)
        return hit if op in ("$eq", "$in") else not hit
    try:
        if op == "$eq":
            return value == arg
        if op == "$ne":
            return value != arg
        if op == "$in":
            return value in arg
        if op == "$nin":
            return value not in arg
        if op == "$regex":
            return isinstance(value, str) and re.search(arg, value, re.I if "i" in opts else 0) is not None
        if op in ("$gt", "$gte", "$lt", "$lte"):
            return {"$gt": value > arg, "$gte": value >= arg, "$lt": value < arg, "$lte": value <= arg}[op]
    except TypeError:  # comparing a number to a string: no match, as in MongoDB
        return False
    raise ValueError(f"filters: unknown operator {op!r} (supported: {', '.join(_OPS)}, $and, $or, $nor)")


def iso_time(ts: float) -> str:
    """A unix time as W&B's ``createdAt``: UTC, ``YYYY-MM-DDTHH:MM:SS``."""
    import datetime

    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _has_text(cond: Any) -> bool:
    if isinstance(cond, str):
        return True
    if isinstance(cond, Mapping):
        return any(_has_text(v) for v in cond.values())
    return isinstance(cond, (list, tuple)) and any(isinstance(v, str) for v in cond)


def matches(row: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """Does a run row satisfy a W&B (MongoDB-style) filter?"""
    for key, cond in flt.items():
        if key in ("$and", "$or", "$nor"):
            hits = [matches(row, c) for c in cond]
            ok = all(hits) if key == "$and" else any(hits) if key == "$or" else not any(hits)
            if not ok:
                return False
            continue
        if key.startswith("$"):
            raise ValueError(f"filters: unknown operator {key!r} at the top level")
        value = _field(row, key)
        if key in ("created_at", "createdAt") and isinstance(value, (int, float)) and _has_text(cond):
            value = iso_time(value)  # W&B's filters give times as ISO text ("2024-06-01T00:00:00"), compared as text
        if isinstance(cond, Mapping) and cond and all(str(k).startswith("$") for k in cond):
            opts = cond.get("$options", "")
            if not all(_cmp(value, op, arg, opts) for op, arg in cond.items() if op != "$options"):
                return False
        elif not _cmp(value, "$eq", cond):
            return False
    return True


def order_rows(rows: list[dict[str, Any]], order: str | None) -> list[dict[str, Any]]:
    """W&B's ``order="-created_at"`` (default, newest first), ``"+summary_metrics.acc"``..."""
    if not order:
        return rows
    desc = order.startswith("-")
    name = order.lstrip("+-")
    present = [r for r in rows if _field(r, name) not in (_MISSING, None)]
    missing = [r for r in rows if _field(r, name) in (_MISSING, None)]
    try:
        present.sort(key=lambda r: _field(r, name), reverse=desc)
    except TypeError:
        present.sort(key=lambda r: str(_field(r, name)), reverse=desc)
    return present + missing


def wandb_rows(store: Any, run_id: str, keys: Sequence[str] | None, min_step: int | None = None,
               max_step: int | None = None, *, require_all: bool = True) -> Iterator[dict[str, Any]]:
    """History rows as W&B gives them: ``{"_step": N, key: value, ...}`` with each value as logged (a logged
    NaN or ±Inf stays in its row, as W&B's ``scan_history`` returns it; a key logged as ``None`` is in its
    row as ``None``, W&B's null; keys not logged at a step are left out). With ``keys``: only those, and (``require_all``) only the steps where every one of them was logged. Built from the
    stored series, not from a step x key frame, where a logged NaN and a key not logged look the same."""
    nulls = null_steps(store, run_id)
    lists = list_values(store, run_id)
    # W&B's own columns: _step in every row; _timestamp and _runtime in every full row, else when asked for
    special = list(SPECIAL_KEYS) if keys is None else [k for k in keys if k in SPECIAL_KEYS]
    if keys is None:
        keys, require_all = [k for k in store.keys(run_id) if not k.startswith("system/")], False
        keys += [k for k in (*nulls, *lists) if k not in keys]
    keys = [k for k in keys if k not in SPECIAL_KEYS]
    by_step: dict[int, dict[str, Any]] = {}
    stamps: dict[int, float] = {}

    def within(step: int) -> bool:
        return (min_step is None or step >= min_step) and (max_step is None or step < max_step)

    for key in keys or ([k for k in store.keys(run_id) if not k.startswith("system/")] if special else []):
        steps, values, ts = store.series(run_id, key)
        for step, value, t in zip(steps.tolist(), values.tolist(), ts.tolist()):
            if within(step):
                if key in keys:
                    by_step.setdefault(step, {})[key] = value
                elif special:
                    by_step.setdefault(step, {})
                stamps[step] = max(stamps.get(step, t), t)
        for lo, hi in nulls.get(key, ()):  # logged as None: the key is in the row, its value is None
            for step in range(max(lo, min_step or 0), hi + 1 if max_step is None else min(hi + 1, max_step)):
                by_step.setdefault(step, {}).setdefault(key, None)
    for key in keys:
        for step, value, t in lists.get(key, ()):  # logged as a list: in its row as logged (W&B's JSON list)
            if within(step):
                by_step.setdefault(step, {})[key] = value
                stamps[step] = max(stamps.get(step, t), t)
    created = float(store.get_run(run_id).get("created_at") or 0.0) if special else 0.0
    for step in sorted(by_step):
        row = by_step[step]
        if require_all and keys and len(row) < len(keys):
            continue
        out: dict[str, Any] = {"_step": int(step)}
        if "_timestamp" in special and step in stamps:
            out["_timestamp"] = stamps[step]
        if "_runtime" in special and step in stamps:
            out["_runtime"] = stamps[step] - created
        yield {**out, **{k: row[k] for k in keys if k in row}}


#: W&B's own history columns: ``_step`` is in every row; ``_timestamp`` (when the step was logged) and
#: ``_runtime`` (seconds since the run was created) are added when asked for in ``keys``
SPECIAL_KEYS = ("_step", "_timestamp", "_runtime")


def null_steps(store: Any, run_id: str) -> dict[str, list[tuple[int, int]]]:
    """Per key, the inclusive step ranges where it was logged as ``None`` (the writer's ``null_values``
    events); a number logged at the same step wins over the null."""
    out: dict[str, list[tuple[int, int]]] = {}
    for event in store.events(run_id, "null_values"):
        for key, ranges in ((event.get("payload") or {}).get("keys") or {}).items():
            out.setdefault(key, []).extend((int(lo), int(hi)) for lo, hi in ranges)
    return out


def list_values(store: Any, run_id: str) -> dict[str, list[tuple[int, Any, float]]]:
    """Per key, the ``(step, list, time)`` of each list logged (the writer's ``list_values`` events)."""
    out: dict[str, list[tuple[int, Any, float]]] = {}
    for event in store.events(run_id, "list_values"):
        for key, logged in ((event.get("payload") or {}).get("values") or {}).items():
            out.setdefault(key, []).extend((int(e[0]), e[1], float(e[2])) for e in logged)
    return out


def history_frame(store: Any, run_id: str, keys: Sequence[str] | None):
    """``Api().run().history()``'s frame: the store's (index ``step``, a column per key, numbers only) with
    the keys logged as lists (cells holding the lists) and W&B's columns: ``_step`` (the index) always;
    ``_timestamp`` (unix time the step was logged, its newest point) and ``_runtime`` (seconds since the
    run was created) without ``keys``, or when ``keys`` names them — as W&B's ``history()``."""
    import pandas as pd

    asked = None if keys is None else [k for k in keys if k not in SPECIAL_KEYS]
    special = list(SPECIAL_KEYS) if keys is None else ["_step", *(k for k in keys if k in SPECIAL_KEYS[1:])]
    timed = "_timestamp" in special or "_runtime" in special
    df = store.history(run_id, asked, with_time=timed)
    ts = df.pop("_timestamp") if timed else None
    for key, entries in list_values(store, run_id).items():
        if asked is not None and key not in asked:
            continue
        cells = pd.Series({step: value for step, value, _ in entries}, dtype=object)
        df = df.reindex(df.index.union(cells.index))
        df[key] = cells if key not in df else df[key].astype(object).combine_first(cells)
        if timed:
            times = pd.Series([t for _, _, t in entries], index=[step for step, _, _ in entries], dtype=float)
            ts = pd.concat([ts, times]).groupby(level=0).max()
    df.index = df.index.astype("int64")
    df.index.name = "step"
    df["_step"] = df.index.to_numpy()
    if timed:
        ts = ts.reindex(df.index).astype(float)
        if "_runtime" in special:
            df["_runtime"] = ts - float(store.get_run(run_id).get("created_at") or 0.0)
        if "_timestamp" in special:
            df["_timestamp"] = ts
    return df


def sample_rows(rows: list[dict[str, Any]], samples: int | None) -> list[dict[str, Any]]:
    """At most ``samples`` rows, evenly spaced, first and last kept (W&B's ``history(samples=500)``)."""
    if not samples or len(rows) <= samples:
        return rows
    if samples == 1:
        return [rows[-1]]
    idx = sorted({round(i * (len(rows) - 1) / (samples - 1)) for i in range(samples)})
    return [rows[i] for i in idx]
