"""The ingestion wire format: a :class:`WriteBatch` as JSON, and back — with every check the server needs.

Why this shape: metric columns travel as base64 of the same little-endian arrays the stores keep
(``steps`` int64, ``values``/``ts`` float64), all keys of a batch packed into three arrays with a count
per key, so NaN/Inf survive bit-exact, encoding costs three ``tobytes`` per batch, and the server splits
them back into per-key arrays without a per-point (or per-key base64) Python loop. The
rest (samples, findings, events, losses, run fields) is plain JSON (Python's ``json``: ``NaN`` and
``Infinity`` tokens allowed, as Python writes them).

An op is ``{"seq": N, "create": {run row}?, "batch": {...}?}``; a request body is
``{"stream": "<client stream id>", "ops": [op, ...]}``. :func:`decode_batch` raises :class:`BadBatch`
naming the field at fault — the server answers 422 with that message and stores nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from rlcockpit.store.batch import DataLoss, WriteBatch, step_ranges
from rlcockpit.store.clean import checked_key
from rlcockpit.store.rules import MAX_KEY_LEN, MAX_STEP

MAX_KEYS_PER_BATCH = 20_000
RUN_FIELDS = {"summary", "heartbeat_at", "heartbeat_mono", "boot_id", "status", "exit_code", "finished_at", "config",
              "notes", "tags", "group", "name", "data_lost"}
CREATE_FIELDS = {"id", "project", "name", "group", "tags", "config", "meta", "notes", "created_at", "status", "summary"}


class BadBatch(ValueError):
    """A batch the server refuses (malformed, or a step going backwards): nothing of it is stored."""


def _b64(a: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return str(obj)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, default=_json_default, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def encode_batch(batch: WriteBatch) -> dict[str, Any]:
    """The JSON-ready form of ``batch``."""
    out: dict[str, Any] = {}
    cols = [(k, c) for k, c in batch.points.items() if len(c[0])]
    if cols:  # all keys packed into three arrays: three base64 strings per batch, not three per key
        out["points"] = {"keys": [k for k, _ in cols], "counts": [len(c[0]) for _, c in cols],
                         "s": _b64(np.concatenate([c[0] for _, c in cols]), "<i8"),
                         "v": _b64(np.concatenate([c[1] for _, c in cols]), "<f8"),
                         "t": _b64(np.concatenate([c[2] for _, c in cols]), "<f8")}
    if batch.samples:
        out["samples"] = [[int(step), list(rows)] for step, rows in batch.samples]
    if batch.findings:
        out["findings"] = [f.to_dict() if hasattr(f, "to_dict") else dict(f) for f in batch.findings]
    if batch.events:
        out["events"] = [list(e) for e in batch.events]
    if batch.losses:
        out["losses"] = [{**loss.payload(), "id": getattr(loss, "id", None), "counted": getattr(loss, "counted", 0)}
                         for loss in batch.losses]
    if batch.run_fields:
        out["run_fields"] = dict(batch.run_fields)
    if batch.meta_patch:
        out["meta_patch"] = dict(batch.meta_patch)
    return out


def _array(obj: Any, dtype: str, where: str) -> np.ndarray:
    if not isinstance(obj, str):
        raise BadBatch(f"{where}: expected base64 text")
    try:
        raw = base64.b64decode(obj, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadBatch(f"{where}: not base64 ({exc})") from None
    if len(raw) % 8:
        raise BadBatch(f"{where}: {len(raw)} bytes is not a whole number of 8-byte values")
    return np.frombuffer(raw, dtype=dtype)


Packed = tuple[list[str], list[int], np.ndarray, np.ndarray, np.ndarray]  # keys, counts, steps, values, ts


def _check_key(key: Any) -> None:
    why = checked_key(key)  # the rules log() applies too (store/rules.py)
    if why is not None:
        raise BadBatch(f"points[{str(key)[:80]!r}]: bad metric name: {why} (1-{MAX_KEY_LEN} printable characters)")


def decode_packed(points: Any) -> Packed:
    """The packed columns of a batch's ``points``, checked (not yet split per key)."""
    if not isinstance(points, Mapping) or not isinstance(points.get("keys"), list) \
            or not isinstance(points.get("counts"), list):
        raise BadBatch("points: expected {keys: [...], counts: [...], s, v, t}")
    keys, counts = points["keys"], points["counts"]
    if len(keys) != len(counts):
        raise BadBatch(f"points: {len(keys)} keys but {len(counts)} counts")
    if len(keys) > MAX_KEYS_PER_BATCH:
        raise BadBatch(f"points: {len(keys)} keys in one batch (at most {MAX_KEYS_PER_BATCH})")
    if len(set(keys)) != len(keys):
        raise BadBatch("points: a key appears twice")
    for key in keys:
        _check_key(key)
    if not all(type(n) is int and n > 0 for n in counts):
        raise BadBatch("points.counts: expected positive integers")
    s = _array(points.get("s"), "<i8", "points.s")
    v = _array(points.get("v"), "<f8", "points.v")
    t = _array(points.get("t"), "<f8", "points.t")
    total = sum(counts)
    if not len(s) == len(v) == len(t) == total:
        raise BadBatch(f"points: {total} points announced, but steps, values and timestamps hold {len(s)}, "
                       f"{len(v)} and {len(t)}")
    if total and s.min() < 0:
        raise BadBatch(f"points.s: steps must be within 0..2**63-1 (got {int(s.min())})")
    return keys, counts, s, v, t


