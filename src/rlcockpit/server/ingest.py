"""Applying a client's ops to the team store: exactly once, in order, all of a request or none of it.

One request carries the ops of one run from one client stream (see :mod:`rlcockpit.store.remote.wire`). In
one transaction: take the run's advisory lock (two requests of the same run never interleave, across
server processes too), read the stream's cursor, skip the ops at or below it (a retried request),
check what is left (the caller's role in the run's project, steps never going backwards per key),
write it as one merged batch, and move the cursor. A retried request therefore stores nothing twice,
and a refused one stores nothing at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.clean import split_batch, split_run_row
from rlcockpit.store.postgres.store import PostgresStore
from rlcockpit.store.remote.wire import BadBatch, decode_batch, decode_create, unpack
from rlcockpit.store.rules import name_problem

MAX_OPS = 10_000


class Refused(Exception):
    """The caller may not write this run (HTTP 403)."""


class UnknownRun(LookupError):
    """Data for a run that was never created (HTTP 404)."""


@dataclass
class Applied:
    applied_through: int
    applied: int = 0
    duplicates: int = 0
    project: str = ""
    created: bool = False
    points: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"applied_through": self.applied_through, "applied": self.applied, "duplicates": self.duplicates}


def parse_request(body: bytes) -> tuple[str, list[dict[str, Any]]]:
    """``(stream, ops)`` of a request body; :class:`BadBatch` for anything malformed."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBatch(f"body is not JSON: {exc}") from None
    if not isinstance(obj, Mapping):
        raise BadBatch("body: expected {\"stream\": ..., \"ops\": [...]}")
    stream, ops = obj.get("stream"), obj.get("ops")
    if not isinstance(stream, str) or not 1 <= len(stream) <= 128:
        raise BadBatch("stream: expected a client stream id (1-128 characters)")
    if not isinstance(ops, list) or not ops:
        raise BadBatch("ops: expected a non-empty list")
    if len(ops) > MAX_OPS:
        raise BadBatch(f"ops: {len(ops)} ops in one request (at most {MAX_OPS})")
    last = 0
    for i, op in enumerate(ops):
        seq = op.get("seq") if isinstance(op, Mapping) else None
        if not isinstance(seq, int) or isinstance(seq, bool) or seq <= last:
            raise BadBatch(f"ops[{i}].seq: expected increasing positive integers")
        last = seq
    return stream, ops


def ingest(store: PostgresStore, run_id: str, stream: str, ops: Sequence[Mapping[str, Any]],
           authorize: Callable[[str, bool], None]) -> Applied:
    """Apply ``ops`` (see the module doc). ``authorize(project, creating)`` raises :class:`Refused`."""
    why = name_problem(run_id, optional=False)
    if why:
        raise BadBatch(f"run id {run_id[:80]!r}: {why}")
    decoded = []
    for i, op in enumerate(ops):
        try:
            create = decode_create(op["create"]) if op.get("create") is not None else None
            packed: list = []
            batch = decode_batch(op["batch"], packed=packed) if op.get("batch") is not None else None
        except BadBatch as exc:  # name the op: the client drops that one and keeps the rest
            raise BadBatch(f"ops[{i}] (seq {op['seq']}) {exc}") from None
        if create is not None and create["id"] != run_id:
            raise BadBatch(f"ops[{i}].create.id {create['id']!r} is not the run of this request ({run_id!r})")
        _check_op(i, int(op["seq"]), create, batch)
        decoded.append((int(op["seq"]), create, batch, packed))
    return store._tx(_apply, store, run_id, stream, decoded, authorize)


def _check_op(i: int, seq: int, create: dict[str, Any] | None, batch: WriteBatch | None) -> None:
    """Refuse an op holding a value the store cannot hold (store/rules.py: the rules the client cleans by)."""
    refused = split_run_row(create)[1] if create is not None else []
    if batch is not None:
        refused += split_batch(batch)[1]
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise BadBatch(f"ops[{i}] (seq {seq}) {refused[0]}{more}")


