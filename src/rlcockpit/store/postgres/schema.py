"""The PostgreSQL store's tables and their versioned migrations.

Why a numbered list and not Alembic: the schema is a dozen statements owned by three parts (the run
store here, the team server's users/targets/views, sweeps and artifacts), each of which must be able to
bring its own tables up to date when it first touches a database — from a ``rlcockpit server`` start, a
training process writing straight to ``postgresql://`` or a sweep agent. A per-part list of numbered
steps, applied under one advisory lock (two processes starting at once never race) and recorded in
``rlcockpit_schema``, does that with no migration environment or script folder to ship; each step is
plain SQL a DBA can read. :func:`register_part` is the hook for the other parts (like SQLite's
``register_tables``).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import psycopg

# part -> ordered list of steps; step i (1-based) brings the part from version i-1 to i
_PARTS: dict[str, list[Sequence[str]]] = {}

CORE_V1 = (
    """CREATE TABLE IF NOT EXISTS runs (
      id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT NOT NULL, grp TEXT, tags TEXT NOT NULL DEFAULT '[]',
      status TEXT NOT NULL, config TEXT NOT NULL DEFAULT '{}', summary TEXT NOT NULL DEFAULT '{}',
      meta TEXT NOT NULL DEFAULT '{}', notes TEXT,
      created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
      heartbeat_at DOUBLE PRECISION, finished_at DOUBLE PRECISION, exit_code INTEGER, last_step BIGINT,
      heartbeat_mono DOUBLE PRECISION, boot_id TEXT, data_lost BIGINT NOT NULL DEFAULT 0)""",
    "CREATE INDEX IF NOT EXISTS runs_project ON runs(project, created_at)",
    "CREATE INDEX IF NOT EXISTS runs_name ON runs(name, created_at)",
    """CREATE TABLE IF NOT EXISTS keys (
      id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL,
      last_step BIGINT, UNIQUE (run_id, name))""",
    # chunk order is id order: compaction rewrites the tail of a key reusing the ids it replaces
    """CREATE TABLE IF NOT EXISTS chunks (
      id BIGSERIAL PRIMARY KEY, key_id BIGINT NOT NULL REFERENCES keys(id) ON DELETE CASCADE,
      n INTEGER NOT NULL, step_lo BIGINT NOT NULL, step_hi BIGINT NOT NULL,
      steps BYTEA NOT NULL, vals BYTEA NOT NULL, ts BYTEA NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS chunks_key ON chunks(key_id, id)",
    """CREATE TABLE IF NOT EXISTS samples (
      id BIGSERIAL PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, step BIGINT NOT NULL,
      idx INTEGER NOT NULL, prompt TEXT, response TEXT, reward DOUBLE PRECISION, extra TEXT)""",
    "CREATE INDEX IF NOT EXISTS samples_run_step ON samples(run_id, step, idx)",
    """CREATE TABLE IF NOT EXISTS findings (
      id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, detector TEXT,
      severity TEXT, step BIGINT, title TEXT, payload TEXT NOT NULL, created_at DOUBLE PRECISION,
      resolved BOOLEAN NOT NULL DEFAULT false)""",
    "CREATE INDEX IF NOT EXISTS findings_run ON findings(run_id, step)",
    """CREATE TABLE IF NOT EXISTS events (
      id TEXT PRIMARY KEY, seq BIGSERIAL, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      step BIGINT, kind TEXT NOT NULL, payload TEXT NOT NULL, ts DOUBLE PRECISION)""",
    "CREATE INDEX IF NOT EXISTS events_run ON events(run_id, kind)",
    # idempotent ingestion: the last batch sequence number applied per (run, client stream)
    """CREATE TABLE IF NOT EXISTS ingest_cursors (
      run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, stream TEXT NOT NULL,
      last_seq BIGINT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (run_id, stream))""",
)


def register_part(name: str, steps: Sequence[Sequence[str]]) -> None:
    """Declare the tables of a part as numbered steps (append new steps; never edit applied ones)."""
    _PARTS[name] = [tuple(s) for s in steps]


register_part("core", [CORE_V1])

_LOCK_KEY = zlib.crc32(b"rlcockpit-schema")


def ensure_schema(conn: psycopg.Connection, parts: Sequence[str] | None = None) -> dict[str, int]:
    """Apply the missing steps of ``parts`` (default: every registered part) in one transaction.

    Cheap when up to date (one SELECT); otherwise takes a transaction-level advisory lock so concurrent
    starters apply each step exactly once. Returns the versions now in force."""
    names = list(_PARTS) if parts is None else list(parts)
    current = _versions(conn)
    if all(current.get(n, 0) >= len(_PARTS[n]) for n in names):
        return {n: current.get(n, 0) for n in names}
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS rlcockpit_schema (part TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        current = _versions(conn)
        for name in names:
            have = current.get(name, 0)
            for version, step in enumerate(_PARTS[name][have:], start=have + 1):
                for statement in step:
                    conn.execute(statement)
                conn.execute("INSERT INTO rlcockpit_schema(part, version) VALUES (%s, %s) ON CONFLICT (part) DO "
                             "UPDATE SET version = EXCLUDED.version", (name, version))
                current[name] = version
    return {n: current.get(n, 0) for n in names}


def _versions(conn: psycopg.Connection) -> dict[str, int]:
    exists = conn.execute("SELECT to_regclass('rlcockpit_schema')").fetchone()[0]
    if exists is None:
        return {}
    return dict(conn.execute("SELECT part, version FROM rlcockpit_schema").fetchall())
