"""What a team-server caller may learn: run lookups (id, name, prefix) only among their projects — no name
squatting across projects, no other project's run ids, no project names of runs they cannot read, never
the database URL — and the leaderboard's credit comes from the token, not from the client."""

from __future__ import annotations

import time

import httpx
import numpy as np
import pytest

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore

KEY = "val/acc"


def _run(team, tmp_path, user, run_id, name, project, *, meta_patch=None, created_at=None):
    remote = RemoteStore(team.url, team.tokens[user], spool_dir=tmp_path / run_id, start=False)
    remote.create_run({"id": run_id, "project": project, "name": name, "created_at": created_at or time.time()})
    remote.write_batch(run_id, WriteBatch(points={KEY: (np.arange(3), np.array([0.5, 0.7, 0.9]), np.zeros(3))},
                                          meta_patch=meta_patch or {}))
    assert remote.uploader.flush(), remote.uploader.outage
    remote.close()


@pytest.fixture
def two_projects(team, tmp_path):
    team.add_user("bob", {"other": "admin"})
    team.add_user("nobody", {})
    now = time.time()
    _run(team, tmp_path, "alice", "rl-run-1", "shared", "rl", created_at=now - 60)
    _run(team, tmp_path, "bob", "ot-run-1", "bobs", "other", created_at=now - 50)
    _run(team, tmp_path, "eve", "ot-run-2", "shared", "other", created_at=now)  # newest "shared": the squatter
    _run(team, tmp_path, "eve", "ot-run-3", "bobs", "other", created_at=now + 1)
    return team


def _get(team, user, path, **kw) -> httpx.Response:
    with team.client(user) as c:
        return c.get(path, **kw)


def test_name_lookups_resolve_within_the_callers_projects(two_projects) -> None:
    team = two_projects
    for path in ("/api/runs/shared", "/api/v1/runs/shared"):  # the dashboard's and the API's lookups
        body = _get(team, "alice", path).json()
        assert (body.get("run") or {}).get("id") == "rl-run-1", (path, body)
        assert _get(team, "eve", path).json()["run"]["id"] == "ot-run-2"
    assert _get(team, "boss", "/api/team/runs/shared/ratings").status_code == 200  # rl's admin: rl's run
    with team.client("boss") as boss:
        assert boss.delete("/api/team/runs/shared").json() == {"deleted": "rl-run-1"}
    assert team.server.store.get_run("ot-run-2", projects=None)["name"] == "shared"  # the other one is untouched


def test_prefix_and_refusal_messages_name_nothing_the_caller_cannot_see(two_projects) -> None:
    team = two_projects
    assert _get(team, "alice", "/api/runs/rl-run").json()["run"]["id"] == "rl-run-1"  # unique among hers
    for user in ("nobody", "alice"):
        for path in ("/api/runs/ot-run", "/api/v1/runs/ot-run", "/api/runs/ot-run-1", "/api/team/runs/ot-run-1/ratings"):
            r = _get(team, user, path)
            assert r.status_code == 404, (user, path, r.text)
            assert "ot-run-" not in r.text.replace("'ot-run'", "").replace("'ot-run-1'", "") and "other" not in r.text
            assert "postgresql" not in r.text and str(team.db.split(":")[-1].split("/")[0]) not in r.text
    with team.client("nobody") as c:
        r = c.post("/api/team/runs/rl-run-1/ratings", json={"step": 0, "idx": 0, "rating": "good"})
    assert r.status_code == 404 and "'rl'" not in r.text
    team.add_user("root", admin=True)  # a server admin sees every run: the ambiguity lists them, not the database
    r = _get(team, "root", "/api/runs/ot-run")
    assert r.status_code == 404 and "ambiguous" in r.text and "postgresql" not in r.text and "127.0.0.1" not in r.text


def test_leaderboard_credit_comes_from_the_token_not_from_meta_patch(team, tmp_path) -> None:
    _run(team, tmp_path, "alice", "fake-credit", "fake-credit", "rl", meta_patch={"team_user": "val", "note": "x"})
    meta = team.server.store.get_run("fake-credit")["meta"]
    assert meta["team_user"] == "alice" and meta["note"] == "x"  # the rest of the patch is applied
    with team.client("boss") as boss:
        assert boss.post("/api/team/projects/rl/targets", json={"target": f"{KEY} >= 0.8"}).status_code == 200
        board = boss.get("/api/team/projects/rl/leaderboard").json()["leaderboard"][0]["runs"]
    assert [(e["run_id"], e["user"]) for e in board] == [("fake-credit", "alice")]


def test_a_request_naming_a_project_resolves_names_in_that_project_only(two_projects) -> None:
    team = two_projects
    team.server.team.accounts.grant("alice", "other", "viewer", actor="test")  # she now sees both "shared" runs
    assert _get(team, "alice", "/api/v1/runs/shared").json()["run"]["id"] == "ot-run-2"  # the newest of hers
    assert _get(team, "alice", "/api/v1/runs/shared", params={"project": "rl"}).json()["run"]["id"] == "rl-run-1"
    assert _get(team, "alice", "/api/runs/shared", params={"project": "other"}).json()["run"]["id"] == "ot-run-2"
    r = _get(team, "eve", "/api/v1/runs/shared", params={"project": "rl"})  # a project she cannot read: nothing
    assert r.status_code == 404 and "rl-run" not in r.text
