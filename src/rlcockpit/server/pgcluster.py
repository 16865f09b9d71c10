"""A throwaway PostgreSQL cluster on loopback: for tests, benchmarks and trying the team server.

Why here and not in the tests: the load benchmark (``bench/team_server.py``), the test suite and
``rlcockpit server pg-local`` all need the same thing — a real server in a temp dir on an ephemeral
loopback port, stopped at the end — and PostgreSQL refuses to run as root, which CI is. So:

* the binaries come from ``$PATH`` or Debian's ``/usr/lib/postgresql/<N>/bin`` (``make test``
  installs the ``postgresql`` package when they are missing);
* as root, ``initdb`` and ``postgres`` run as the unprivileged ``postgres`` user (created by the
  Debian package; else a ``rlcockpit-pg`` system user is created), and the data dir is owned by it;
* the port is picked free (bind to port 0) and retried if another process takes it first;
* ``fast=True`` turns durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``) —
  tests only; a SIGKILL of the *server process* still loses nothing committed, only an OS crash would.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SUPERUSER = "rlcockpit"
DATABASE = "rlcockpit"


class PostgresNotInstalled(RuntimeError):
    """No ``initdb``/``postgres`` binaries were found."""


def find_bin_dir() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if candidates:
        return Path(candidates[-1]).parent
    raise PostgresNotInstalled("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin); "
                               "on Debian: apt-get install -y postgresql")


def _unprivileged_user() -> pwd.struct_passwd | None:
    """``None`` when not root; else the account PostgreSQL runs as (created when missing)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "rlcockpit-pg"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "rlcockpit-pg"],
                   check=True, capture_output=True)
    return pwd.getpwnam("rlcockpit-pg")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """``start()`` a cluster in a new temp dir; ``url``; ``stop()`` / ``start()`` again (same data, same
    port: the outage test); ``kill()`` (SIGKILL the postmaster); ``destroy()`` removes everything."""

    def __init__(self, *, fast: bool = True, base_dir: str | None = None, max_connections: int = 300) -> None:
        self.bin = find_bin_dir()
        self.user = _unprivileged_user()
        # as root, under /tmp: $TMPDIR may be a directory the postgres user cannot enter
        self.root = Path(tempfile.mkdtemp(prefix="rlcockpit-pg-", dir=base_dir or ("/tmp" if self.user else None)))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = 0
        self.fast = fast
        self.max_connections = max_connections
        self._proc: subprocess.Popen | None = None
        os.chmod(self.root, 0o755)
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        self._initdb()

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run_as(self, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        extra = {} if self.user is None else {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run(cmd, capture_output=True, text=True, cwd=self.root, **extra, **kw)

    def _initdb(self) -> None:
        out = self._run_as([str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                            "-E", "UTF8", "--locale=C", "--no-sync"], timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"initdb failed ({out.returncode}): {out.stderr.strip() or out.stdout.strip()}")

    def _options(self) -> list[str]:
        opts = ["-p", str(self.port), "-h", "127.0.0.1", "-k", str(self.root), "-c",
                f"max_connections={self.max_connections}", "-c", "shared_buffers=128MB"]
        if self.fast:
            opts += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        return opts

    def start(self, timeout: float = 60.0) -> PgCluster:
        """Start the postmaster (a fresh free port on the first start, the same port after)."""
        for attempt in range(5):
            if not self.port or attempt:  # a restart keeps its port unless someone took it meanwhile
                self.port = free_port()
            extra = {} if self.user is None else {"user": self.user.pw_uid, "group": self.user.pw_gid,
                                                   "extra_groups": []}
            with open(self.log, "ab") as logf:
                if self.user is not None:
                    os.chown(self.log, self.user.pw_uid, self.user.pw_gid)
                self._proc = subprocess.Popen([str(self.bin / "postgres"), "-D", str(self.data), *self._options()],
                                              stdout=logf, stderr=subprocess.STDOUT, cwd=self.root,
                                              start_new_session=True, **extra)
            if self._wait_ready(timeout):
                self._ensure_database()
                return self
            self.kill()
        raise RuntimeError(f"PostgreSQL did not start; log {self.log}:\n{self.log.read_text(errors='replace')[-3000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        import psycopg

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                return False
            try:
                with psycopg.connect(f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres", connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                conn.execute(f"CREATE DATABASE {DATABASE}")

    def create_database(self, name: str) -> str:
        """A new empty database in this cluster (one per test that needs a clean slate); its URL."""
        import psycopg

        with psycopg.connect(f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{name}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT: active transactions are rolled back, clients disconnected)."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._proc = None

    def kill(self) -> None:
        """SIGKILL the postmaster and its children (crash recovery runs on the next start)."""
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait()
        self._proc = None

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.destroy()
