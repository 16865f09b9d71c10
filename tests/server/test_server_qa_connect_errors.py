"""QA of docs/team-server.md from a new user's view: a database URL that cannot work (no such database, a
server that needs a password, nothing listening) must fail at once with libpq's reason and what to do —
not after a 5 s pool timeout with "no connection to the server" and a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from rlcockpit.store.base import StoreUnavailable
from rlcockpit.store.postgres.store import PostgresStore


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_database_names_the_cause_quickly(pg_cluster) -> None:
    url = pg_cluster.url.rsplit("/", 1)[0] + "/no_such_db_qa"
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable) as err:
        PostgresStore(url)
    assert time.monotonic() - t0 < 3.0
    assert 'database "no_such_db_qa" does not exist' in str(err.value) and "createdb" in str(err.value)


def test_cli_prints_one_line_for_a_server_that_is_not_running(tmp_path) -> None:
    url = f"postgresql://cockpit@127.0.0.1:{_free_port()}/cockpit"
    proc = subprocess.run([sys.executable, "-m", "rlcockpit", "runs", "--store", url], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "is PostgreSQL running" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