def _apply(tx: Any, store: PostgresStore, run_id: str, stream: str, decoded: list, authorize) -> Applied:
    c = tx.conn
    names = sorted({k for *_, packed in decoded for p in packed for k in p[0]})
    # one round trip: the run's lock, the stream's cursor, the run's project, its keys' ids and last steps
    lock = c.execute("SELECT pg_advisory_xact_lock(hashtext(%s)), (SELECT last_seq FROM ingest_cursors WHERE run_id = "
                     "%s AND stream = %s), (SELECT project FROM runs WHERE id = %s), (SELECT json_agg(json_build_array("
                     "name, id, last_step)) FROM keys WHERE run_id = %s AND name = ANY(%s))",
                     (run_id, run_id, stream, run_id, run_id, names)).fetchone()
    last = int(lock[1] or 0)
    known = {name: (kid, step) for name, kid, step in (lock[3] or [])}
    for name, (kid, _) in known.items():
        tx.new_keys[(run_id, name)] = kid
    out = Applied(applied_through=max(last, decoded[-1][0]))
    fresh = [d for d in decoded if d[0] > last]
    out.duplicates = len(decoded) - len(fresh)
    run = None if lock[2] is None else (lock[2],)
    if run is not None:
        authorize(run[0], False)  # before anything is answered, a replay's cursor included
    if not fresh:
        if run is None:
            raise UnknownRun(f"run {run_id!r} does not exist on this server")
        return out
    for _seq, create, _batch, _packed in fresh:
        if create is not None and run is None:
            project = create.get("project") or "default"
            authorize(project, True)
            store._create_tx(tx, create)
            run, out.created = (project,), True
    merged = merge_batches([b for _, _, b, _ in fresh if b is not None])
    merged.points = unpack([p for *_, packed in fresh for p in packed])
    if run is None:
        raise UnknownRun(f"run {run_id!r} does not exist on this server (its create op was never received)")
    out.project = run[0]
    _check_steps(merged, {k: v[1] for k, v in known.items()})
    if merged:
        store.batch_tx(tx, run_id, merged)
    c.execute("INSERT INTO ingest_cursors(run_id, stream, last_seq, updated_at) VALUES (%s, %s, %s, extract(epoch "
              "FROM now())) ON CONFLICT (run_id, stream) DO UPDATE SET last_seq = EXCLUDED.last_seq, updated_at = "
              "EXCLUDED.updated_at", (run_id, stream, fresh[-1][0]))
    out.applied = len(fresh)
    out.points = merged.points
    return out


def merge_batches(batches: Sequence[WriteBatch]) -> WriteBatch:
    """One batch of many, in order: each key's arrays concatenated once (not once per batch, which is
    quadratic in the batches of a request), the rest appended, later run fields winning."""
    out = WriteBatch()
    columns: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for b in batches:
        for key, col in b.points.items():
            columns.setdefault(key, []).append(col)
        out.samples.extend(b.samples)
        out.findings.extend(b.findings)
        out.events.extend(b.events)
        out.losses.extend(b.losses)
        out.run_fields.update(b.run_fields)
        out.meta_patch.update(b.meta_patch)
    out.points = {k: cols[0] if len(cols) == 1 else tuple(np.concatenate([c[i] for c in cols]) for i in range(3))
                  for k, cols in columns.items()}
    return out


def _check_steps(batch: WriteBatch, stored: dict[str, int | None]) -> None:
    """Refuse a batch in which a key's steps go backwards (within it, or behind what is stored)."""
    for key, (steps, _, _) in batch.points.items():
        if len(steps) > 1 and np.any(steps[1:] < steps[:-1]):
            i = int(np.argmax(steps[1:] < steps[:-1])) + 1
            raise BadBatch(f"points[{key!r}]: step going backwards: step {int(steps[i])} after step {int(steps[i - 1])}")
        have = stored.get(key)
        if have is not None and int(steps[0]) < int(have):
            raise BadBatch(f"points[{key!r}]: step going backwards: step {int(steps[0])} after stored step {have}")
