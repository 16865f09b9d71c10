"""Team-server tokens and the local-admin mode: revocation (CLI and HTTP) that applies at once across
processes, expiry, ``last_used`` written at most once a minute, no implicit admin without a token
except with ``--local-admin`` (never through a proxy), and the tokenless remote logger of that mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import numpy as np
import psycopg
import pytest
from server_support import start_team

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore


def _cli(db: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "rlcockpit.cli", "server", *args, "--db", db], env=env,
                          capture_output=True, text=True, timeout=120)


def _whoami(team, token: str) -> httpx.Response:
    return httpx.get(team.url + "/api/v1/whoami", headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_cli_token_revoke_applies_to_the_next_request_of_a_running_server(team) -> None:
    token = team.tokens["alice"]
    assert _whoami(team, token).status_code == 200  # authenticated (and, on old servers, cached for 5 s)
    listed = _cli(team.db, "token", "list", "alice", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == [token.split("_")[1]] and rows[0]["expires_at"] > time.time() + 80 * 86400
    out = _cli(team.db, "token", "revoke", rows[0]["id"])  # another process than the server
    assert out.returncode == 0 and "revoked" in out.stdout, out.stderr
    r = _whoami(team, token)
    assert r.status_code == 401 and "revoked" in r.json()["error"]
    table = _cli(team.db, "token", "list")
    assert table.returncode == 0 and "revoked" in table.stdout and "alice" in table.stdout
    assert _cli(team.db, "token", "revoke", "0123456789ab").returncode != 0  # no such token: a clear error
    issued = _cli(team.db, "token", "alice", "--label", "again", "--expires-days", "1")  # `token USER` issues one
    assert issued.returncode == 0 and _whoami(team, issued.stdout.strip()).json()["name"] == "alice"


def test_a_revoked_token_holder_who_drops_the_header_is_not_admin(team) -> None:
    team.server.team.accounts.revoke_token(team.tokens["eve"], actor="test")
    assert _whoami(team, team.tokens["eve"]).status_code == 401
    r = httpx.get(team.url + "/api/team/audit", timeout=30)  # the same request without any token
    assert r.status_code == 401 and "audit" not in r.text


def test_tokens_expire_and_record_last_used_at_most_once_a_minute(team) -> None:
    accounts = team.server.team.accounts
    short = accounts.issue_token("alice", "short", actor="test", expires_days=0.3 / 86400)
    assert _whoami(team, short).status_code == 200
    time.sleep(0.5)
    r = _whoami(team, short)
    assert r.status_code == 401 and "expired" in r.json()["error"]
    never = accounts.issue_token("val", "ci", actor="test", expires_days=0)
    tid = never.split("_")[1]
    with psycopg.connect(team.db) as conn:
        assert conn.execute("SELECT last_used, expires_at FROM tokens WHERE id = %s", (tid,)).fetchone() == (None, None)
        t0 = time.time()
        assert _whoami(team, never).status_code == 200
        first = conn.execute("SELECT last_used FROM tokens WHERE id = %s", (tid,)).fetchone()[0]
        assert first is not None and t0 - 1 <= first <= time.time() + 1
        for _ in range(5):
            assert _whoami(team, never).status_code == 200
        assert conn.execute("SELECT last_used FROM tokens WHERE id = %s", (tid,)).fetchone()[0] == first
    listed = {t["id"]: t for t in accounts.tokens("val")}
    assert listed[tid]["last_used"] == first and listed[tid]["expires_at"] is None


def test_http_token_revoke_by_owner_or_server_admin_only(team) -> None:
    team.add_user("root", admin=True)
    with team.client("alice") as alice:
        made = alice.post("/api/team/tokens", json={"label": "laptop", "expires_days": 7}).json()
        mine = alice.get("/api/team/tokens").json()["tokens"]
        assert {t["id"] for t in mine} >= {made["id"]} and all(t["user"] == "alice" for t in mine)
        assert "hash" not in json.dumps(mine) and made["token"].split("_", 2)[2] not in json.dumps(mine)  # the secret may hold "_"
        assert alice.get("/api/team/tokens", params={"user": "eve"}).status_code == 403
    with team.client("eve") as eve:
        r = eve.delete(f"/api/team/tokens/{made['id']}")
        assert r.status_code == 404 and "alice" not in r.text  # another user's token: as if there were none
    assert _whoami(team, made["token"]).status_code == 200
    with team.client("alice") as alice:
        assert alice.delete(f"/api/team/tokens/{made['id']}").json() == {"revoked": made["id"]}
    assert _whoami(team, made["token"]).status_code == 401
    with team.client("root") as root:
        assert root.delete(f"/api/team/tokens/{team.tokens['eve'].split('_')[1]}").status_code == 200
    assert _whoami(team, team.tokens["eve"]).status_code == 401


@pytest.fixture
def local_team(pg_url):
    t = start_team(pg_url, local_admin=True)
    yield t
    t.server.shutdown()


def test_local_admin_mode_is_explicit_loopback_only_and_never_through_a_proxy(local_team, pg_url) -> None:
    with httpx.Client(base_url=local_team.url, timeout=30) as c:
        assert c.get("/api/v1/whoami").json()["name"] == "local"
        r = c.get("/api/v1/whoami", headers={"x-forwarded-for": "203.0.113.9"})  # a same-host reverse proxy
        assert r.status_code == 401 and "proxy" in r.json()["error"]
        assert c.get("/api/v1/whoami", headers={"forwarded": "for=203.0.113.9"}).status_code == 401
        assert c.get("/api/v1/whoami", headers={"host": "attacker.example"}).status_code == 403
        # what a page on another site can send to localhost (a form post, text/plain) is refused
        r = c.post("/api/team/projects/rl/views", content=b'{"name": "v", "state": {}}',
                   headers={"content-type": "text/plain"})
        assert r.status_code == 403 and "CSRF" in r.json()["error"]
        r = c.post("/api/team/projects/rl/views", json={"name": "v", "state": {}},
                   headers={"sec-fetch-site": "cross-site"})
        assert r.status_code == 403
    with pytest.raises(ValueError, match="loopback"):
        start_team(pg_url, host="0.0.0.0", local_admin=True)


def test_the_tokenless_remote_logger_of_a_local_admin_server_delivers_its_data(local_team, tmp_path) -> None:
    remote = RemoteStore(local_team.url, None, spool_dir=tmp_path, start=False)
    remote.create_run({"id": "solo", "project": "mine", "name": "solo"})
    remote.write_batch("solo", WriteBatch(points={"loss": (np.arange(5), np.ones(5), np.zeros(5))}))
    assert remote.uploader.flush(), remote.uploader.outage
    remote.close()
    steps, _, _ = local_team.server.store.series("solo", "loss", with_ts=False)
    assert list(steps) == [0, 1, 2, 3, 4]
    assert local_team.server.store.get_run("solo")["meta"]["team_user"] == "local"


@pytest.mark.slow
def test_a_database_outage_answers_503_without_the_database_address() -> None:
    from rlcockpit.server.pgcluster import PgCluster

    with PgCluster(fast=True) as cluster:
        t = start_team(cluster.url)
        try:
            token = t.add_user("alice", {"rl": "member"})
            cluster.stop()
            r = httpx.get(t.url + "/api/v1/runs", headers={"authorization": f"Bearer {token}"}, timeout=60)
            assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            port = cluster.url.split("@")[1].split("/")[0].split(":")[1]
            assert "postgresql" not in r.text and port not in r.text and "unavailable" in r.json()["error"]
        finally:
            t.server.shutdown()


@pytest.mark.parametrize("word", ["list", "revoke", "issue"])
def test_the_token_commands_words_are_not_user_names(team, word) -> None:
    with pytest.raises(ValueError, match="rlcockpit server token"):
        team.server.team.accounts.create_user(word, actor="test")
