"""The team server's authorization matrix, generated from its route table.

Every route of the running app (the team routes, ingestion, and the mounted dashboard's) is enumerated at
test time and called by every kind of caller against a real PostgreSQL-backed server: no token, a revoked
token, an expired token, the viewer / member / admin of project A, a member of project B, and a request
relayed by a same-host reverse proxy (``Host: 127.0.0.1`` plus ``X-Forwarded-For``, no token) to a
``--local-admin`` server over the same database. Each route must have a declared expectation in
:data:`EXPECT` — a new route without one fails the test, so it is covered by construction. Checked per
call: a caller below the route's role is refused (401/403/404) and changes nothing in the database; a
caller with the role is not refused; no body names project A's runs, views, targets or metric to a caller
without a role in A (unless the caller sent that name); no body ever holds the database URL. The counts
go to ``docs/qa/adversarial-auth.md`` (written by this test; deterministic, so unchanged routes leave it
unchanged).
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest
from starlette.routing import Mount

import pg_support
from rlcockpit.server.app import TeamServer
from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore
from rlcockpit.store.remote.wire import encode_batch

A, B = "proj-alpha", "proj-bravo"
RUN_A, NAME_A, KEY_A, RUN_B = "alpha-run-1", "alpha-secret-name", "alpha/metric", "bravo-run-1"
REPORT = Path(__file__).resolve().parents[2] / "docs" / "qa" / "adversarial-auth.md"
RANK = {"viewer": 0, "member": 1, "admin": 2}
SERVER_ADMIN_ONLY, ANY, OWNER = "server-admin", "any", "owner"


@dataclass(frozen=True)
class Expect:
    """Who may call a route: ``ANY`` authenticated user (answers filtered to their projects), a role in A,
    ``OWNER`` (of the token in the path: A's admin here) or ``SERVER_ADMIN_ONLY``. ``query``/``body``: what
    the call sends; ``fresh``: the path values are made anew for each call (the route deletes them)."""

    need: str
    query: str = ""
    body: Any = None
    fresh: bool = False


def _ingest_body(n: int) -> dict:
    batch = encode_batch(WriteBatch(points={f"matrix/k{n}": (np.arange(2), np.ones(2), np.zeros(2))}))
    return {"stream": f"matrix-{n}", "ops": [{"seq": 1, "batch": batch}]}


EXPECT: dict[tuple[str, str], Expect] = {
    # team server: pages, static files, API description
    ("GET", "/"): Expect(ANY), ("GET", "/index.html"): Expect(ANY), ("GET", "/favicon.ico"): Expect(ANY),
    ("GET", "/team-static/{name}"): Expect(ANY), ("GET", "/static/{rel:path}"): Expect(ANY),
    ("GET", "/api/team/openapi.json"): Expect(ANY), ("GET", "/api/openapi.json"): Expect(ANY),
    # ingestion API
    ("POST", "/api/v1/runs/{run_id}/ingest"): Expect("member", body=_ingest_body),
    ("GET", "/api/v1/runs/{run_id}"): Expect("viewer"), ("GET", "/api/v1/runs"): Expect(ANY),
    ("GET", "/api/v1/runs/{run_id}/sync-state"): Expect("viewer"),
    ("GET", "/api/v1/health"): Expect(ANY), ("GET", "/api/v1/whoami"): Expect(ANY),
    # team routes
    ("GET", "/api/team/targets"): Expect(ANY),
    ("GET", "/api/team/projects/{project}/targets"): Expect("viewer"),
    ("POST", "/api/team/projects/{project}/targets"): Expect("admin", body={"target": "alpha/other >= 1"}),
    ("DELETE", "/api/team/targets/{target_id}"): Expect("admin", fresh=True),
    ("GET", "/api/team/projects/{project}/leaderboard"): Expect("viewer"),
    ("GET", "/api/team/projects/{project}/views"): Expect("viewer"),
    ("POST", "/api/team/projects/{project}/views"): Expect("member", body={"name": "v", "state": {"route": "#/"}}),
    ("GET", "/api/team/views/{view_id}"): Expect("viewer"),
    ("DELETE", "/api/team/views/{view_id}"): Expect("admin", fresh=True),  # another user's view: admin
    ("GET", "/api/team/runs/{run_id}/ratings"): Expect("viewer"),
    ("POST", "/api/team/runs/{run_id}/ratings"): Expect("member", body={"step": 0, "idx": 0, "rating": "good"}),
    ("GET", "/api/team/projects/{project}/ratings/export"): Expect("viewer"),
    ("DELETE", "/api/team/runs/{run_id}"): Expect("admin", fresh=True),
    ("PUT", "/api/team/projects/{project}/alerts"): Expect("admin", body={"channels": []}),
    ("GET", "/api/team/audit"): Expect("admin", query=f"project={A}"),
    ("POST", "/api/team/users"): Expect(SERVER_ADMIN_ONLY, body={"name": "newcomer"}),
    ("POST", "/api/team/projects/{project}/members"): Expect("admin", body={"user": "member-b", "role": None}),
    ("GET", "/api/team/tokens"): Expect(ANY), ("POST", "/api/team/tokens"): Expect(ANY, body={"label": "m"}),
    ("DELETE", "/api/team/tokens/{token_id}"): Expect(OWNER, fresh=True),
    # the dashboard's routes
    ("GET", "/api/health"): Expect(ANY), ("GET", "/api/projects"): Expect(ANY), ("GET", "/api/runs"): Expect(ANY),
    ("GET", "/api/runs/fields"): Expect(ANY), ("GET", "/api/guide"): Expect(ANY),
    ("GET", "/api/live/runs"): Expect(ANY), ("GET", "/api/sweeps"): Expect(ANY),
    ("GET", "/api/sweeps/{sweep}"): Expect(ANY), ("GET", "/api/sweeps/{sweep}/importance"): Expect(ANY),
    ("GET", "/api/compare"): Expect(ANY, query=f"runs={RUN_A}"),
    **{("GET", f"/api/runs/{{run}}{tail}"): Expect("viewer", query=q) for tail, q in (
        ("", ""), ("/findings", ""), ("/events", ""), ("/series", f"keys={KEY_A}"), ("/timeline", ""),
        ("/mismatch", ""), ("/samples", "step=0"), ("/samples/compare", "step=0"), ("/samples/groups", "step=0"),
        ("/samples/prompts", ""), ("/samples/history", "prompt=p"), ("/diagnosis", ""), ("/report.html", ""),
        ("/live", "once=1"), ("/media/{digest}", ""))},
}

CALLERS = ("no token", "revoked token", "expired token", "viewer A", "member A", "admin A", "member B",
           "proxy-forged Host")
ROLE_IN_A = {"viewer A": "viewer", "member A": "member", "admin A": "admin"}
AUTHENTICATED = ("viewer A", "member A", "admin A", "member B")


@dataclass
class Team:
    server: TeamServer
    db: str
    tokens: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"authorization": f"Bearer {self.tokens[user]}"}, timeout=60)

    def add_user(self, name: str, projects: dict[str, str]) -> None:
        acc = self.server.team.accounts
        acc.create_user(name, actor="test")
        for project, role in projects.items():
            acc.grant(name, project, role, actor="test")
        self.tokens[name] = acc.issue_token(name, "test", actor="test")


def start_team(db: str, **kw: Any) -> Team:
    return Team(TeamServer(db, "127.0.0.1", 0, pool_size=8, **kw).serve_in_thread(), db, {})


def routes_of(app: Any) -> list[tuple[str, str]]:
    """``(method, path)`` of every route, mounted and included routers included (HEAD is GET's)."""
    out: list[tuple[str, str]] = []

    def walk(routes: Any, prefix: str) -> None:
        for r in routes:
            if hasattr(r, "original_router"):  # FastAPI's included router
                walk(r.original_router.routes, prefix + r.include_context.prefix)
            elif isinstance(r, Mount):
                walk(r.routes, prefix + r.path)
            else:
                out.extend((m, prefix + r.path) for m in sorted(getattr(r, "methods", None) or ["WS"]) if m != "HEAD")

    walk(app.routes, "")
    return sorted(set(out))


@pytest.fixture(scope="module")
def world(pg_cluster, tmp_path_factory):
    url, schema = pg_support.fresh_schema_url(pg_cluster)
    team = start_team(url)
    local = start_team(url, local_admin=True)  # the proxy caller's server: tokenless requests are the local admin
    acc = team.server.team.accounts
    for name, project, role in (("viewer-a", A, "viewer"), ("member-a", A, "member"), ("admin-a", A, "admin"),
                                ("member-b", B, "member"), ("revoked-a", A, "admin"), ("expired-a", A, "admin")):
        team.add_user(name, {project: role})
    acc.revoke_token(team.tokens["revoked-a"], actor="test")
    team.tokens["expired-a"] = acc.issue_token("expired-a", "short", actor="test", expires_days=0.2 / 86400)
    tmp = tmp_path_factory.mktemp("matrix")
    for user, rid, name, project in (("member-a", RUN_A, NAME_A, A), ("member-b", RUN_B, "bravo-name", B)):
        remote = RemoteStore(team.url, team.tokens[user], spool_dir=tmp / rid, start=False)
        remote.create_run({"id": rid, "project": project, "name": name})
        remote.write_batch(rid, WriteBatch(points={KEY_A if project == A else "bravo/metric": (
            np.arange(3), np.array([0.1, 0.5, 0.9]), np.zeros(3))}, samples=[(0, [
                {"prompt": "p", "response": f"{name} answer", "reward": 1.0}])]))
        assert remote.uploader.flush(), remote.uploader.outage
        remote.close()
    with team.client("admin-a") as admin:
        assert admin.post(f"/api/team/projects/{A}/targets", json={"target": f"{KEY_A} >= 0.8"}).status_code == 200
    with team.client("member-a") as member:
        view = member.post(f"/api/team/projects/{A}/views", json={"name": "alpha-view", "state": {}}).json()["view"]
    time.sleep(0.3)  # the expired token's life
    yield {"team": team, "local": local, "view": view["id"], "counter": itertools.count()}
    local.server.shutdown()
    team.server.shutdown()
    pg_support.drop_schema(pg_cluster, schema)


def _fresh(world: dict, path: str) -> dict[str, str]:
    """New resources of project A for a route that deletes what it names."""
    team: Team = world["team"]
    n = next(world["counter"])
    if "{run_id}" in path:
        team.server.store.create_run({"id": f"alpha-victim-{n}", "project": A, "name": f"alpha-victim-{n}"})
        return {"run_id": f"alpha-victim-{n}"}
    if "{view_id}" in path:  # saved by A's admin: deleting another user's view takes the admin role
        with team.client("admin-a") as member:
            return {"view_id": member.post(f"/api/team/projects/{A}/views", json={"name": f"alpha-v{n}", "state": {}})
                    .json()["view"]["id"]}
    if "{target_id}" in path:
        with team.client("admin-a") as admin:
            made = admin.post(f"/api/team/projects/{A}/targets", json={"target": f"alpha/t{n} >= 1"}).json()
        return {"target_id": str(made["target"]["id"])}
    token = team.server.team.accounts.issue_token("admin-a", f"victim {n}", actor="test")
    return {"token_id": token.split("_")[1]}


def _values(world: dict) -> dict[str, str]:
    team: Team = world["team"]
    tokens = {t["label"]: t["id"] for t in team.server.team.accounts.tokens("admin-a")}
    target = team.server.team.kpis.targets(A, fresh=True)[0]["id"]
    return {"run_id": RUN_A, "run": RUN_A, "project": A, "view_id": world["view"], "target_id": str(target),
            "token_id": tokens["test"], "name": "team.js", "rel:path": "js/core.js", "sweep": "alpha-sweep", "digest": "0" * 64}


def _fingerprint(db: str) -> tuple:
    """What a refused call must not change."""
    with psycopg.connect(db) as conn:
        return conn.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM keys), (SELECT count(*) FROM views), "
            "(SELECT count(*) FROM kpi_targets), (SELECT count(*) FROM ratings), (SELECT count(*) FROM users), "
            "(SELECT count(*) FROM tokens), (SELECT count(*) FROM tokens WHERE revoked), (SELECT "
            "string_agg(user_id || project || role, ',' ORDER BY user_id, project) FROM members), (SELECT count(*) "
            "FROM project_alerts), (SELECT count(*) FROM audit)").fetchone()


