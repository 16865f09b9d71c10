"""The newer API routes and their pure parts: run filters and columns, sample views, GRPO groups, probe history,
run groups, step phases, mismatch verdicts, and the live event stream — on real stores and a real server."""

from __future__ import annotations

import http.client as httplib
import json
import math
import threading
import time

import numpy as np
import pytest
from ui_browser_helpers import build_rich_run
from ui_helpers import get_json, http, running_server

import rlcockpit
from rlcockpit.ui import grouping, sampleview
from rlcockpit.ui.live import LiveCursor
from rlcockpit.ui.runfilter import FilterError, RowView, RunView, compile_filter


@pytest.fixture(scope="module")
def rich(store_env):
    ids = build_rich_run(store_env["dir"])
    return {**store_env, "ids": {**store_env["ids"], **ids}}


# ---- filter expressions ---------------------------------------------------------------------------------


RUN = {"id": "abc", "name": "grpo-a", "status": "finished", "group": "sweep", "tags": ["grpo", "x"], "last_step": 99,
       "config": {"actor_rollout_ref": {"actor": {"optim": {"lr": 3e-6}}}, "trainer": {"n": 8}},
       "summary": {"critic/score/mean": 0.9, "loss": 0.1}}


@pytest.mark.parametrize("expr, expected", [
    ('actor_rollout_ref.actor.optim.lr < 1e-5 and status == "finished"', True),
    ('actor_rollout_ref.actor.optim.lr < 1e-6 or status == "running"', False),
    ('"grpo" in tags and not "ppo" in tags', True),
    ('summary["critic/score/mean"] >= 0.9 and config.trainer.n == 8', True),
    ('reward > 0.5', True),  # the runs table's metric column
    ('loss < 0.2', True),  # a summary key
    ('missing.key > 0', False), ('missing.key == None', True), ('name > 5', False),  # type mismatch: no match
    ('last_step in [99, 100]', True), ('-last_step < -50', True), ('"grp" in name', True),
])
def test_filter_expressions(expr: str, expected: bool) -> None:
    predicate, _names = compile_filter(expr)
    view = RunView(RUN, {"reward": 0.9})
    assert predicate(view) is expected


@pytest.mark.parametrize("expr, fragment", [
    ('status = "finished"', "=="), ("status == 'a' && x", "and / or"), ("__import__('os')", "Call is not allowed"),
    ("name.upper()", "Call"), ('tags["x"]', "can be indexed"), ("lambda: 1", "not allowed"), ("1 if x else 2", "not allowed"),
])
def test_filter_errors_say_what_and_where(expr: str, fragment: str) -> None:
    with pytest.raises(FilterError, match="filter:") as info:
        compile_filter(expr)
    assert fragment in str(info.value) and "column" in str(info.value)


def test_runs_filter_columns_and_unknown_names(server, store_env) -> None:
    d = get_json(server, "/api/runs?filter=actor.optim.lr%20%3E%202e-6&columns=actor.optim.lr,summary.actor/kl_loss,rollout")
    assert [r["name"] for r in d["runs"]] == ["grpo-high-lr"]
    cols = d["runs"][0]["cols"]
    assert cols["actor.optim.lr"] == 5e-6 and cols["summary.actor/kl_loss"] == pytest.approx(0.002 * 119 * 5)
    assert cols["rollout"] is None and d["total"] == 3  # a non-leaf path is no column value
    d = get_json(server, "/api/runs?filter=nope%20%3E%201")
    assert d["runs"] == [] and d["unknown_names"] == ["nope"]
    status, _h, body = http(server, "/api/runs?filter=status%20%3D%201")
    assert status == 400 and "==" in json.loads(body)["error"]
    fields = get_json(server, "/api/runs/fields")
    assert "actor.optim.lr" in fields["config"] and "critic/score/mean" in fields["summary"]


