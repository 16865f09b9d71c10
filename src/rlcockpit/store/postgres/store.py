"""The team store: the run store interface over PostgreSQL (psycopg 3, plain SQL, a connection pool).

Same data model as the SQLite store — per-key chunks of three little-endian numpy arrays (steps int64,
values float64, timestamps float64) — with one difference made for many concurrent writers: a write
never rewrites a chunk. Each write appends one chunk per key (binary ``COPY``), and every
:data:`COMPACT_AFTER` writes of a key its small tail chunks are merged into full ones in the same
transaction (the merged rows reuse the ids they replace, and chunk order is id order), so readers see
few chunks and the table no dead tuples from tail rewrites. How chunks are written, merged and read back:
:mod:`rlcockpit.store.postgres.chunks`.

Errors: a server that cannot be reached (refused, restarting, pool exhausted) is
:class:`StoreUnavailable` (``io``), a lock or statement timeout :class:`StoreLocked`, a full disk
:class:`StoreFull` — the tracking writer keeps the batch and retries; anything else is about the data.
Secrets: the URL's password never appears in messages (:func:`redact_url`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool

from rlcockpit.store.base import (
    STORES,
    Series,
    Store,
    effective_status,
)
from rlcockpit.store.batch import DataLoss, WriteBatch
from rlcockpit.store.postgres.chunks import (
    chunk_rows,
    insert_chunks,
    rewrite_tail,
    series_from_chunks,
    series_query,
    tail_chunks,
)
from rlcockpit.store.postgres.errors import probe, redact_url, translate_error
from rlcockpit.store.postgres.schema import ensure_schema
from rlcockpit.store.rows import escape_like, finding_record, loss_increment, sample_dicts
from rlcockpit.store.sqlite import dumps

COMPACT_AFTER = 32  # writes of one key between tail compactions
_JSON_COLS = ("tags", "config", "summary", "meta")
_RUN_COLS = (
    "id", "project", "name", "grp", "tags", "status", "config", "summary", "meta", "notes",
    "created_at", "updated_at", "heartbeat_at", "finished_at", "exit_code", "last_step",
    "heartbeat_mono", "boot_id", "data_lost",
)

# The projects whose runs a lookup by id, name or prefix may find, for the current request (``None``: all).
# The team server's guard sets it to the caller's projects for each request, so every route that resolves
# a run — the dashboard's, ingestion's, the team routes — is scoped without being able to forget it.
RUN_SCOPE: ContextVar[tuple[str, ...] | None] = ContextVar("rlcockpit_run_scope", default=None)


class _Tx:
    """One write transaction: its connection, and key ids it created (published only after commit)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.new_keys: dict[tuple[str, str], int] = {}