def _call(world: dict, caller: str, method: str, path: str, expect: Expect) -> tuple[int, str]:
    team: Team = world["team"]
    base, headers = team.url, {}
    if caller == "proxy-forged Host":
        base, headers = world["local"].url, {"host": "127.0.0.1", "x-forwarded-for": "203.0.113.7"}
    elif caller != "no token":
        user = {"revoked token": "revoked-a", "expired token": "expired-a", "viewer A": "viewer-a",
                "member A": "member-a", "admin A": "admin-a", "member B": "member-b"}[caller]
        headers["authorization"] = f"Bearer {team.tokens[user]}"
    body = expect.body(next(world["counter"])) if callable(expect.body) else expect.body
    url = base + path + (f"?{expect.query}" if expect.query else "")
    kw = {"json": body} if method in ("POST", "PUT") else {}
    with httpx.Client(timeout=httpx.Timeout(60, read=3 if "/live" in path else 60)) as c, \
            c.stream(method, url, headers=headers, **kw) as r:
        text = b""
        try:  # a live stream (server-sent events) answers its first event, then stays open: read what came
            for chunk in r.iter_bytes():
                text += chunk
                if len(text) > 4 << 20 or r.headers.get("content-type", "").startswith("text/event-stream"):
                    break
        except httpx.ReadTimeout:
            pass
        return r.status_code, text.decode("utf-8", "replace")


