"""Fixtures of the team-server tests: a running server on a fresh PostgreSQL schema."""

from __future__ import annotations

import pytest
from server_support import start_team

from rlcockpit.tracking import run as run_module


@pytest.fixture
def team(pg_url):
    t = start_team(pg_url)
    t.add_user("alice", {"rl": "member"})
    t.add_user("val", {"rl": "viewer"})
    t.add_user("boss", {"rl": "admin"})
    t.add_user("eve", {"other": "member"})
    yield t
    t.server.shutdown()


@pytest.fixture
def remote_init(team, tmp_path, monkeypatch):
    """``rlcockpit.init`` logging to the team server as alice (quiet, fast); runs finished at teardown."""
    import rlcockpit

    runs = []
    monkeypatch.setenv("RLCOCKPIT_SERVER_FINISH_S", "20")

    def _start(**kw):
        kw.setdefault("dir", tmp_path / "local")
        kw.setdefault("project", "rl")
        kw.setdefault("system_interval", None)
        kw.setdefault("capture_meta", False)
        kw.setdefault("health", False)
        kw.setdefault("server", team.url)
        monkeypatch.setenv("RLCOCKPIT_TOKEN", team.tokens[kw.pop("user", "alice")])
        run = rlcockpit.init(**kw)
        runs.append(run)
        return run

    yield _start
    for run in runs:
        run.finish()
    run_module._live_runs.clear()