class PostgresStore(Store):
    """A store in a PostgreSQL database (``postgresql://user[:password]@host[:port]/db``)."""

    # ``meta`` keys only the server sets (at run creation) and a batch's ``meta_patch`` never changes: the
    # team server puts ``team_user`` (who ran it, from the token) here, so a client cannot take a run's credit
    server_meta: tuple[str, ...] = ()

    def __init__(self, url: str, *, pool_size: int = 4, connect_timeout_s: float = 5.0,
                 busy_timeout_s: float = 30.0, compaction: str = "inline") -> None:
        self.raw_url = url
        self.url = redact_url(url)
        self.dir = self.url  # what callers print as "the store"
        self._busy_s = float(busy_timeout_s)
        self._connect_s = float(connect_timeout_s)
        self._lock = threading.Lock()
        self._key_ids: dict[tuple[str, str], int] = {}
        self._writes: dict[int, int] = {}  # key id -> writes since its last compaction
        if compaction not in ("inline", "background"):
            raise ValueError(f"compaction must be 'inline' or 'background', got {compaction!r}")
        self.compaction = compaction  # background: a server thread calls compact_due() (ingest latency)
        conninfo = url if "connect_timeout" in url else url + ("&" if "?" in url else "?") + \
            f"connect_timeout={max(1, int(connect_timeout_s))}"
        probe(conninfo, self.url)  # a wrong password or database fails now, with the server's own words
        try:
            self.pool = ConnectionPool(conninfo, min_size=1, max_size=int(pool_size), open=False,
                                       kwargs={"autocommit": True}, timeout=connect_timeout_s,
                                       configure=self._configure,
                                       reconnect_timeout=0, name=f"rlcockpit-{id(self):x}")
            self.pool.open(wait=True, timeout=connect_timeout_s)
            with self.pool.connection() as conn:
                ensure_schema(conn)
        except BaseException as exc:
            pool = getattr(self, "pool", None)
            if pool is not None:
                pool.close(timeout=0)
            err = translate_error(exc, self.url)
            if err is exc:
                raise
            raise err from exc

    # ---- plumbing ---------------------------------------------------------------------------
    def _configure(self, conn: psycopg.Connection) -> None:
        """Per-connection defaults, so a transaction needs no extra round trip to set them."""
        ms = max(1, int(self._busy_s * 1000))
        conn.execute(f"SET lock_timeout = {ms}; SET statement_timeout = {max(ms, 60_000)}")

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection(timeout=self._connect_s) as conn:
                yield conn
        except BaseException as exc:
            err = translate_error(exc, self.url)
            if err is exc:
                raise
            raise err from exc

    def _tx(self, fn, *args, timeout_s: float | None = None):
        """Run ``fn(tx, *args)`` in one transaction; the error that says what happened on failure."""
        with self._conn() as conn:
            tx = _Tx(conn)
            try:
                with conn.transaction():
                    if timeout_s is not None:
                        ms = max(1, int(timeout_s * 1000))
                        conn.execute(f"SET LOCAL lock_timeout = {ms}; SET LOCAL statement_timeout = {max(ms, 30_000)}")
                    out = fn(tx, *args)
            except BaseException:
                with self._lock:
                    for kid in tx.new_keys.values():
                        self._writes.pop(kid, None)
                raise
            if tx.new_keys:
                with self._lock:
                    self._key_ids.update(tx.new_keys)
            return out

    def _query(self, sql: str, params: Sequence[Any] = (), *, binary: bool = False) -> list[tuple]:
        with self._conn() as conn:
            return conn.cursor(binary=binary).execute(sql, params).fetchall()

    def _run_row(self, row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(_RUN_COLS, row))
        for c in _JSON_COLS:
            d[c] = json.loads(d[c]) if d[c] else ({} if c != "tags" else [])
        d["group"] = d.pop("grp")
        d["stored_status"] = d["status"]
        d["status"] = effective_status(d, time.time())
        return d

    def resolve_run_id(self, run_id: str, *, projects: Collection[str] | None = None) -> str:
        """An exact id; else the newest run with that name; else a unique id prefix — among the runs of
        ``projects`` (default: :data:`RUN_SCOPE`, the caller's projects on a team server; ``None``: all).

        A run outside the scope is "no run", exactly like one that does not exist, and messages name
        neither other projects' runs nor the database (they reach HTTP callers)."""
        scope = RUN_SCOPE.get() if projects is None else tuple(projects)
        where, extra = ("", ()) if scope is None else (" AND project = ANY(%s)", (list(scope),))
        rows = self._query(f"SELECT id, 0 AS o FROM runs WHERE id = %s{where} UNION ALL (SELECT id, 1 FROM runs WHERE "
                           f"name = %s{where} ORDER BY created_at DESC LIMIT 1) ORDER BY o LIMIT 1",
                           (run_id, *extra, run_id, *extra))
        if rows:
            return rows[0][0]
        like = escape_like(run_id) + "%"
        ids = [r[0] for r in self._query(f"SELECT id FROM runs WHERE id LIKE %s{where} ORDER BY created_at DESC "
                                         "LIMIT 6", (like, *extra))]
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise KeyError(f"no run {run_id!r}")
        raise KeyError(f"run {run_id!r} is ambiguous: matches {', '.join(ids[:5])}")

    # ---- runs -------------------------------------------------------------------------------
    def create_run(self, run: Mapping[str, Any]) -> None:
        self._tx(self._create_tx, run)

    def _create_tx(self, tx: _Tx, run: Mapping[str, Any]) -> None:
        now = time.time()
        row = {
            "id": run["id"], "project": run.get("project") or "default", "name": run.get("name") or run["id"],
            "grp": run.get("group"), "tags": dumps(list(run.get("tags") or [])),
            "status": run.get("status", "running"), "config": dumps(run.get("config") or {}),
            "summary": dumps(run.get("summary") or {}), "meta": dumps(run.get("meta") or {}),
            "notes": run.get("notes"), "created_at": run.get("created_at", now), "updated_at": now,
            "heartbeat_at": now,
        }
        tx.conn.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join(['%s'] * len(row))})",
                        tuple(row.values()))

    def update_run(self, run_id: str, **fields: Any) -> None:
        if fields:
            self._tx(self._update_tx, run_id, fields)

    def _update_tx(self, tx: _Tx, run_id: str, fields: Mapping[str, Any], last_step: int | None = None) -> None:
        fields = dict(fields)
        if "group" in fields:
            fields["grp"] = fields.pop("group")
        sets, vals = [], []
        for k, v in fields.items():
            if k not in _RUN_COLS or k == "id":
                raise ValueError(f"unknown run field {k!r}")
            sets.append(f"{k} = %s")
            vals.append(dumps(v) if k in _JSON_COLS else v)
        if last_step is not None:
            sets.append("last_step = GREATEST(last_step, %s)")
            vals.append(int(last_step))
        sets.append("updated_at = %s")
        vals.append(time.time())
        tx.conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = %s", (*vals, run_id))

    def list_runs(self, project: str | None = None, *, fields: Collection[str] | None = None) -> list[dict[str, Any]]:
        cols = _RUN_COLS if fields is None else tuple(
            c if c not in _JSON_COLS or c in fields else f"NULL AS {c}" for c in _RUN_COLS)
        sql = f"SELECT {', '.join(cols)} FROM runs"
        params: tuple = ()
        if project is not None:
            sql += " WHERE project = %s"
            params = (project,)
        return [self._run_row(r) for r in self._query(sql + " ORDER BY created_at DESC", params)]

    def get_run(self, run_id: str, *, projects: Collection[str] | None = None) -> dict[str, Any]:
        rid = self.resolve_run_id(run_id, projects=projects)
        rows = self._query(f"SELECT {', '.join(_RUN_COLS)} FROM runs WHERE id = %s", (rid,))
        if not rows:
            raise KeyError(f"no run {run_id!r}")
        return self._run_row(rows[0])

    def delete_run(self, run_id: str) -> None:
        rid = self.resolve_run_id(run_id)
        self._tx(lambda tx: tx.conn.execute("DELETE FROM runs WHERE id = %s", (rid,)))  # tables cascade
        with self._lock:
            for k in [k for k in self._key_ids if k[0] == rid]:
                self._writes.pop(self._key_ids.pop(k), None)

    # ---- metrics ----------------------------------------------------------------------------
    def append_points(self, run_id: str, points: Mapping[str, Series]) -> None:
        if points:
            self._tx(self._points_tx, run_id, points)

    def key_ids(self, tx: _Tx, run_id: str, names: Sequence[str]) -> dict[str, int]:
        """Ids of the run's keys ``names``, created when missing (inside ``tx``)."""
        out: dict[str, int] = {}
        with self._lock:
            for n in names:
                kid = self._key_ids.get((run_id, n)) or tx.new_keys.get((run_id, n))
                if kid is not None:
                    out[n] = kid
        missing = [n for n in names if n not in out]
        if missing:
            c = tx.conn
            c.execute("INSERT INTO keys(run_id, name) SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                      (run_id, missing))
            for name, kid in c.execute("SELECT name, id FROM keys WHERE run_id = %s AND name = ANY(%s)",
                                       (run_id, missing)).fetchall():
                out[name] = kid
                tx.new_keys[(run_id, name)] = kid
        return out

    def _points_tx(self, tx: _Tx, run_id: str, points: Mapping[str, Series], defer_run_update: bool = False
                   ) -> int | None:
        """Append the points; returns the highest non-system step (the run row's ``last_step`` is updated
        here unless ``defer_run_update``: then the caller folds it into its own UPDATE of the run)."""
        points = {k: v for k, v in points.items() if len(v[0])}
        if not points:
            return None
        ids = self.key_ids(tx, run_id, list(points))
        rows, last_ids, last_steps, due = [], [], [], []
        max_step = None
        for key, (steps, vals, ts) in points.items():
            steps = np.ascontiguousarray(steps, dtype="<i8")
            vals = np.ascontiguousarray(vals, dtype="<f8")
            ts = np.ascontiguousarray(ts, dtype="<f8")
            kid = ids[key]
            rows += chunk_rows(kid, steps, vals, ts)
            last_ids.append(kid)
            last_steps.append(int(steps.max()))
            if not key.startswith("system/"):
                max_step = last_steps[-1] if max_step is None else max(max_step, last_steps[-1])
            with self._lock:
                n = self._writes.get(kid, 0) + 1
                self._writes[kid] = n
            if n >= COMPACT_AFTER:
                due.append(kid)
        c = tx.conn
        insert_chunks(c, rows)
        c.execute("UPDATE keys SET last_step = GREATEST(keys.last_step, v.s) FROM unnest(%s::bigint[], "
                  "%s::bigint[]) AS v(id, s) WHERE keys.id = v.id", (last_ids, last_steps))
        if max_step is not None and not defer_run_update:
            c.execute("UPDATE runs SET last_step = GREATEST(last_step, %s) WHERE id = %s", (max_step, run_id))
        if self.compaction == "inline":
            for kid in due:
                self._compact(c, kid)
        return max_step

    def _compact(self, c: psycopg.Connection, kid: int) -> None:
        """Merge the key's trailing small chunks into full ones (its write count starts again from 0)."""
        rows = tail_chunks(c, kid)
        with self._lock:
            self._writes[kid] = 0
        rewrite_tail(c, kid, rows)

    def compact_due(self, limit: int = 200) -> int:
        """Compact the keys written :data:`COMPACT_AFTER` times since their last compaction, each in its own short
        transaction (the team server's background thread; ingest never waits for it). Returns keys done."""
        with self._lock:
            due = [k for k, n in self._writes.items() if n >= COMPACT_AFTER][:limit]
        for kid in due:
            def work(tx: _Tx, kid: int = kid) -> None:
                if tx.conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (kid,)).fetchone()[0]:
                    self._compact(tx.conn, kid)
            self._tx(work)
        return len(due)

    def keys(self, run_id: str) -> list[str]:
        rid = self.resolve_run_id(run_id)
        return [r[0] for r in self._query("SELECT name FROM keys WHERE run_id = %s ORDER BY name", (rid,))]

    def key_last_steps(self, run_id: str, names: Sequence[str]) -> dict[str, int | None]:
        """The last stored step of each of the run's keys ``names`` that exists."""
        rows = self._query("SELECT name, last_step FROM keys WHERE run_id = %s AND name = ANY(%s)", (run_id, list(names)))
        return dict(rows)

    def series(self, run_id: str, key: str, *, start_step: int | None = None, end_step: int | None = None,
               max_points: int | None = None, with_ts: bool = True) -> Series:
        rid = self.resolve_run_id(run_id)
        sql, params = series_query(rid, key, start_step, end_step, with_ts)
        return series_from_chunks(self._query(sql, params, binary=True), start_step, end_step, max_points, with_ts)

    # ---- batched writes -----------------------------------------------------------------------
    def write_batch(self, run_id: str, batch: WriteBatch, *, timeout_s: float | None = None) -> None:
        """Everything in ``batch`` in one transaction (see :meth:`Store.write_batch`)."""
        if batch:
            self._tx(self.batch_tx, run_id, batch, timeout_s=timeout_s)

    def batch_tx(self, tx: _Tx, run_id: str, batch: WriteBatch) -> None:
        """Write ``batch`` inside ``tx`` (also used by the team server's idempotent ingestion)."""
        max_step = self._points_tx(tx, run_id, batch.points, defer_run_update=True) if batch.points else None
        for step, rows in batch.samples:
            self._samples_tx(tx, run_id, step, rows)
        for finding in batch.findings:
            self._finding_tx(tx, run_id, finding)
        for event in batch.events:  # (kind, payload, step[, id]): an id makes a re-sent event a no-op
            self._event_tx(tx, run_id, *event)
        for loss in batch.losses:
            self._loss_tx(tx, run_id, loss)
        fields = dict(batch.run_fields)
        patch = {k: v for k, v in batch.meta_patch.items() if k not in self.server_meta}
        if patch:
            row = tx.conn.execute("SELECT meta FROM runs WHERE id = %s FOR UPDATE", (run_id,)).fetchone()
            fields["meta"] = {**(json.loads(row[0]) if row and row[0] else {}), **patch}
        if fields or max_step is not None:
            self._update_tx(tx, run_id, fields, max_step)

    def add_data_loss(self, run_id: str, loss: DataLoss) -> str:
        return self._tx(self._loss_tx, run_id, loss)

    def _loss_tx(self, tx: _Tx, run_id: str, loss: DataLoss) -> str:
        lid = getattr(loss, "id", None)
        eid = lid or uuid.uuid4().hex[:12]
        tx.conn.execute(
            "INSERT INTO events(id, run_id, step, kind, payload, ts) VALUES (%s, %s, %s, 'data_lost', %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET step = EXCLUDED.step, payload = EXCLUDED.payload",
            (eid, run_id, loss.first_step(), dumps(loss.payload()), loss.first_ts or time.time()))
        added = loss_increment(loss)
        if added:
            tx.conn.execute("UPDATE runs SET data_lost = data_lost + %s WHERE id = %s", (added, run_id))
        return eid

    # ---- samples ------------------------------------------------------------------------------
    def append_samples(self, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        self._tx(self._samples_tx, run_id, step, rows)

    def _samples_tx(self, tx: _Tx, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        if not rows:
            return
        c = tx.conn
        base = c.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM samples WHERE run_id = %s AND step = %s",
                         (run_id, int(step))).fetchone()[0]
        data = []
        for i, row in enumerate(rows):
            extra = {k: v for k, v in row.items() if k not in ("prompt", "response", "reward")}
            reward = row.get("reward")
            data.append((run_id, int(step), base + i, _text(row.get("prompt")), _text(row.get("response")),
                         None if reward is None else float(reward), dumps(extra) if extra else None))
        c.cursor().executemany("INSERT INTO samples(run_id, step, idx, prompt, response, reward, extra) "
                               "VALUES (%s, %s, %s, %s, %s, %s, %s)", data)

    def samples(self, run_id: str, step: int | None = None, *, limit: int | None = None, offset: int = 0,
                query: str | None = None) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        sql = "SELECT step, idx, prompt, response, reward, extra FROM samples WHERE run_id = %s"
        params: list[Any] = [rid]
        if step is not None:
            sql += " AND step = %s"
            params.append(int(step))
        if query:
            like = "%" + escape_like(query) + "%"
            sql += " AND (prompt ILIKE %s OR response ILIKE %s OR extra ILIKE %s)"
            params += [like, like, like]
        sql += " ORDER BY step, idx"
        if limit is not None:
            sql += " LIMIT %s"
            params.append(int(limit))
        sql += " OFFSET %s"
        params.append(int(offset))
        return sample_dicts(self._query(sql, params))

    def sample_steps(self, run_id: str) -> list[int]:
        rid = self.resolve_run_id(run_id)
        return [r[0] for r in self._query("SELECT DISTINCT step FROM samples WHERE run_id = %s ORDER BY step", (rid,))]

    # ---- findings and events ------------------------------------------------------------------
    def add_finding(self, run_id: str, finding: Any) -> str:
        return self._tx(self._finding_tx, run_id, finding)

    def _finding_tx(self, tx: _Tx, run_id: str, finding: Any) -> str:
        d = finding_record(finding)
        fid = d["id"]
        resolved = bool(d.get("resolved")) or d.get("status") == "resolved"
        tx.conn.execute(
            "INSERT INTO findings(id, run_id, detector, severity, step, title, payload, created_at, resolved) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET detector = EXCLUDED.detector, "
            "severity = EXCLUDED.severity, step = EXCLUDED.step, title = EXCLUDED.title, payload = EXCLUDED.payload, "
            "created_at = EXCLUDED.created_at, resolved = EXCLUDED.resolved",
            (fid, run_id, d.get("detector"), d.get("severity"), d.get("step"), d.get("title"), dumps(d),
             d.get("created_at", time.time()), resolved))
        return fid

    def findings(self, run_id: str) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        rows = self._query("SELECT payload FROM findings WHERE run_id = %s ORDER BY step, created_at", (rid,))
        return [json.loads(r[0]) for r in rows]

    def finding_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        out = {rid: {"critical": 0, "warning": 0, "info": 0} for rid in run_ids}
        rows = self._query("SELECT run_id, severity, count(*) FROM findings WHERE NOT resolved AND run_id = ANY(%s) "
                           "GROUP BY run_id, severity", (list(out),))
        for rid, sev, n in rows:
            out[rid][sev if sev in out[rid] else "info"] += n
        return out

    def add_event(self, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None = None) -> str:
        return self._tx(self._event_tx, run_id, kind, payload, step)

    def _event_tx(self, tx: _Tx, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None,
                  eid: str | None = None) -> str:
        eid = eid or uuid.uuid4().hex[:12]
        tx.conn.execute("INSERT INTO events(id, run_id, step, kind, payload, ts) VALUES (%s, %s, %s, %s, %s, %s) "
                        "ON CONFLICT (id) DO NOTHING", (eid, run_id, step, kind, dumps(dict(payload)), time.time()))
        return eid

    def events(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        sql = "SELECT id, step, kind, payload, ts FROM events WHERE run_id = %s"
        params: list[Any] = [rid]
        if kind is not None:
            sql += " AND kind = %s"
            params.append(kind)
        rows = self._query(sql + " ORDER BY ts, seq", params)
        return [{"id": i, "step": s, "kind": k, "payload": json.loads(p), "ts": t} for i, s, k, p, t in rows]

    def close(self) -> None:
        self.pool.close(timeout=5)


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, str) else dumps(value)


STORES.add("postgresql", PostgresStore)
