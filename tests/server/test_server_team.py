"""Team dashboards: KPI targets and leaderboard, KPI alerts through a project's channel (a real loopback
webhook), saved views shareable by URL, sample ratings stored / shown / exported / used as evidence."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rlcockpit.server.kpi import parse_target
from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore


@pytest.fixture
def webhook():
    got: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            got.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/hook", got
    srv.shutdown()


def _log(team, tmp_path, user, run_id, key, values, *, start=0, project="rl"):
    remote = RemoteStore(team.url, team.tokens[user], spool_dir=tmp_path / run_id, stream=f"s-{run_id}-{start}",
                         start=False)
    if start == 0:
        remote.create_run({"id": run_id, "project": project, "name": run_id})
    steps = np.arange(start, start + len(values))
    remote.write_batch(run_id, WriteBatch(points={key: (steps, np.asarray(values, float), np.zeros(len(values)))}))
    assert remote.uploader.flush()
    remote.close()


@pytest.mark.parametrize("text,want", [("val-core/aime/acc/mean@1 >= 0.70", ("val-core/aime/acc/mean@1", ">=", 0.7)),
                                       ("perf/throughput>=2000", ("perf/throughput", ">=", 2000.0)),
                                       ("aime_acc > 70%", ("aime_acc", ">", 0.7)), ("loss <= 1e-2", ("loss", "<=", 0.01))])
def test_targets_parse(text, want) -> None:
    assert parse_target(text) == want


@pytest.mark.parametrize("bad", ["acc", "acc = 0.7", "acc >= nan", ">= 0.7", "acc >= seventy"])
def test_bad_targets_are_clear_errors(bad) -> None:
    with pytest.raises(ValueError, match="KPI target"):
        parse_target(bad)


def test_leaderboard_and_kpi_alerts(team, tmp_path, webhook) -> None:
    url, got = webhook
    key = "val-core/aime/acc/mean@1"
    with team.client("boss") as boss:
        assert boss.put("/api/team/projects/rl/alerts", json={"channels": [{"type": "webhook", "url": url}],
                                                              "cooldown_s": 0}).status_code == 200
        r = boss.post("/api/team/projects/rl/targets", json={"target": f"{key} >= 0.70", "label": "AIME"})
        assert r.status_code == 200
    _log(team, tmp_path, "alice", "slow", key, [0.2, 0.4, 0.55, 0.6])
    _log(team, tmp_path, "boss", "fast", key, [0.3, 0.65, 0.72, 0.8])
    kpis = team.server.team.kpis
    kpis.drain()
    with team.client("val") as viewer:
        board = viewer.get("/api/team/projects/rl/leaderboard").json()["leaderboard"][0]
    assert board["target"]["text"] == f"{key} >= 0.7"
    assert [(e["run_id"], e["best"], e["best_step"], e["reached_step"], e["user"]) for e in board["runs"]] == [
        ("fast", 0.8, 3, 2, "boss"), ("slow", 0.6, 3, None, "alice")]
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("KPI reached" in json.dumps(m) and "fast" in json.dumps(m) for m in got)
    # the best run regresses below the target: one alert
    _log(team, tmp_path, "boss", "fast", key, [0.5], start=4)
    kpis.drain()
    deadline = time.monotonic() + 10
    while not any("regressed" in json.dumps(m) for m in got) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("Best run regressed" in json.dumps(m) for m in got)
    assert [e["kind"] for e in team.server.store.events("fast") if e["kind"] == "kpi"] == ["kpi", "kpi"]


def test_saved_views_are_shareable_by_url(team) -> None:
    state = {"route": "#/compare?runs=a,b", "filter": "status = finished", "panels": ["critic/score/mean"],
             "smoothing": 0.6, "x": "step"}
    with team.client("alice") as alice:
        view = alice.post("/api/team/projects/rl/views", json={"name": "sweep A vs B", "state": state}).json()["view"]
    assert view["url"] == f"/#/view/{view['id']}"
    with team.client("val") as viewer:  # another member of the project opens the link
        got = viewer.get(f"/api/team/views/{view['id']}").json()["view"]
        assert got["state"] == state and got["owner"] == "alice"
        assert viewer.delete(f"/api/team/views/{view['id']}").status_code == 403
    with team.client("eve") as outsider:
        assert outsider.get(f"/api/team/views/{view['id']}").status_code == 404


def test_ratings_are_stored_shown_exported_and_count_as_evidence(team, tmp_path) -> None:
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path, start=False)
    remote.create_run({"id": "rated", "project": "rl", "name": "rated"})
    remote.append_samples("rated", 7, [{"prompt": "2+2?", "response": "\\boxed{4}", "reward": 1.0},
                                       {"prompt": "3+3?", "response": "ANSWER ANSWER \\boxed{}", "reward": 1.0}])
    assert remote.uploader.flush()
    remote.close()
    with team.client("alice") as alice:
        assert alice.post("/api/team/runs/rated/ratings", json={"step": 7, "idx": 0, "rating": "good"}).status_code == 200
        r = alice.post("/api/team/runs/rated/ratings", json={"step": 7, "idx": 1, "rating": "hacked",
                                                             "note": "format gaming: empty box"})
        assert r.status_code == 200
        assert alice.post("/api/team/runs/rated/ratings", json={"step": 7, "idx": 9, "rating": "bad"}).status_code == 404
        assert alice.post("/api/team/runs/rated/ratings", json={"step": 7, "idx": 0, "rating": "meh"}).status_code == 400
        shown = alice.get("/api/team/runs/rated/ratings").json()["ratings"]
        csv_text = alice.get("/api/team/projects/rl/ratings/export", params={"format": "csv"}).text
        jsonl = alice.get("/api/team/projects/rl/ratings/export").text.splitlines()
    assert [(x["idx"], x["rating"], x["author"]) for x in shown] == [(0, "good", "alice"), (1, "hacked", "alice")]
    assert "format gaming: empty box" in csv_text and csv_text.splitlines()[0].startswith("run_id,step,idx,rating")
    assert json.loads(jsonl[1])["response"] == "ANSWER ANSWER \\boxed{}"
    store = team.server.store
    findings = store.findings("rated")
    assert [f["detector"] for f in findings] == ["human_rating"] and "format gaming" in findings[0]["summary"]
    from rlcockpit.health.diagnosis.diagnose import diagnose_run

    diagnosis = diagnose_run(store, "rated")  # a person's rating is evidence in the diagnosis
    human = [f for f in diagnosis["findings"] if f["detector"] == "human_rating"]
    assert human and human[0]["evidence"]["samples"][0]["response"] == "ANSWER ANSWER \\boxed{}"
    assert diagnosis["counts"]["warning"] >= 1
    assert store.finding_counts(["rated"])["rated"]["warning"] == 1
    assert [e["payload"]["rating"] for e in store.events("rated", "sample_rating")] == ["good", "hacked"]
    with team.client("val") as viewer:
        assert viewer.post("/api/team/runs/rated/ratings", json={"step": 7, "idx": 0, "rating": "bad"}).status_code == 403
