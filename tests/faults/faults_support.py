"""Real faults for the fault-injection suite: a small filesystem that fills up, a database locked by
another process, child processes to SIGKILL, sinks that hang or raise.

``SmallDisk`` mounts a real tmpfs of a few MiB (we run as root in CI and here) and fills it with a
filler file until the kernel answers ENOSPC; ``free()`` deletes the filler. Where mounting is refused
(a container without CAP_SYS_ADMIN), it falls back to SQLite's own "disk full" path: ``PRAGMA
max_page_count`` set to the database's current size on every store attached with :meth:`attach`, so
SQLite answers SQLITE_FULL exactly as on a full disk. ``kind`` says which one ran.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env


def spawn_python(code: str, *args: str, **env: str) -> subprocess.Popen:
    """A real child Python process running ``code`` (stdout/stderr piped, text, unbuffered)."""
    return subprocess.Popen([PYTHON, "-u", "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=child_env(**env))


class SmallDisk:
    """A tmpfs of ``size_mb`` MiB at ``path`` (or the SQLite page-count fallback, see module doc)."""

    def __init__(self, size_mb: int = 8) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="rlcockpit-smalldisk-"))
        self.filler = self.path / "filler.bin"
        self.stores: list[Any] = []
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(self.path)],
                             capture_output=True, text=True)
        self.kind = "tmpfs" if res.returncode == 0 else "sqlite-max-page-count"
        self.mount_error = res.stderr.strip()

    def attach(self, store: Any) -> Any:
        """Register a store for the fallback mode (a no-op on a real tmpfs); returns it."""
        self.stores.append(store)
        return store

    def fill(self) -> None:
        """Fill the filesystem until writes fail with ENOSPC."""
        if self.kind != "tmpfs":
            for store in self.stores:
                with store._lock:
                    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
                    store._conn.execute(f"PRAGMA max_page_count={pages}")
            return
        block = b"\0" * (64 * 1024)
        with open(self.filler, "ab", buffering=0) as f:
            try:
                while True:
                    f.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
            # fill the last partial block too: nothing is left
            try:
                while True:
                    f.write(b"\0" * 512)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise

    def free(self) -> None:
        if self.kind != "tmpfs":
            for store in self.stores:
                with store._lock:
                    store._conn.execute("PRAGMA max_page_count=1073741823")
            return
        with contextlib.suppress(FileNotFoundError):
            self.filler.unlink()

    def close(self) -> None:
        for store in self.stores:
            with contextlib.suppress(Exception):
                store.close()
        if self.kind == "tmpfs":
            for _ in range(20):
                if subprocess.run(["umount", str(self.path)], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            else:  # still busy (a file a dying writer holds open): detach it now, the kernel frees it after
                subprocess.run(["umount", "-l", str(self.path)], capture_output=True)  # (it left 8 MiB mounts behind)
        with contextlib.suppress(OSError):
            for p in self.path.glob("**/*"):
                if p.is_file():
                    p.unlink()
            self.path.rmdir()


LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()   # hold the lock until the parent writes a line (or closes stdin)
conn.execute("ROLLBACK")
print("released", flush=True)
"""


class DatabaseLocker:
    """Another process holding an exclusive write lock on a store's database (SQLITE_BUSY for writers)."""

    def __init__(self, db_path: Path) -> None:
        self.proc = subprocess.Popen([PYTHON, "-u", "-c", LOCKER, str(db_path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        line = self.proc.stdout.readline()
        assert line.strip() == "locked", self.proc.stderr.read()

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
            assert self.proc.stdout.readline().strip() == "released"
            self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def log_then_fill_the_disk(run: Any, disk: Any, keys: list[str], seconds: float = 3.0) -> int:
    """Log 100 steps of ``keys`` that reach the store, fill ``disk``, keep logging into it for ``seconds``
    (more than the writer's backlog holds); returns the next step."""
    step = 0
    for _ in range(100):
        run.log({k: float(step) for k in keys}, step=step)
        step += 1
    assert run.flush(10)
    disk.fill()
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        run.log({k: float(step) for k in keys}, step=step)
        step += 1
        if step % 200 == 0:
            time.sleep(0.01)
    return step