def _allowed(caller: str, need: str) -> bool:
    if caller not in AUTHENTICATED:
        return False
    if need == ANY:
        return True
    if need == OWNER:
        return caller == "admin A"
    if need == SERVER_ADMIN_ONLY:
        return False
    return caller in ROLE_IN_A and RANK[ROLE_IN_A[caller]] >= RANK[need]


def _leaks(text: str, sent: str, world: dict) -> list[str]:
    markers = [A, RUN_A, NAME_A, KEY_A, world["view"], "alpha-victim", "alpha-v"]
    return [m for m in markers if m in text and m not in sent]


@pytest.mark.slow
def test_every_route_answers_every_caller_as_declared(world) -> None:
    team: Team = world["team"]
    routes = routes_of(team.server.app)
    undeclared = [r for r in routes if r not in EXPECT]
    assert not undeclared, f"routes without a declared expectation in EXPECT (add one): {undeclared}"
    stale = [r for r in EXPECT if r not in routes]
    assert not stale, f"EXPECT names routes the app no longer has: {stale}"
    fixed = _values(world)
    db_port = team.db.split("@")[1].split("/")[0]
    problems: list[str] = []
    summary: list[str] = []
    counts = {"tried": 0, "refused": 0, "allowed": 0}
    rows: list[str] = []
    for method, path in routes:
        expect = EXPECT[(method, path)]
        per_route = []
        for caller in CALLERS:
            values = {**fixed, **(_fresh(world, path) if expect.fresh else {})}
            real = path
            for k, v in values.items():
                real = real.replace("{" + k + "}", v)
            before = _fingerprint(team.db)
            status, text = _call(world, caller, method, real, expect)
            allowed = _allowed(caller, expect.need)
            refused = status in (401, 403, 404)
            counts["tried"] += 1
            counts["refused" if refused else "allowed"] += 1
            per_route.append("refused" if refused else "allowed")
            where = f"{caller} {method} {real}: {status} {text[:160]!r}"
            found = []
            if allowed and status in (401, 403):
                found.append("refused a caller with the role")
            if not allowed and expect.need != ANY and not refused:
                found.append("unauthorised call not refused")
            if not allowed and not refused and caller not in AUTHENTICATED:
                found.append("unauthenticated call answered")
            if not allowed and method != "GET" and _fingerprint(team.db) != before:
                found.append("unauthorised write changed the database")
            if caller not in ROLE_IN_A and (leak := _leaks(text, real + expect.query + json.dumps(expect.body,
                                                                                             default=str), world)):
                found.append(f"names {leak} of project A to a caller without a role there")
            if "postgresql://" in text or db_port in text:
                found.append("the database URL in a body")
            problems += [f"{what}: {where}" for what in found]
            summary += [f"{what}: {caller}, `{method} {path}`" for what in found]
        rows.append(f"| `{method} {path}` | {expect.need} | {per_route.count('allowed')} | {per_route.count('refused')} |")
    _write_report(len(routes), counts, rows, summary)
    assert not problems, "\n".join(problems[:40])


def _write_report(n_routes: int, counts: dict[str, int], rows: list[str], problems: list[str]) -> None:
    text = "\n".join([
        "# Team server: authorization matrix",
        "",
        "Generated by `tests/adversarial/test_adversarial_authz_matrix.py` (do not edit by hand; the test rewrites",
        "it). Every route of the team server's route table, called by every caller kind against a real",
        "PostgreSQL-backed server: a caller below the route's role must be refused (401/403/404) and change",
        "nothing in the database; no body may name project A's runs, views, targets or metric to a caller without",
        "a role in A, or hold the database URL. A route without a declared expectation fails the test.",
        "",
        f"Callers: {', '.join(CALLERS)}.",
        "",
        f"**{n_routes} routes × {len(CALLERS)} callers = {counts['tried']} calls: {counts['refused']} refused, "
        f"{counts['allowed']} allowed, {len(problems)} problems (unauthorised reads or writes, leaks).**",
        "",
        *([f"- {p}" for p in problems] + [""] if problems else []),
        "| route | needs | allowed | refused |",
        "|---|---|---|---|",
        *rows,
        "",
    ])
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    if not REPORT.exists() or REPORT.read_text(encoding="utf-8") != text:
        REPORT.write_text(text, encoding="utf-8")