def unpack(parts: list[Packed]) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per-key columns of several packed batches, in batch order: one stable sort and one split in all
    (not a split per batch and a concatenate per key and batch)."""
    if not parts:
        return {}
    if len(parts) == 1:
        keys, counts, s, v, t = parts[0]
        bounds = np.cumsum(counts)[:-1]
        return dict(zip(keys, zip(np.split(s, bounds), np.split(v, bounds), np.split(t, bounds))))
    code: dict[str, int] = {}
    for keys, *_ in parts:
        for k in keys:
            code.setdefault(k, len(code))
    which = np.concatenate([np.repeat(np.array([code[k] for k in keys], np.int64), counts)
                            for keys, counts, *_ in parts])
    order = np.argsort(which, kind="stable")
    s = np.concatenate([p[2] for p in parts])[order]
    v = np.concatenate([p[3] for p in parts])[order]
    t = np.concatenate([p[4] for p in parts])[order]
    bounds = np.cumsum(np.bincount(which, minlength=len(code)))[:-1]
    return dict(zip(code, zip(np.split(s, bounds), np.split(v, bounds), np.split(t, bounds))))


def _decode_points(points: Any) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    return unpack([decode_packed(points)])


def _decode_list(obj: Any, name: str) -> list:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise BadBatch(f"{name}: expected a list")
    return obj


def decode_batch(obj: Any, *, packed: list[Packed] | None = None) -> WriteBatch:
    """A :class:`WriteBatch` from its JSON form; :class:`BadBatch` names what is wrong. With ``packed``, the
    points are appended there still packed (the server unpacks all batches of a request at once)."""
    if not isinstance(obj, Mapping):
        raise BadBatch("batch: expected an object")
    unknown = set(obj) - {"points", "samples", "findings", "events", "losses", "run_fields", "meta_patch"}
    if unknown:
        raise BadBatch(f"batch: unknown fields {sorted(unknown)}")
    batch = WriteBatch()
    if obj.get("points"):
        if packed is None:
            batch.points = _decode_points(obj["points"])
        else:
            packed.append(decode_packed(obj["points"]))
    for i, item in enumerate(_decode_list(obj.get("samples"), "samples")):
        if not (isinstance(item, list) and len(item) == 2 and _is_step(item[0]) and isinstance(item[1], list)
                and all(isinstance(r, Mapping) for r in item[1])):
            raise BadBatch(f"samples[{i}]: expected [step, [row objects]]")
        batch.samples.append((int(item[0]), [dict(r) for r in item[1]]))
    for i, f in enumerate(_decode_list(obj.get("findings"), "findings")):
        if not isinstance(f, Mapping) or not isinstance(f.get("detector", ""), str):
            raise BadBatch(f"findings[{i}]: expected a finding object")
        batch.findings.append(dict(f))
    for i, e in enumerate(_decode_list(obj.get("events"), "events")):
        if not (isinstance(e, list) and len(e) in (3, 4) and isinstance(e[0], str) and e[0]
                and isinstance(e[1], Mapping) and (e[2] is None or _is_step(e[2]))):
            raise BadBatch(f"events[{i}]: expected [kind, payload, step|null(, id)]")
        batch.events.append(tuple(e))
    for i, loss in enumerate(_decode_list(obj.get("losses"), "losses")):
        batch.losses.append(_decode_loss(loss, i))
    fields = obj.get("run_fields") or {}
    if not isinstance(fields, Mapping) or set(fields) - RUN_FIELDS:
        raise BadBatch(f"run_fields: only {sorted(RUN_FIELDS)} may be set")
    batch.run_fields = dict(fields)
    meta = obj.get("meta_patch") or {}
    if not isinstance(meta, Mapping):
        raise BadBatch("meta_patch: expected an object")
    batch.meta_patch = dict(meta)
    return batch


def _decode_loss(obj: Any, i: int) -> DataLoss:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("what"), str) or not isinstance(obj.get("reason"), str):
        raise BadBatch(f"losses[{i}]: expected a data_lost payload")
    try:
        loss = DataLoss(obj["what"], obj["reason"], [[int(a), int(b)] for a, b in obj.get("ranges") or []],
                        int(obj.get("entries") or 0), int(obj.get("points") or 0),
                        None if obj.get("sink") in (None, "store") else str(obj["sink"]), str(obj.get("message") or ""),
                        obj.get("first_ts"), obj.get("last_ts"))
    except (TypeError, ValueError) as exc:
        raise BadBatch(f"losses[{i}]: {exc}") from None
    if obj.get("id"):
        loss.id = str(obj["id"])  # type: ignore[attr-defined]
        loss.counted = int(obj.get("counted") or 0)  # type: ignore[attr-defined]
    return loss


def _is_step(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_STEP


def decode_create(obj: Any) -> dict[str, Any]:
    """The run row of a ``create`` op."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("id"), str) or not obj["id"]:
        raise BadBatch("create: expected a run object with an id")
    if set(obj) - CREATE_FIELDS:
        raise BadBatch(f"create: unknown fields {sorted(set(obj) - CREATE_FIELDS)}")
    if not isinstance(obj.get("project", "default"), str):
        raise BadBatch("create.project: expected text")
    return dict(obj)


