"""The remote client's spool: a local SQLite file of the ops not yet acknowledged by the team server.

Every write of a remote run goes here first (a write-ahead log), and the uploader sends the ops in
``seq`` order and deletes them once the server has acknowledged them. Why always, and not only while
the server is down: one path is easier to get right than two, order is then trivially kept, and a
process killed at any moment leaves exactly the unacknowledged ops on disk for ``rlcockpit sync``.
The write is local (one small transaction on the writer thread), so ``log()`` does not pay for it.

One file per client stream (``<dir>/spool/<stream>.db``); a live process holds an ``flock`` on
``<file>.lock`` so ``rlcockpit sync`` never uploads a spool that its owner is still sending.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS ops (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, body BLOB NOT NULL,
  nbytes INTEGER NOT NULL, created REAL NOT NULL);
CREATE INDEX IF NOT EXISTS ops_run ON ops(run_id, seq);
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, row TEXT NOT NULL);
"""


class Spool:
    """Ops of one client stream, durable on local disk."""

    def __init__(self, path: Path, *, own: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._lockfile = None
        if own:
            self._lockfile = open(str(self.path) + ".lock", "a+")  # noqa: SIM115 - held for the spool's life
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        row = self._conn.execute("SELECT max(seq) FROM ops").fetchone()
        last = self.info("last_seq")
        self._next = max(int(row[0] or 0), int(last or 0)) + 1

    @staticmethod
    def is_locked(path: Path) -> bool:
        """Whether a live process owns the spool at ``path``."""
        try:
            with open(str(path) + ".lock", "a+") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return True
                fcntl.flock(f, fcntl.LOCK_UN)
                return False
        except OSError:
            return False

    def append(self, run_id: str, op: dict[str, Any], encode) -> int:  # noqa: ANN001 - encode: obj -> bytes
        """Store ``op`` (given its seq here) and return the seq; ``encode`` turns it into bytes."""
        with self._lock:
            seq = self._next
            body = encode({"seq": seq, **op})
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("INSERT INTO ops(seq, run_id, body, nbytes, created) VALUES (?, ?, ?, ?, ?)",
                                   (seq, run_id, body, len(body), time.time()))
                self._conn.execute("INSERT OR REPLACE INTO info(key, value) VALUES ('last_seq', ?)", (str(seq),))
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._next = seq + 1
            return seq

    def pending(self, run_id: str | None = None, max_bytes: int = 4 << 20) -> list[tuple[int, str, bytes]]:
        """The oldest ops (of one run: all ops of a request are for one run), up to ``max_bytes``."""
        with self._lock:
            if run_id is None:
                first = self._conn.execute("SELECT run_id FROM ops ORDER BY seq LIMIT 1").fetchone()
                if first is None:
                    return []
                run_id = first[0]
            rows = self._conn.execute("SELECT seq, run_id, body FROM ops WHERE run_id = ? ORDER BY seq LIMIT 5000",
                                      (run_id,)).fetchall()
        out, total = [], 0
        for seq, rid, body in rows:
            if out and total + len(body) > max_bytes:
                break
            out.append((seq, rid, bytes(body)))
            total += len(body)
        return out

    def acknowledge(self, run_id: str, through_seq: int) -> int:
        with self._lock:
            return self._conn.execute("DELETE FROM ops WHERE run_id = ? AND seq <= ?", (run_id, through_seq)).rowcount

    def drop_run(self, run_id: str) -> int:
        """Delete every op of ``run_id`` (the server no longer has the run); how many there were."""
        with self._lock:
            return self._conn.execute("DELETE FROM ops WHERE run_id = ?", (run_id,)).rowcount

    def drop(self, seq: int) -> None:
        with self._lock:
            self._conn.execute("DELETE FROM ops WHERE seq = ?", (seq,))

    def stats(self, run_id: str | None = None) -> dict[str, Any]:
        where, params = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
        with self._lock:
            n, nbytes, oldest = self._conn.execute(f"SELECT count(*), coalesce(sum(nbytes), 0), min(created) FROM ops "
                                                   f"{where}", params).fetchone()
            runs = [r[0] for r in self._conn.execute(f"SELECT DISTINCT run_id FROM ops {where}", params)]
        return {"ops": int(n), "bytes": int(nbytes), "oldest": oldest, "runs": runs}

    def info(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM info WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def info_like(self, prefix: str) -> dict[str, str]:
        """Info entries whose key starts with ``prefix`` (e.g. ``gone:``, runs the server no longer has)."""
        rows = self._conn.execute("SELECT key, value FROM info WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
        return {k[len(prefix):]: v for k, v in rows}

    def set_info(self, **values: Any) -> None:
        with self._lock:
            for k, v in values.items():
                self._conn.execute("INSERT OR REPLACE INTO info(key, value) VALUES (?, ?)",
                                   (k, v if isinstance(v, str) or v is None else json.dumps(v)))

    def remember_run(self, row: dict[str, Any]) -> None:
        """A local copy of a run row this client created (``get_run`` while the server is down)."""
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO runs(id, row) VALUES (?, ?)", (row["id"], json.dumps(row,
                                                                                                          default=str)))

    def run_row(self, run_id: str) -> dict[str, Any] | None:
        row = self._conn.execute("SELECT row FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        if self._lockfile is not None:
            fcntl.flock(self._lockfile, fcntl.LOCK_UN)
            self._lockfile.close()
            self._lockfile = None

    def remove_if_empty(self) -> bool:
        """Delete the spool files when nothing is left in them (after a clean finish or a sync)."""
        if self.stats()["ops"]:
            return False
        self.close()
        for suffix in ("", "-wal", "-shm", ".lock"):
            try:
                os.unlink(str(self.path) + suffix)
            except FileNotFoundError:
                pass
        return True