def test_runs_filter_reads_only_the_json_it_needs(store_env) -> None:
    from rlcockpit.store import open_store

    store = open_store(store_env["dir"])
    light = store.list_runs("arith", fields=("tags",))
    assert light[0]["config"] == {} and light[0]["meta"] == {} and light[0]["tags"]
    full = store.list_runs("arith")
    assert full[0]["config"] and [r["id"] for r in light] == [r["id"] for r in full]


# ---- samples -------------------------------------------------------------------------------------------


def test_sample_rows_sort_filter_and_page(rich) -> None:
    rows = [{"reward": 0.5, "x": "b"}, {"reward": None, "x": "a"}, {"reward": 1.0, "x": "c"}, {"x": "d"}]
    assert [r.get("reward") for r in sampleview.sort_rows(rows, "reward", True)] == [1.0, 0.5, None, None]
    assert [r["x"] for r in sampleview.sort_rows(rows, "x", False)] == ["a", "b", "c", "d"]
    assert [r["x"] for r in sampleview.filter_rows(rows, 'reward >= 0.5 and x != "c"')] == ["b"]
    assert RowView({"a/b": 1}).lookup("row.a/b") == 1
    with running_server(rich["dir"]) as srv:
        rid = rich["ids"]["rich"]
        page = get_json(srv, f"/api/runs/{rid}/samples?sort=reward&desc=true&limit=100&offset=200")
        assert page["total"] == 263 and len(page["rows"]) == 63 and not page["more"]
        assert [r["reward"] for r in page["rows"]] == sorted((r["reward"] for r in page["rows"]), reverse=True)
        hits = get_json(srv, f"/api/runs/{rid}/samples?step=all&q=needle3&filter=reward%20%3C%200.5")
        assert hits["rows"] and all("needle3" in r["response"] and r["reward"] < 0.5 for r in hits["rows"])
        probes = get_json(srv, f"/api/runs/{rid}/samples?step=all&kind=probe&limit=500")
        assert probes["total"] == 18 and {r["probe_id"] for r in probes["rows"]} == {0, 1, 2}


def test_grpo_groups_and_prompt_history(rich) -> None:
    with running_server(rich["dir"]) as srv:
        rid = rich["ids"]["rich"]
        g = get_json(srv, f"/api/runs/{rid}/samples/groups?step=10")
        assert g["group_by"] == "uid" and g["advantage_source"] is None and len(g["groups"]) == 4
        assert g["components"] == ["acc", "format"] and g["zero_variance"] == 1
        zero = next(x for x in g["groups"] if x["zero_variance"])
        assert zero["id"] == "u0" and all(r["advantage"] == 0 for r in zero["responses"])
        other = next(x for x in g["groups"] if not x["zero_variance"])
        rewards = [r["reward"] for r in other["responses"]]
        mean, std = np.mean(rewards), np.std(rewards, ddof=1)
        assert [r["advantage"] for r in other["responses"]] == pytest.approx([(x - mean) / (std + 1e-6) for x in rewards])
        prompts = get_json(srv, f"/api/runs/{rid}/samples/prompts?probes=true")["prompts"]
        assert [p["prompt"][:7] for p in prompts] == ["Probe 0", "Probe 1", "Probe 2"] and prompts[0]["n_steps"] == 6
        hist = get_json(srv, f"/api/runs/{rid}/samples/history?prompt=" + "Probe 1: what is 1 + 1?".replace(" ", "%20").replace("+", "%2B"))
        assert [s["step"] for s in hist["steps"]] == [0, 10, 20, 30, 40, 50]
        assert [s["mean_reward"] for s in hist["steps"]] == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]


def test_groups_fall_back_to_prompt_text_and_logged_advantages() -> None:
    rows = [{"prompt": "p", "reward": 1.0, "advantage": 0.7, "idx": 0}, {"prompt": "p", "reward": 0.0, "advantage": -0.7, "idx": 1},
            {"prompt": "q", "reward": 1.0, "advantage": 0.0, "idx": 2}]
    g = sampleview.grpo_groups(rows)
    assert g["group_by"] == "prompt" and g["advantage_source"] == "advantage"
    assert [r["advantage"] for r in g["groups"][0]["responses"]] == [0.7, -0.7]
    assert g["groups"][1]["n"] == 1 and not g["groups"][1]["zero_variance"]  # one response: no variance to judge


