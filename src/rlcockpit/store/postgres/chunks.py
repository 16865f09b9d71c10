"""The metric chunk table of the PostgreSQL store: writing chunk rows, merging a key's tail, reading a range.

A chunk is up to :data:`CHUNK_POINTS` points of one key as three little-endian arrays (steps int64, values
float64, timestamps float64), the SQLite store's format. Why apart from :mod:`rlcockpit.store.postgres.store`: that
module decides *when* (transactions, key ids, the compaction schedule); this one knows how the points look in
the table, so the write path and the compaction cut chunks the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg

from rlcockpit.store.base import Series
from rlcockpit.store.downsample import cut_series

CHUNK_POINTS = 2048
INSERT_ROWS = 2000  # chunks per write up to which one INSERT ... unnest() is used instead of COPY
_COLUMNS = "key_id, n, step_lo, step_hi, steps, vals, ts"
_EMPTY_I, _EMPTY_F = np.empty(0, np.int64), np.empty(0, np.float64)


def chunk_rows(kid: int, steps: np.ndarray, vals: np.ndarray, ts: np.ndarray) -> list[tuple[Any, ...]]:
    """The ``(key_id, n, step_lo, step_hi, steps, vals, ts)`` rows of one key's points, full chunks first."""
    rows = []
    for lo in range(0, len(steps), CHUNK_POINTS):
        s = steps[lo: lo + CHUNK_POINTS]
        rows.append((kid, len(s), int(s[0]), int(s[-1]), s.tobytes(), vals[lo: lo + CHUNK_POINTS].tobytes(),
                     ts[lo: lo + CHUNK_POINTS].tobytes()))
    return rows


def insert_chunks(c: psycopg.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Append chunk rows: one INSERT of seven arrays for a usual write (fewer round trips and less Python than
    COPY), binary COPY for a bulk one (a sync, a long backlog)."""
    if len(rows) <= INSERT_ROWS:
        cols = list(zip(*rows))
        c.execute(f"INSERT INTO chunks ({_COLUMNS}) SELECT * FROM unnest(%b::int8[], "
                  "%b::int4[], %b::int8[], %b::int8[], %b::bytea[], %b::bytea[], %b::bytea[])",
                  [list(col) for col in cols])
        return
    with c.cursor().copy(f"COPY chunks ({_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "int4", "int8", "int8", "bytea", "bytea", "bytea"])
        for row in rows:
            copy.write_row(row)


def tail_chunks(c: psycopg.Connection, kid: int) -> list[tuple[Any, ...]]:
    """``(id, steps, vals, ts)`` of the key's chunks after its last full one, in order."""
    return c.cursor(binary=True).execute(
        "SELECT id, steps, vals, ts FROM chunks WHERE key_id = %s AND id > COALESCE((SELECT max(id) FROM chunks "
        "WHERE key_id = %s AND n >= %s), -1) ORDER BY id", (kid, kid, CHUNK_POINTS)).fetchall()


def rewrite_tail(c: psycopg.Connection, kid: int, rows: list[tuple[Any, ...]]) -> None:
    """Merge the :func:`tail_chunks` ``rows`` into full chunks, reusing their ids (chunk order is id order, so
    readers see the same points in the same order, in fewer rows)."""
    if len(rows) < 2:
        return
    ids = [r[0] for r in rows]
    steps = np.frombuffer(b"".join(r[1] for r in rows), "<i8")
    vals = np.frombuffer(b"".join(r[2] for r in rows), "<f8")
    ts = np.frombuffer(b"".join(r[3] for r in rows), "<f8")
    c.execute("DELETE FROM chunks WHERE id = ANY(%s)", (ids,))
    with c.cursor().copy(f"COPY chunks (id, {_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "int8", "int4", "int8", "int8", "bytea", "bytea", "bytea"])
        for chunk_id, row in zip(ids, chunk_rows(kid, steps, vals, ts)):
            copy.write_row((chunk_id, *row))


def series_query(rid: str, key: str, start_step: int | None, end_step: int | None,
                 with_ts: bool) -> tuple[str, list[Any]]:
    """The SQL and parameters that fetch the chunks overlapping ``[start_step, end_step]`` of one key."""
    ts_col = "c.ts" if with_ts else "NULL"
    sql = (f"SELECT c.steps, c.vals, {ts_col} FROM chunks c JOIN keys k ON k.id = c.key_id "
           "WHERE k.run_id = %s AND k.name = %s")
    params: list[Any] = [rid, key]
    if start_step is not None:
        sql += " AND c.step_hi >= %s"
        params.append(int(start_step))
    if end_step is not None:
        sql += " AND c.step_lo <= %s"
        params.append(int(end_step))
    return sql + " ORDER BY c.id", params


def series_from_chunks(rows: list[tuple[Any, ...]], start_step: int | None, end_step: int | None,
                       max_points: int | None, with_ts: bool) -> Series:
    """The points of :func:`series_query`'s rows, cut to the step range and downsampled to ``max_points``."""
    if not rows:
        return _EMPTY_I.copy(), _EMPTY_F.copy(), _EMPTY_F.copy()
    steps = np.frombuffer(b"".join(r[0] for r in rows), "<i8").astype(np.int64)
    vals = np.frombuffer(b"".join(r[1] for r in rows), "<f8").astype(np.float64)
    ts = (np.frombuffer(b"".join(r[2] for r in rows), "<f8").astype(np.float64) if with_ts
          else np.broadcast_to(np.nan, steps.shape))
    return cut_series(steps, vals, ts, start_step, end_step, max_points)
