"""Embedded SQLite store (WAL): no server, no account, works offline.

One database file ``<dir>/rlcockpit.db`` holds every run of the store. WAL mode lets readers
(CLI, dashboard) read while runs write; several processes may write different runs at once
(writes are short transactions, serialised by SQLite with a busy timeout).

Metric points are stored per key in chunks of up to :data:`CHUNK_POINTS` points; each chunk holds
three little-endian numpy arrays (steps int64, values float64, timestamps float64) as blobs. The
newest chunk of a key is rewritten while it fills up, so a flush touches at most one partial
chunk per key — appends never rewrite history (unlike re-logged tables).
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlcockpit.store.base import STORES, Series, Store, effective_status
from rlcockpit.store.batch import DataLoss, WriteBatch
from rlcockpit.store.downsample import cut_series
from rlcockpit.store.rows import escape_like, finding_record, loss_increment, sample_dicts
from rlcockpit.store.sqlite_errors import translate_error
from rlcockpit.store.sqlite_schema import ensure_schema

CHUNK_POINTS = 2048
PAGE_SIZE = 16384  # for new databases: a full chunk's three 16 KB blobs need fewer overflow pages than at 4 KB
WRITER_BUSY_TIMEOUT_S = 1.0  # the tracking writer gives up a locked database quickly and retries later

_JSON_COLS = ("tags", "config", "summary", "meta")
_RUN_COLS = (
    "id", "project", "name", "grp", "tags", "status", "config", "summary", "meta", "notes",
    "created_at", "updated_at", "heartbeat_at", "finished_at", "exit_code", "last_step",
    "heartbeat_mono", "boot_id", "data_lost",
)



def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    return str(obj)


def dumps(obj: Any) -> str:
    """JSON text; NaN/Inf kept (Python's json reads them back), unknown objects as strings."""
    return json.dumps(obj, default=_json_default, ensure_ascii=False)


class SQLiteStore(Store):
    def __init__(self, dir: Path, *, busy_timeout_s: float = 30.0) -> None:
        self.dir = Path(dir)
        self.path = self.dir / "rlcockpit.db"
        self._busy_s = float(busy_timeout_s)
        self._lock = threading.RLock()
        # writer-side caches: key ids and the open (partially filled) tail chunk of each key; both are
        # dropped whenever a transaction fails (SQLite reuses rolled-back ids: a stale cache would put a
        # new key's points under an old key)
        self._key_ids: dict[tuple[str, str], int] = {}
        self._tails: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=self._busy_s, check_same_thread=False,
                                         isolation_level=None)
            new = self._conn.execute("PRAGMA page_count").fetchone()[0] == 0
            if new:
                self._conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            if self._conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(self._busy_s * 1000)}")
            # checkpoint the WAL every ~4 MB and truncate it to 16 MB after: a small disk must not fill up
            # with WAL frames that were already written to the database
            self._conn.execute(f"PRAGMA wal_autocheckpoint={max(4 * 2**20 // self._page_size(), 64)}")
            self._conn.execute("PRAGMA journal_size_limit=16777216")
            with self._lock:
                ensure_schema(self._conn)
        except (sqlite3.Error, OSError) as exc:
            raise translate_error(exc, self.path, self._busy_s) from exc

    def _page_size(self) -> int:
        return int(self._conn.execute("PRAGMA page_size").fetchone()[0])

    def tune_for_reads(self, cache_mb: int = 64, mmap_mb: int = 1024) -> None:
        """Tune this connection for a reader such as the dashboard: a larger page cache (a 1M-point series
        is ~24 MB of chunk pages; re-reading it from SQLite's cache is ~2x faster than from the OS), and
        memory-mapped reads of the first ``mmap_mb`` of the file, which spare a read() and a copy per page
        (the chunk blobs span overflow pages): ~40 % less CPU for a cold 75-series run page
        (bench/ui_latency.py). Writers never use mmap; SQLite falls back to read() beyond the mapping."""
        with self._lock:
            self._conn.execute(f"PRAGMA cache_size=-{int(cache_mb) * 1024}")
            self._conn.execute(f"PRAGMA mmap_size={int(mmap_mb) * 1024 * 1024}")

    # ---- helpers ----------------------------------------------------------------------------
    def _tx(self, fn, *args, timeout_s: float | None = None):
        """Run ``fn`` in one write transaction; on any failure roll back (once), forget the caches and
        raise the store error that says what happened (never "cannot rollback")."""
        with self._lock:
            busy = self._busy_s if timeout_s is None else timeout_s
            c = self._conn
            try:
                if timeout_s is not None:
                    c.execute(f"PRAGMA busy_timeout={int(busy * 1000)}")
                c.execute("BEGIN IMMEDIATE")
                out = fn(*args)
                c.execute("COMMIT")
                return out
            except BaseException as exc:
                if c.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL, IOERR)
                    try:
                        c.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # the first error is the one to report
                self._key_ids.clear()
                self._tails.clear()
                err = translate_error(exc, self.path, busy)
                if err is exc:
                    raise
                raise err from exc
            finally:
                if timeout_s is not None:
                    c.execute(f"PRAGMA busy_timeout={int(self._busy_s * 1000)}")

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _run_row_to_dict(self, row: Sequence[Any]) -> dict[str, Any]:
        d = dict(zip(_RUN_COLS, row))
        for c in _JSON_COLS:
            d[c] = json.loads(d[c]) if d[c] else ({} if c != "tags" else [])
        d["group"] = d.pop("grp")
        d["stored_status"] = d["status"]
        d["status"] = effective_status(d, time.time())
        return d

    def resolve_run_id(self, run_id: str) -> str:
        """An exact id; else the newest run with that name (re-running a preset reuses its name);
        else a unique id prefix."""
        rows = self._query("SELECT id FROM runs WHERE id = ?", (run_id,))
        if rows:
            return rows[0][0]
        rows = self._query("SELECT id FROM runs WHERE name = ? ORDER BY created_at DESC LIMIT 1", (run_id,))
        if rows:
            return rows[0][0]
        rows = self._query(
            "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at DESC",
            (run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
        )
        ids = [r[0] for r in rows]
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise KeyError(f"no run {run_id!r} in store {self.dir}")
        raise KeyError(f"run {run_id!r} is ambiguous in store {self.dir}: matches {', '.join(ids[:5])}")

    # ---- runs -------------------------------------------------------------------------------
    def create_run(self, run: Mapping[str, Any]) -> None:
        now = time.time()
        row = {
            "id": run["id"], "project": run.get("project") or "default", "name": run.get("name") or run["id"],
            "grp": run.get("group"), "tags": dumps(list(run.get("tags") or [])),
            "status": run.get("status", "running"), "config": dumps(run.get("config") or {}),
            "summary": dumps(run.get("summary") or {}), "meta": dumps(run.get("meta") or {}),
            "notes": run.get("notes"), "created_at": run.get("created_at", now), "updated_at": now,
            "heartbeat_at": now, "finished_at": None, "exit_code": None, "last_step": None,
        }
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self._tx(lambda: self._conn.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", tuple(row.values())))

    def update_run(self, run_id: str, **fields: Any) -> None:
        if fields:
            self._tx(self._update_tx, run_id, fields)

    def _update_tx(self, run_id: str, fields: Mapping[str, Any]) -> None:
        fields = dict(fields)
        if "group" in fields:
            fields["grp"] = fields.pop("group")
        sets, vals = [], []
        for k, v in fields.items():
            if k not in _RUN_COLS or k == "id":
                raise ValueError(f"unknown run field {k!r}")
            sets.append(f"{k} = ?")
            vals.append(dumps(v) if k in _JSON_COLS else v)
        sets.append("updated_at = ?")
        vals.append(time.time())
        self._conn.execute(f"UPDATE runs SET {', '.join(sets)} WHERE id = ?", (*vals, run_id))

    def list_runs(self, project: str | None = None, *, fields: Collection[str] | None = None) -> list[dict[str, Any]]:
        cols = _RUN_COLS if fields is None else tuple(
            c if c not in _JSON_COLS or c in fields else f"NULL AS {c}" for c in _RUN_COLS)
        sql = f"SELECT {', '.join(cols)} FROM runs"
        params: tuple = ()
        if project is not None:
            sql += " WHERE project = ?"
            params = (project,)
        sql += " ORDER BY created_at DESC"
        return [self._run_row_to_dict(r) for r in self._query(sql, params)]

    def get_run(self, run_id: str) -> dict[str, Any]:
        rid = self.resolve_run_id(run_id)
        rows = self._query(f"SELECT {', '.join(_RUN_COLS)} FROM runs WHERE id = ?", (rid,))
        return self._run_row_to_dict(rows[0])

    def delete_run(self, run_id: str) -> None:
        rid = self.resolve_run_id(run_id)

        def work() -> None:
            c = self._conn
            c.execute("DELETE FROM chunks WHERE key_id IN (SELECT id FROM keys WHERE run_id = ?)", (rid,))
            for table in ("keys", "samples", "findings", "events"):
                c.execute(f"DELETE FROM {table} WHERE run_id = ?", (rid,))
            c.execute("DELETE FROM runs WHERE id = ?", (rid,))

        self._tx(work)

    # ---- metrics ----------------------------------------------------------------------------
    def _key_id(self, run_id: str, key: str) -> int:
        kid = self._key_ids.get((run_id, key))
        if kid is None:
            c = self._conn
            c.execute("INSERT OR IGNORE INTO keys(run_id, name) VALUES (?, ?)", (run_id, key))
            kid = c.execute("SELECT id FROM keys WHERE run_id = ? AND name = ?", (run_id, key)).fetchone()[0]
            self._key_ids[(run_id, key)] = kid
        return kid

    def _load_tail(self, kid: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        tail = self._tails.get(kid)
        if tail is None:
            row = self._conn.execute(
                "SELECT seq, steps, vals, ts FROM chunks WHERE key_id = ? ORDER BY seq DESC LIMIT 1", (kid,)
            ).fetchone()
            if row is None or len(row[1]) // 8 >= CHUNK_POINTS:
                seq = -1 if row is None else row[0]
                empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
                tail = (seq + 1, empty_i, empty_f, empty_f)
            else:
                tail = (row[0], *_decode(row[1], row[2], row[3]))
        return tail

    def _points_tx(self, run_id: str, points: Mapping[str, Series]) -> None:
        c = self._conn
        max_step = None
        for key, (steps, vals, ts) in points.items():
            if len(steps) == 0:
                continue
            kid = self._key_id(run_id, key)
            seq, t_steps, t_vals, t_ts = self._load_tail(kid)
            steps = np.concatenate([t_steps, np.asarray(steps, np.int64)])
            vals = np.concatenate([t_vals, np.asarray(vals, np.float64)])
            ts = np.concatenate([t_ts, np.asarray(ts, np.float64)])
            for lo in range(0, len(steps), CHUNK_POINTS):
                s, v, t = steps[lo : lo + CHUNK_POINTS], vals[lo : lo + CHUNK_POINTS], ts[lo : lo + CHUNK_POINTS]
                c.execute(
                    "INSERT OR REPLACE INTO chunks(key_id, seq, n, step_lo, step_hi, steps, vals, ts) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (kid, seq, len(s), int(s[0]), int(s[-1]), s.tobytes(), v.tobytes(), t.tobytes()),
                )
                if len(s) < CHUNK_POINTS:
                    self._tails[kid] = (seq, s, v, t)
                else:
                    seq += 1
                    empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
                    self._tails[kid] = (seq, empty_i, empty_f, empty_f)
            if not key.startswith("system/"):
                last = int(steps[-1])
                max_step = last if max_step is None else max(max_step, last)
        if max_step is not None:
            c.execute(
                "UPDATE runs SET last_step = MAX(COALESCE(last_step, ?), ?) WHERE id = ?",
                (max_step, max_step, run_id),
            )

    def append_points(self, run_id: str, points: Mapping[str, Series]) -> None:
        if points:
            self._tx(self._points_tx, run_id, points)

    # ---- batched writes -----------------------------------------------------------------------
    def write_batch(self, run_id: str, batch: WriteBatch, *, timeout_s: float | None = None) -> None:
        """Everything in ``batch`` in one transaction (see :meth:`Store.write_batch`)."""
        if batch:
            self._tx(self._batch_tx, run_id, batch, timeout_s=timeout_s)

    def _batch_tx(self, run_id: str, batch: WriteBatch) -> None:
        if batch.points:
            self._points_tx(run_id, batch.points)
        for step, rows in batch.samples:
            self._samples_tx(run_id, step, rows)
        for finding in batch.findings:
            self._finding_tx(run_id, finding)
        for kind, payload, step in batch.events:
            self._event_tx(run_id, kind, payload, step)
        for loss in batch.losses:
            self._loss_tx(run_id, loss)
        fields = dict(batch.run_fields)
        if batch.meta_patch:
            row = self._conn.execute("SELECT meta FROM runs WHERE id = ?", (run_id,)).fetchone()
            fields["meta"] = {**(json.loads(row[0]) if row and row[0] else {}), **batch.meta_patch}
        if fields:
            self._update_tx(run_id, fields)

    def add_data_loss(self, run_id: str, loss: DataLoss) -> str:
        return self._tx(self._loss_tx, run_id, loss)

    def _loss_tx(self, run_id: str, loss: DataLoss) -> str:
        eid = loss.id or uuid.uuid4().hex[:12]
        self._conn.execute(
            "INSERT OR REPLACE INTO events(id, run_id, step, kind, payload, ts) VALUES (?,?,?,?,?,?)",
            (eid, run_id, loss.first_step(), "data_lost", dumps(loss.payload()), loss.first_ts or time.time()),
        )
        added = loss_increment(loss)
        if added:
            self._conn.execute("UPDATE runs SET data_lost = data_lost + ? WHERE id = ?", (added, run_id))
        return eid

    def keys(self, run_id: str) -> list[str]:
        rid = self.resolve_run_id(run_id)
        return [r[0] for r in self._query("SELECT name FROM keys WHERE run_id = ? ORDER BY name", (rid,))]

    def series(
        self,
        run_id: str,
        key: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        max_points: int | None = None,
        with_ts: bool = True,
    ) -> Series:
        rid = self.resolve_run_id(run_id)
        ts_col = "c.ts" if with_ts else "NULL"  # a NULL column never touches the blob's overflow pages
        sql = (f"SELECT c.steps, c.vals, {ts_col} FROM chunks c JOIN keys k ON k.id = c.key_id "
               "WHERE k.run_id = ? AND k.name = ?")
        params: list[Any] = [rid, key]
        if start_step is not None:
            sql += " AND c.step_hi >= ?"
            params.append(int(start_step))
        if end_step is not None:
            sql += " AND c.step_lo <= ?"
            params.append(int(end_step))
        rows = self._query(sql + " ORDER BY c.seq", params)
        if not rows:
            return np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64)
        steps = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.int64)
        vals = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float64)
        ts = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float64) if with_ts else np.broadcast_to(np.nan, steps.shape)
        return cut_series(steps, vals, ts, start_step, end_step, max_points)

    # ---- samples ------------------------------------------------------------------------------
    def append_samples(self, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        self._tx(self._samples_tx, run_id, step, rows)

    def _samples_tx(self, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None:
        base = self._conn.execute(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM samples WHERE run_id = ? AND step = ?", (run_id, step)
        ).fetchone()[0]
        data = []
        for i, row in enumerate(rows):
            extra = {k: v for k, v in row.items() if k not in ("prompt", "response", "reward")}
            reward = row.get("reward")
            data.append((
                run_id, int(step), base + i, _text(row.get("prompt")), _text(row.get("response")),
                None if reward is None else float(reward), dumps(extra) if extra else None,
            ))
        self._conn.executemany(
            "INSERT INTO samples(run_id, step, idx, prompt, response, reward, extra) VALUES (?,?,?,?,?,?,?)", data
        )

    def samples(
        self,
        run_id: str,
        step: int | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
        query: str | None = None,
    ) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        sql = "SELECT step, idx, prompt, response, reward, extra FROM samples WHERE run_id = ?"
        params: list[Any] = [rid]
        if step is not None:
            sql += " AND step = ?"
            params.append(int(step))
        if query:
            like = "%" + escape_like(query) + "%"
            sql += " AND (prompt LIKE ? ESCAPE '\\' OR response LIKE ? ESCAPE '\\' OR extra LIKE ? ESCAPE '\\')"
            params += [like, like, like]
        sql += " ORDER BY step, idx LIMIT ? OFFSET ?"
        params += [-1 if limit is None else int(limit), int(offset)]
        return sample_dicts(self._query(sql, params))

    def sample_steps(self, run_id: str) -> list[int]:
        rid = self.resolve_run_id(run_id)
        return [r[0] for r in self._query("SELECT DISTINCT step FROM samples WHERE run_id = ? ORDER BY step", (rid,))]

    # ---- findings and events ------------------------------------------------------------------
    def add_finding(self, run_id: str, finding: Any) -> str:
        return self._tx(self._finding_tx, run_id, finding)

    def _finding_tx(self, run_id: str, finding: Any) -> str:
        d = finding_record(finding)
        fid = d["id"]
        self._conn.execute(
            "INSERT OR REPLACE INTO findings(id, run_id, detector, severity, step, title, payload, created_at) "
            "VALUES (?,?,?,?,?,?,?,?)",
            (fid, run_id, d.get("detector"), d.get("severity"), d.get("step"), d.get("title"), dumps(d),
             d.get("created_at", time.time())),
        )
        return fid

    def findings(self, run_id: str) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        rows = self._query("SELECT payload FROM findings WHERE run_id = ? ORDER BY step, created_at", (rid,))
        return [json.loads(r[0]) for r in rows]

    def finding_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """One grouped query instead of one ``findings()`` per run (the runs list of 1,000 runs)."""
        wanted = set(run_ids)
        out = {rid: {"critical": 0, "warning": 0, "info": 0} for rid in wanted}
        sql = ("SELECT run_id, severity, count(*) FROM findings "
               "WHERE NOT coalesce(json_extract(payload, '$.resolved'), 0) "
               "AND coalesce(json_extract(payload, '$.status'), '') != 'resolved'")
        params: tuple = ()
        if len(wanted) <= 100:  # a few runs: use the (run_id, step) index; many: one pass over the table
            sql += f" AND run_id IN ({', '.join('?' for _ in wanted)})"
            params = tuple(wanted)
        rows = self._query(sql + " GROUP BY run_id, severity", params)
        for rid, sev, n in rows:
            if rid in out:
                counts = out[rid]
                counts[sev if sev in counts else "info"] += n
        return out

    def add_event(self, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None = None) -> str:
        return self._tx(self._event_tx, run_id, kind, payload, step)

    def _event_tx(self, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None) -> str:
        eid = uuid.uuid4().hex[:12]
        self._conn.execute(
            "INSERT INTO events(id, run_id, step, kind, payload, ts) VALUES (?,?,?,?,?,?)",
            (eid, run_id, step, kind, dumps(dict(payload)), time.time()),
        )
        return eid

    def events(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        rid = self.resolve_run_id(run_id)
        sql = "SELECT id, step, kind, payload, ts FROM events WHERE run_id = ?"
        params: list[Any] = [rid]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = self._query(sql + " ORDER BY ts", params)
        return [{"id": i, "step": s, "kind": k, "payload": json.loads(p), "ts": t} for i, s, k, p, t in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _decode(steps: bytes, vals: bytes, ts: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.frombuffer(steps, np.int64).copy(), np.frombuffer(vals, np.float64).copy(),
            np.frombuffer(ts, np.float64).copy())


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value if isinstance(value, str) else dumps(value)


STORES.add("sqlite", SQLiteStore)