# ---- run groups, phases, mismatch ------------------------------------------------------------------------


def test_group_aggregate_interpolates_within_each_run() -> None:
    a = (np.array([0, 10, 20]), np.array([0.0, 1.0, 2.0]))
    b = (np.array([0, 5, 10]), np.array([2.0, 2.0, np.nan]))  # stops at 5 (NaN at 10 is ignored)
    g = grouping.aggregate([a, b])
    assert g["steps"] == [0, 5, 10, 20]
    assert g["n"] == [2, 2, 1, 1] and g["mean"] == [1.0, 1.25, 1.0, 2.0]
    assert g["lo"][1] == 0.5 and g["hi"][1] == 2.0
    big = grouping.aggregate([(np.arange(5000), np.arange(5000.0)), (np.arange(5000), np.arange(5000.0) + 2)], max_points=100)
    assert len(big["steps"]) == 100 and big["lo"][0] == 0 and big["hi"][-1] == 5001


def test_compare_groups_by_group_and_config(server, store_env) -> None:
    ids = ",".join(store_env["ids"].values())
    d = get_json(server, f"/api/compare?runs={ids}&keys=critic/score/mean&group_by=group")
    groups = {g["name"]: g for g in d["groups"]}
    assert set(groups) == {"sweep-lr", "(no group)"} and len(groups["sweep-lr"]["runs"]) == 2
    s = groups["sweep-lr"]["series"]["critic/score/mean"]
    assert s["n"][:60] == [2] * 60 and all(lo <= m <= hi for lo, m, hi in zip(s["lo"], s["mean"], s["hi"]))
    d = get_json(server, f"/api/compare?runs={ids}&keys=critic/score/mean&group_by=actor.optim.lr")
    assert {g["name"] for g in d["groups"]} == {"actor.optim.lr=1e-06", "actor.optim.lr=5e-06"}


def test_data_loss_is_on_the_run_and_in_the_runs_list(rich) -> None:
    with running_server(rich["dir"]) as srv:
        rid = rich["ids"]["rich"]
        lost = get_json(srv, f"/api/runs/{rid}")["data_lost"]
        assert len(lost) == 1 and lost[0]["step"] == 40
        assert lost[0]["payload"]["ranges"] == [[40, 44]] and lost[0]["payload"]["reason"] == "store_unavailable"
        row = next(r for r in get_json(srv, "/api/runs?project=arith")["runs"] if r["id"] == rid)
        assert row["data_lost"] == 5


def test_compare_says_why_a_run_has_no_reward_kl_path(rich) -> None:
    with running_server(rich["dir"]) as srv:
        d = get_json(srv, f"/api/compare?runs={rich['ids']['rich']},{rich['ids']['sparse']}")
    by = {r["name"]: r for r in d["runs"]}
    assert by["grpo-rich"]["path"] and by["grpo-sparse"]["path"] is None
    assert "KL" in by["grpo-sparse"]["path_missing"]


def test_phase_timeline_and_mismatch_verdicts(rich) -> None:
    with running_server(rich["dir"]) as srv:
        rid = rich["ids"]["rich"]
        tl = get_json(srv, f"/api/runs/{rid}/timeline")
        names = [p["name"] for p in tl["phases"]]
        assert names == ["generation", "log_prob", "reference", "advantage", "update", "sync", "idle"]
        assert tl["unassigned"] == ["timing_s/generate_sequences"] and tl["step_key"] == "timing_s/step"
        idle = tl["phases"][-1]["seconds"]
        assert idle[0] == pytest.approx(0.25) and sum(tl["mean_share"].values()) == pytest.approx(1.0)
        assert set(tl["mfu"]) == {"perf/mfu/actor"} and set(tl["throughput"]) == {"perf/throughput"}
        mm = {m["key"]: m for m in get_json(srv, f"/api/runs/{rid}/mismatch")["metrics"]}
        assert mm["rollout_corr/rollout_is_mean"]["status"] == "out" and mm["rollout_corr/rollout_is_mean"]["steps_out_of_bounds"] == 10
        assert mm["rollout_corr/kl"]["status"] == "ok" and mm["rollout_corr/rollout_is_eff_sample_size"]["status"] == "ok"
        assert mm["training/rollout_probs_diff_max"]["status"] == "info"  # no documented bound
        none = get_json(srv, f"/api/runs/{rich['ids']['sparse']}/mismatch")
        assert none["available"] is False
        assert get_json(srv, f"/api/runs/{rich['ids']['sparse']}/timeline")["available"] is False


