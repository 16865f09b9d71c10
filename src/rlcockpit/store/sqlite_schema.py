"""The SQLite store's tables, and how an older database is brought up to date.

Why its own module: other store modules (sweeps, artifacts) add their tables with
:func:`register_tables` instead of editing the core schema; :func:`ensure_schema` creates every
registered part (``CREATE TABLE IF NOT EXISTS``) and runs the numbered migrations of the core tables
once, recording the version in ``meta.schema_version``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 2

CORE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT NOT NULL, grp TEXT, tags TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL, config TEXT NOT NULL DEFAULT '{}', summary TEXT NOT NULL DEFAULT '{}',
  meta TEXT NOT NULL DEFAULT '{}', notes TEXT,
  created_at REAL NOT NULL, updated_at REAL NOT NULL, heartbeat_at REAL, finished_at REAL,
  exit_code INTEGER, last_step INTEGER,
  heartbeat_mono REAL, boot_id TEXT, data_lost INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_project ON runs(project, created_at);
CREATE TABLE IF NOT EXISTS keys (
  id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, name TEXT NOT NULL, UNIQUE(run_id, name)
);
CREATE TABLE IF NOT EXISTS chunks (
  key_id INTEGER NOT NULL, seq INTEGER NOT NULL, n INTEGER NOT NULL,
  step_lo INTEGER NOT NULL, step_hi INTEGER NOT NULL,
  steps BLOB NOT NULL, vals BLOB NOT NULL, ts BLOB NOT NULL,
  PRIMARY KEY (key_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS samples (
  id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
  prompt TEXT, response TEXT, reward REAL, extra TEXT
);
CREATE INDEX IF NOT EXISTS samples_run_step ON samples(run_id, step);
CREATE TABLE IF NOT EXISTS findings (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, detector TEXT, severity TEXT, step INTEGER, title TEXT,
  payload TEXT NOT NULL, created_at REAL
);
CREATE INDEX IF NOT EXISTS findings_run ON findings(run_id, step);
CREATE TABLE IF NOT EXISTS events (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, step INTEGER, kind TEXT NOT NULL, payload TEXT NOT NULL, ts REAL
);
CREATE INDEX IF NOT EXISTS events_run ON events(run_id, kind);
"""

# version -> statements bringing a database of version - 1 to it
MIGRATIONS: dict[int, list[str]] = {
    2: [  # clock-jump-proof heartbeats and the count of lost entries per run
        "ALTER TABLE runs ADD COLUMN heartbeat_mono REAL",
        "ALTER TABLE runs ADD COLUMN boot_id TEXT",
        "ALTER TABLE runs ADD COLUMN data_lost INTEGER NOT NULL DEFAULT 0",
    ],
}

_PARTS: dict[str, str] = {"core": CORE}
_MIGRATORS: list[Callable[[sqlite3.Connection], None]] = []


def register_tables(name: str, ddl: str, migrate: Callable[[sqlite3.Connection], None] | None = None) -> None:
    """Add a schema part (``CREATE TABLE IF NOT EXISTS ...`` statements) created with every store, and an
    optional ``migrate(conn)`` run after it inside the same transaction (it must be idempotent)."""
    _PARTS[name] = ddl
    if migrate is not None:
        _MIGRATORS.append(migrate)


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create missing tables and migrate an older database; a no-op (no write) when up to date."""
    have_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    if have_meta and _version(conn) >= SCHEMA_VERSION and not _missing_parts(conn):
        return  # nothing to write: opening a store on a full disk must not fail here
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _version(conn) if have_meta else 0
        fresh = not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'").fetchone()
        for ddl in _PARTS.values():
            for stmt in filter(str.strip, ddl.split(";")):
                conn.execute(stmt)
        if not fresh:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
            for v in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
                for stmt in MIGRATIONS.get(v, []):
                    col = stmt.split("ADD COLUMN ")[-1].split()[0] if "ADD COLUMN" in stmt else None
                    if col is None or col not in columns:
                        conn.execute(stmt)
        for migrate in _MIGRATORS:
            migrate(conn)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _missing_parts(conn: sqlite3.Connection) -> bool:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for ddl in _PARTS.values():
        for stmt in ddl.split(";"):
            words = stmt.split()
            if len(words) > 5 and words[:2] == ["CREATE", "TABLE"] and words[5].split("(")[0] not in tables:
                return True
    return False
