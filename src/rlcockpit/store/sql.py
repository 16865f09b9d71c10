"""A small SQL access interface for the experiment tables (sweeps, artifacts) that live beside the runs.

Why not the run :class:`~rlcockpit.store.base.Store`: the sweep controller and the artifact registry need
short read-modify-write transactions across processes (two agents must never take the same grid point;
two ``log_artifact`` calls must never get the same ``vN``), which the run store's write path does not
expose. Everything above this module writes portable SQL (``?`` placeholders, ``TEXT`` / ``INTEGER`` /
``BIGINT`` (sizes, steps) / ``DOUBLE PRECISION`` columns, no ``INSERT OR ...``, no ``RETURNING``), so a PostgreSQL
implementation of :class:`Database` (placeholders translated, ``lock`` mapped to an advisory
transaction lock) can be added for the team server without touching the callers.

SQLite: one file (the store's ``rlcockpit.db``), WAL mode, ``BEGIN IMMEDIATE`` transactions, so every
writer is serialised by SQLite itself; ``lock`` names are then not needed and ignored.
"""

from __future__ import annotations

import abc
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rlcockpit.store.base import resolve_dir
from rlcockpit.store.urls import postgres_dsn, url_kind

DB_FILE = "rlcockpit.db"
BUSY_TIMEOUT_MS = 60_000


class Cursor(abc.ABC):
    """What a transaction body may do."""

    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; returns the number of rows it changed."""

    @abc.abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run a SELECT and return all rows."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None


class Database(abc.ABC):
    """A connection to the store's database, safe to share between threads of one process."""

    url: str

    @abc.abstractmethod
    def ensure_schema(self, name: str, ddl: Sequence[str]) -> None:
        """Create tables/indexes (``CREATE ... IF NOT EXISTS`` statements) once per process and name."""

    @abc.abstractmethod
    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Cursor]:
        """A serialised read-write transaction: committed on exit, rolled back on an exception.

        ``lock`` names what the transaction serialises on (``"sweep:<id>"``); backends without a global
        writer lock use it, SQLite ignores it."""

    @abc.abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """A read outside any explicit transaction."""

    @abc.abstractmethod
    def has_table(self, name: str) -> bool:
        """Whether ``name`` exists (a read-only reader cannot create the tables a writer has not made yet)."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release the connection."""


class _SQLiteCursor(Cursor):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._conn.execute(sql, tuple(params)).rowcount

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._conn.execute(sql, tuple(params)).fetchall()


class SQLiteDatabase(Database):
    """The embedded store's file, opened with its own connection (WAL readers never block writers)."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.read_only = read_only
        self._lock = threading.RLock()
        if read_only:  # the dashboard: a connection that cannot write, whatever a bug asks of it
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                         check_same_thread=False, isolation_level=None)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                         isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._schemas: set[str] = set()

    def has_table(self, name: str) -> bool:
        return bool(self.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def ensure_schema(self, name: str, ddl: Sequence[str]) -> None:
        if name in self._schemas or self.read_only:
            return
        with self.transaction() as cur:
            for statement in ddl:
                cur.execute(statement)
        self._schemas.add(name)

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Cursor]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SQLiteCursor(self._conn)
            except BaseException:
                if self._conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
                    self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def open_database(dir: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Database:
    """The database of the store at ``dir``: a directory (see :func:`~rlcockpit.store.base.resolve_dir`), a
    ``sqlite:///DIR`` URL or a ``postgresql://`` URL (also from ``$RLCOCKPIT_STORE`` when ``dir`` is None)."""
    target = os.fspath(dir) if dir is not None else (os.environ.get("RLCOCKPIT_STORE") or None)
    if target is not None and "://" in target:
        scheme, kind = target.split("://", 1)[0].lower(), url_kind(target)  # the schemes' one home: store/urls.py
        if kind == "postgresql":  # the team server's database (store/postgres/sql.py)
            from rlcockpit.store.postgres.sql import PostgresDatabase

            return PostgresDatabase(postgres_dsn(target), read_only=read_only)
        if kind != "sqlite":
            raise ValueError(f"sweeps and artifacts keep their tables in the store's database; {scheme}:// stores "
                             "are not supported for them — use a directory, sqlite:///DIR or postgresql://...")
        path = target.split("://", 1)[1]
        target = path[1:] if path.startswith("/") and path[1:2] == "/" else path
        if target.endswith(DB_FILE):
            target = os.path.dirname(target)
    if target is None:
        target = dir
    return SQLiteDatabase(resolve_dir(target) / DB_FILE, read_only=read_only)
