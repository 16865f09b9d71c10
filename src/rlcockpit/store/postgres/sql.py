"""The experiment tables' :class:`~rlcockpit.store.sql.Database` on PostgreSQL: sweeps and artifacts shared by
agents on several machines through the team server's database.

The callers write portable SQL (``?`` placeholders, see :mod:`rlcockpit.store.sql`); here ``?`` becomes
``%s`` (and a literal ``%`` is doubled). SQLite serialises every writer by itself; PostgreSQL does not, so
every transaction takes a transaction-level advisory lock — the one its ``lock`` names (``"sweep:<id>"``:
agents of different sweeps never wait for each other), or one shared lock when it names none — which gives
the callers' read-check-write transactions the same guarantee they have on SQLite.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from rlcockpit.store.postgres.errors import redact_url, translate_error
from rlcockpit.store.sql import Cursor, Database

_GLOBAL_LOCK = "rlcockpit-sql"


def portable(sql: str) -> str:
    """``?`` placeholders as psycopg's ``%s`` (a literal ``%`` kept)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _lock_key(name: str) -> int:
    return zlib.crc32(name.encode()) - 2**31  # a signed 32-bit key, stable across processes


class _PgCursor(Cursor):
    def __init__(self, conn: psycopg.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(portable(sql), tuple(params)).rowcount

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._conn.execute(portable(sql), tuple(params)).fetchall()


class PostgresDatabase(Database):
    """A small connection pool to ``url``; safe to share between threads."""

    def __init__(self, url: str, *, read_only: bool = False, pool_size: int = 4) -> None:
        self.url = redact_url(url)
        self.read_only = read_only
        self._schemas: set[str] = set()
        self._lock = threading.Lock()
        try:
            self.pool = ConnectionPool(url, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, open=False,
                                       timeout=10)
            self.pool.open(wait=True, timeout=10)
        except Exception as exc:
            err = translate_error(exc, self.url)
            raise err from exc

    def has_table(self, name: str) -> bool:
        with self.pool.connection() as conn:
            return conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None

    def ensure_schema(self, name: str, ddl: Sequence[str]) -> None:
        if name in self._schemas or self.read_only:
            return
        with self.transaction(lock=f"schema:{name}") as cur:
            for statement in ddl:
                cur.execute(statement)
        with self._lock:
            self._schemas.add(name)

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Cursor]:
        if self.read_only:
            raise PermissionError(f"database {self.url} is opened read-only")
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(lock or _GLOBAL_LOCK),))
            yield _PgCursor(conn)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self.pool.connection() as conn:
            return conn.execute(portable(sql), tuple(params)).fetchall()

    def close(self) -> None:
        self.pool.close(timeout=5)