def test_phase_mean_shares_of_a_run_validating_on_its_last_step_sum_to_one(tmp_path) -> None:
    """Our trainer's shape (arith-hacking, 15 steps): timing_s/testing only on the last step. Its mean share
    was that step's share (36 %), and the table's shares summed to 134 %."""
    run = rlcockpit.init(project="arith", name="val-last", dir=tmp_path, system_interval=None, health=False,
                         capture_meta=False)
    for step in range(1, 16):
        m = {"timing_s/gen": 0.1, "timing_s/update_actor": 0.3, "timing_s/step": 0.4,
             "timing_s/start_profile": 0.0, "timing_s/stop_profile": 0.0}  # verl's, outside the step
        if step == 15:
            m.update({"timing_s/testing": 0.4, "timing_s/step": 0.8})
        run.log(m, step=step)
    run.finish()
    with running_server(tmp_path) as srv:
        tl = get_json(srv, f"/api/runs/{run.id}/timeline")
    shares = tl["mean_share"]
    assert tl["unassigned"] == [], tl["unassigned"]  # the profiler's timers are known, not "other timers"
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["validation"] == pytest.approx(0.5 / 15)
    assert shares["generation"] == pytest.approx((14 * 0.25 + 0.125) / 15)


def test_a_verl_v1_runs_gen_time_is_a_wait_for_samples_not_generation(tmp_path) -> None:
    """verl's V1 trainer (training/off_policy/* logged) times sampling from its replay buffer as timing_s/gen:
    the timeline showed it as generation. It is the sample wait there, with wait_for_enough_samples; and
    param_sync is weight sync. A run without the V1 keys keeps gen as generation."""
    for name, v1 in (("v1", True), ("classic", False)):
        run = rlcockpit.init(project="p", name=name, dir=tmp_path, system_interval=None, health=False,
                             capture_meta=False)
        for step in range(1, 6):
            m = {"timing_s/gen": 0.5, "timing_s/update_actor": 0.3, "timing_s/param_sync": 0.1, "timing_s/step": 1.0}
            if v1:
                m.update({"training/off_policy/staleness_mean": 1.0, "timing_s/wait_for_enough_samples": 0.05})
            run.log(m, step=step)
        run.finish()
        with running_server(tmp_path) as srv:
            tl = get_json(srv, f"/api/runs/{run.id}/timeline")
        phases = {p["name"]: p["keys"] for p in tl["phases"]}
        assert tl["unassigned"] == [] and phases["sync"] == ["timing_s/param_sync"]
        if v1:
            assert "generation" not in phases
            assert sorted(phases["sample_wait"]) == ["timing_s/gen", "timing_s/wait_for_enough_samples"]
        else:
            assert phases["generation"] == ["timing_s/gen"] and "sample_wait" not in phases


# ---- live ------------------------------------------------------------------------------------------------


