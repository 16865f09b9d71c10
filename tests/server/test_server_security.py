"""Team-server access rules: tokens (hashed), roles per project, every route authenticated off loopback,
CSRF on browser writes, ingest rate limits, the audit log."""

from __future__ import annotations

import httpx
import psycopg
import pytest
from server_support import start_team

from rlcockpit.server.guard import Limits


def test_tokens_are_stored_hashed(team) -> None:
    with psycopg.connect(team.db) as conn:
        stored = [r[0] for r in conn.execute("SELECT hash FROM tokens").fetchall()]
    secret = team.tokens["alice"].split("_", 2)[2]
    assert stored and all(secret not in h and len(h) == 64 for h in stored)


def test_roles_decide_what_each_user_sees_and_may_do(team) -> None:
    with team.client("boss") as boss:
        assert boss.post("/api/team/projects/rl/targets", json={"target": "acc >= 0.7"}).status_code == 200
    with team.client("val") as viewer:
        assert viewer.get("/api/team/projects/rl/targets").json()["targets"][0]["key"] == "acc"
        r = viewer.post("/api/team/projects/rl/targets", json={"target": "acc >= 0.9"})
        assert r.status_code == 403 and "needs the admin role" in r.json()["error"]
        assert viewer.post("/api/team/projects/rl/views", json={"name": "v", "state": {}}).status_code == 403
    with team.client("eve") as outsider:
        assert outsider.get("/api/team/projects/rl/targets").status_code == 404  # not even told it exists
    with team.client("alice") as member:
        assert member.post("/api/team/projects/rl/views", json={"name": "v", "state": {"x": "step"}}).status_code == 200


def test_dashboard_lists_only_the_users_projects(team, tmp_path) -> None:
    from rlcockpit.store.remote.client import RemoteStore

    for user, project in (("alice", "rl"), ("eve", "other")):
        remote = RemoteStore(team.url, team.tokens[user], spool_dir=tmp_path / user, start=False)
        remote.create_run({"id": f"run-{project}", "project": project, "name": project})
        assert remote.uploader.flush()
        remote.close()
    with team.client("val") as viewer:
        ids = [r["id"] for r in viewer.get("/api/runs").json()["runs"]]
        assert ids == ["run-rl"]
        assert viewer.get("/api/runs/run-other").status_code == 404


def test_off_loopback_every_route_needs_a_token(pg_url) -> None:
    t = start_team(pg_url, host="0.0.0.0")
    try:
        token = t.add_user("alice", {"rl": "viewer"})
        base = f"http://127.0.0.1:{t.server.server_address[1]}"
        for path in ("/", "/static/js/app.js", "/api/runs", "/api/v1/health", "/api/team/projects/rl/targets"):
            r = httpx.get(base + path)
            assert r.status_code == 401, path
        assert httpx.get(base + "/api/v1/health", headers={"authorization": f"Bearer {token}x"}).status_code == 401
        ok = httpx.get(base + "/api/v1/health", headers={"authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and ok.json()["user"] == "alice"
        page = httpx.get(base + f"/?token={token}")  # a browser's first visit: the token becomes a cookie
        assert page.status_code == 200 and "team.js" in page.text
        assert "rlcockpit_token=" in page.headers.get("set-cookie", "")
    finally:
        t.server.shutdown()


def test_browser_writes_need_the_csrf_token(team) -> None:
    c = httpx.Client(base_url=team.url, timeout=30)
    c.get(f"/?token={team.tokens['alice']}")  # cookie login, as a browser does
    csrf = c.cookies.get("rlcockpit_csrf")
    assert csrf and c.cookies.get("rlcockpit_token")
    body = {"name": "mine", "state": {"route": "#/"}}
    r = c.post("/api/team/projects/rl/views", json=body)
    assert r.status_code == 403 and "CSRF" in r.json()["error"]
    r = c.post("/api/team/projects/rl/views", json=body, headers={"x-csrf-token": csrf, "origin": "http://evil.example"})
    assert r.status_code == 403 and "cross-origin" in r.json()["error"]
    r = c.post("/api/team/projects/rl/views", json=body, headers={"x-csrf-token": csrf})
    assert r.status_code == 200
    c.close()


def test_loopback_requests_without_a_token_are_refused_and_need_a_loopback_host(team) -> None:
    with httpx.Client(base_url=team.url, timeout=30) as c:
        r = c.get("/api/v1/whoami")  # no implicit admin: only `--local-admin` makes tokenless requests local
        assert r.status_code == 401 and "token is required" in r.json()["error"]
        assert c.get("/api/v1/whoami", headers={"host": "attacker.example"}).status_code == 403
        r = c.post("/api/team/projects/rl/views", json={"name": "v", "state": {}})
        assert r.status_code == 401


def test_ingest_rate_limit_answers_429_with_retry_after(pg_url) -> None:
    t = start_team(pg_url, limits=Limits(requests_per_s=2, request_burst=3))
    try:
        token = t.add_user("alice", {"rl": "member"})
        with t.client("alice") as c:
            codes = [c.post("/api/v1/runs/x/ingest", content=b"{}").status_code for _ in range(6)]
        assert codes[:3] == [422, 422, 422] and codes[-1] == 429
        r = httpx.post(t.url + "/api/v1/runs/x/ingest", content=b"{}", headers={"authorization": f"Bearer {token}"})
        assert r.status_code == 429 and float(r.headers["retry-after"]) > 0 and "rate limit" in r.json()["error"]
    finally:
        t.server.shutdown()


def test_changes_are_audited(team) -> None:
    with team.client("boss") as boss:
        boss.post("/api/team/projects/rl/targets", json={"target": "perf/throughput >= 2000"})
        log = boss.get("/api/team/audit", params={"project": "rl"}).json()["audit"]
    assert log[0]["actor"] == "boss" and log[0]["action"] == "kpi.set" and "perf/throughput" in log[0]["target"]
    with team.client("alice") as alice:
        assert alice.get("/api/team/audit", params={"project": "rl"}).status_code == 403


@pytest.mark.parametrize("bad", ["rlc_short", "Bearer", "rlc_0123456789ab_" + "x" * 43])
def test_malformed_and_unknown_tokens_are_refused(team, bad) -> None:
    r = httpx.get(team.url + "/api/v1/health", headers={"authorization": f"Bearer {bad}"})
    assert r.status_code == 401 and "not valid" in r.json()["error"]