def op_losses(body: bytes, reason: str, message: str) -> list[DataLoss]:
    """What is lost when the spooled op ``body`` is dropped: its steps, points and entries, read leniently
    (the op may be refused precisely because a key or value breaks the rules)."""
    try:
        obj = json.loads(body).get("batch") or {}
    except (ValueError, AttributeError):
        return [DataLoss("metrics", reason, [], entries=1, message=message)]
    out = []
    points = _lenient_points(obj.get("points") if isinstance(obj, Mapping) else None)
    if points is not None:
        steps, keys = points
        out.append(DataLoss("metrics", reason, step_ranges(steps), entries=1, points=len(steps),
                            message=f"{message} (keys: {', '.join(repr(k)[:80] for k in keys[:10])}"
                                    + (f", … {len(keys)} in all)" if len(keys) > 10 else ")")))
    samples = obj.get("samples") if isinstance(obj, Mapping) else None
    if isinstance(samples, list) and samples:
        steps = sorted({int(x[0]) for x in samples if isinstance(x, list) and x and _is_step(x[0])})
        out.append(DataLoss("samples", reason, [[s, s] for s in steps], entries=len(samples), message=message))
    n = sum(len(obj.get(k) or []) for k in ("events", "findings") if isinstance(obj, Mapping)
            and isinstance(obj.get(k), list))
    if n:
        out.append(DataLoss("events", reason, [], entries=n, message=message))
    return out or [DataLoss("summary", reason, [], entries=1, message=message)]


def _lenient_points(points: Any) -> tuple[np.ndarray, list] | None:
    """``(steps, keys)`` of a packed ``points`` object, without the checks a refused op may fail."""
    if not isinstance(points, Mapping) or not isinstance(points.get("keys"), list):
        return None
    try:
        steps = np.frombuffer(base64.b64decode(points.get("s") or ""), "<i8")
    except (binascii.Error, ValueError, TypeError):
        steps = np.zeros(0, np.int64)
    return steps[steps >= 0], list(points["keys"])