def test_live_cursor_delivers_new_keys_points_findings_once(tmp_path) -> None:
    from rlcockpit.health import Finding
    from rlcockpit.store import open_store

    run = rlcockpit.init(project="p", name="live", dir=tmp_path, system_interval=None, health=False, capture_meta=False)
    run.log({"data/a": 1.0}, step=0)
    run.flush()
    store = open_store(tmp_path)
    cursor = LiveCursor(store, run.id, since=0, t=time.time())
    first = dict(cursor.poll())
    assert "points" not in first
    run.log({"data/a": 2.0, "actor/new": 5.0}, step=1)
    run.log_samples([{"prompt": "p", "response": "r", "reward": 1}], step=1)
    run.log_finding(Finding(detector="d", severity="warning", step=1, title="t", metric="actor/new"))
    run.flush()
    ev = dict(cursor.poll())
    assert set(ev["points"]["series"]) == {"data/a", "actor/new"} and ev["points"]["series"]["data/a"]["n"] == 1
    assert ev["samples"]["sample_steps"] == [1] and ev["findings"]["findings"][0]["cites"] == ["actor/new"]
    assert ev["status"]["last_step"] == 1
    assert cursor.poll() == []  # nothing new: nothing sent
    run.finish()
    assert dict(cursor.poll())["status"]["status"] == "finished" and cursor.finished


def test_live_stream_over_http_and_token(tmp_path) -> None:
    run = rlcockpit.init(project="p", name="sse", dir=tmp_path, system_interval=None, health=False, capture_meta=False)
    run.log({"actor/x": 1.0}, step=0)
    run.flush()
    with running_server(tmp_path, token="tok-123", live_interval_s=0.1) as srv:
        assert http(srv, f"/api/runs/{run.id}/live")[0] == 401  # streams are behind the token too
        conn = httplib.HTTPConnection(*srv.server_address, timeout=10)
        conn.request("GET", f"/api/runs/{run.id}/live?since=0&t={time.time()}", headers={"Authorization": "Bearer tok-123"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
        events: list[tuple[str, dict]] = []

        def read() -> None:
            name = None
            for raw in resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name:
                    events.append((name, json.loads(line[6:])))
                    if name == "end":
                        return

        th = threading.Thread(target=read, daemon=True)
        th.start()
        run.log({"actor/x": 2.0, "actor/y": math.pi}, step=1)
        run.flush()
        deadline = time.time() + 10
        while time.time() < deadline and "actor/y" not in streamed(events):
            time.sleep(0.05)
        run.finish()
        th.join(10)
        conn.close()
    names = [n for n, _ in events]
    assert "points" in names and names[-1] == "end"
    # a poll may land between the writer's commits: a key's new points can come one event later, never lost
    assert streamed(events) == {"actor/x", "actor/y"}


def streamed(events: list[tuple[str, dict]]) -> set[str]:
    """Every series key the ``points`` events carried so far."""
    return {key for name, data in list(events) if name == "points" for key in data["series"]}


def test_create_app_takes_a_team_auth_that_limits_projects(tmp_path) -> None:
    """What a team server plugs in: its own Auth returning a Principal with the user's projects."""
    from fastapi.testclient import TestClient

    from rlcockpit.store import open_store
    from rlcockpit.ui.app import create_app
    from rlcockpit.ui.security import Principal

    class HeaderAuth:
        def authenticate(self, conn):
            user = conn.headers.get("x-user")
            return {"ann": Principal("ann", projects=("arith",)), "bob": Principal("bob", projects=("other",))}.get(user)

    store = open_store(tmp_path)
    store.create_run({"id": "arith1", "project": "arith", "name": "a"})
    store.create_run({"id": "other1", "project": "other", "name": "o"})
    client = TestClient(create_app(store, auth=HeaderAuth()), base_url="http://team.example")  # no Host check with auth
    assert client.get("/api/runs").status_code == 401
    ann = client.get("/api/runs", headers={"x-user": "ann"}).json()["runs"]
    assert ann and {r["project"] for r in ann} == {"arith"}
    assert client.get("/api/runs/other1", headers={"x-user": "ann"}).status_code == 404
    assert client.get("/api/runs/other1", headers={"x-user": "bob"}).status_code == 200
    assert [p["name"] for p in client.get("/api/projects", headers={"x-user": "bob"}).json()["projects"]] == ["other"]
    assert client.get("/", headers={"x-user": "bob"}).status_code == 200  # pages and static files too
