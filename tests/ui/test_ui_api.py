"""The dashboard JSON API against a real store filled through rlcockpit.init/log/log_samples."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate
from ui_helpers import XSS_RESPONSE, get_json, http, running_server

import rlcockpit
from rlcockpit.store import open_store
from rlcockpit.ui.app import create_app
from rlcockpit.ui.routes import health as routes_health


def test_runs_list_has_status_metrics_and_findings(server, store_env) -> None:
    data = get_json(server, "/api/runs?project=arith")
    by_name = {r["name"]: r for r in data["runs"]}
    assert set(by_name) == {"grpo-baseline", "grpo-high-lr", "ppo-failed"}
    assert by_name["ppo-failed"]["status"] == "failed"
    assert by_name["grpo-baseline"]["status"] == "finished"
    base = by_name["grpo-baseline"]
    assert base["findings"]["critical"] >= 1 and base["findings"]["warning"] >= 1
    assert base["metrics"]["reward"] == pytest.approx(0.2 + 0.6 * (1 - np.exp(-3 * 119 / 120)) + 0.02 * np.sin(119))
    assert base["last_step"] == 119 and base["group"] == "sweep-lr" and "baseline" in base["tags"]
    # server-side filters
    assert [r["name"] for r in get_json(server, "/api/runs?status=failed")["runs"]] == ["ppo-failed"]
    assert {r["name"] for r in get_json(server, "/api/runs?q=BASELINE")["runs"]} == {"grpo-baseline"}
    assert get_json(server, "/api/runs?project=nope")["runs"] == []
    assert get_json(server, "/api/projects")["projects"] == [{"name": "arith", "runs": 3}]


def test_run_detail_groups_keys_and_carries_markers(server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    d = get_json(server, f"/api/runs/{rid}")
    assert d["run"]["name"] == "grpo-baseline"
    assert d["run"]["config"]["actor"]["optim"]["lr"] == 1e-6
    assert "command" in d["run"]["meta"]
    groups = [g["group"] for g in d["groups"]]
    assert groups == ["actor", "critic", "response_length", "perf", "timing_s", "val-core"]
    assert any(f["step"] == 77 and f["severity"] == "critical" for f in d["findings"])
    guard = [e for e in d["events"] if e["kind"] == "guardrail"]
    assert guard and guard[0]["step"] == 90
    assert d["sample_steps"] == [0, 40, 80, 119]
    assert d["kl_key"] == "actor/kl_loss" and d["reward_key"] == "critic/score/mean"
    # name and id prefix resolve too; unknown runs are 404 with a message
    assert get_json(server, "/api/runs/grpo-high-lr")["run"]["id"] == store_env["ids"]["grpo-high-lr"]
    status, _, body = http(server, "/api/runs/doesnotexist")
    assert status == 404 and "doesnotexist" in json.loads(body)["error"]


def test_series_downsampled_keeps_spike_and_since_returns_only_new(server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    d = get_json(server, f"/api/runs/{rid}/series?keys=actor/kl_loss,actor/grad_norm&max_points=20")
    kl = d["series"]["actor/kl_loss"]
    assert len(kl["steps"]) <= 20 and 77 in kl["steps"]
    assert max(kl["values"]) == pytest.approx(0.5 + 0.002 * 77)
    assert max(d["series"]["actor/grad_norm"]["values"]) > 30
    new = get_json(server, f"/api/runs/{rid}/series?keys=actor/kl_loss&since=115")
    assert new["series"]["actor/kl_loss"]["steps"] == [116, 117, 118, 119]
    assert new["status"] == "finished" and new["last_step"] == 119  # findings now arrive by the live stream
    status, _, body = http(server, f"/api/runs/{rid}/series")
    assert status == 400 and "keys" in json.loads(body)["error"]
    status, _, body = http(server, f"/api/runs/{rid}/series?keys=a&max_points=abc")
    assert status == 400 and "max_points" in json.loads(body)["error"]


def test_nan_values_are_null_with_nonfinite_list(tmp_path) -> None:
    run = rlcockpit.init(project="p", name="nan", dir=tmp_path, system_interval=None, health=False, capture_meta=False)
    for s, v in enumerate([1.0, float("nan"), float("inf"), 2.0]):
        run.log({"actor/pg_loss": v}, step=s)
    run.finish()
    with running_server(tmp_path) as srv:
        status, _, body = http(srv, f"/api/runs/{run.id}/series?keys=actor/pg_loss")
    assert status == 200
    s = json.loads(body)["series"]["actor/pg_loss"]  # strict JSON (no NaN tokens) parsed
    assert s["values"] == [1.0, None, None, 2.0]
    assert s["nonfinite"] == [[1, "nan"], [2, "inf"]]


def test_samples_pages_search_repeats_and_compare(server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    d = get_json(server, f"/api/runs/{rid}/samples")
    assert d["step"] == 119 and d["steps"] == [0, 40, 80, 119]
    assert "data_source" in d["columns"]
    looping = [r for r in d["rows"] if "the answer is the answer is" in r["response"]]
    assert looping and looping[0]["_repeats"] and looping[0]["_repeat_ratio"] > 0.3
    assert any(r["response"] == XSS_RESPONSE for r in d["rows"])  # stored and served verbatim (escaped by the UI)
    hits = get_json(server, f"/api/runs/{rid}/samples?step=all&q=1%20%2B%203")["rows"]
    assert {r["step"] for r in hits} == {0, 40, 80, 119} and all("1 + 3" in r["prompt"] for r in hits)
    page = get_json(server, f"/api/runs/{rid}/samples?step=0&limit=2&offset=1")
    assert [r["idx"] for r in page["rows"]] == [1, 2] and page["more"] is True
    cmp = get_json(server, f"/api/runs/{rid}/samples/compare?a=0&b=119")
    assert cmp["total"] == 4
    pair = next(p for p in cmp["pairs"] if p["prompt"] == "What is 1 + 3?")
    assert "123" in pair["b"][0]["response"] and "The answer is 4." in pair["a"][0]["response"]


def test_compare_overlays_paths_and_config_diff(server, store_env) -> None:
    a, b = store_env["ids"]["grpo-baseline"], store_env["ids"]["grpo-high-lr"]
    d = get_json(server, f"/api/compare?runs={a},{b}&keys=critic/score/mean")
    assert [r["id"] for r in d["runs"]] == [a, b]
    for r in d["runs"]:
        assert len(r["series"]["critic/score/mean"]["steps"]) == 120
        p = r["path"]
        assert p["x_key"] == "actor/kl_loss" and p["y_key"] == "critic/score/mean" and len(p["x"]) == len(p["y"]) == 120
    diff = {row["key"]: row for row in d["config_diff"]}
    assert diff["actor.optim.lr"]["differs"] and diff["actor.optim.lr"]["values"] == [1e-6, 5e-6]
    assert not diff["rollout.n"]["differs"]
    status, _, _ = http(server, "/api/compare")
    assert status == 400


def test_diagnosis_lists_overrides(server, store_env) -> None:
    rid = store_env["ids"]["grpo-high-lr"]  # its entropy collapses (grpo-baseline's one warning is held back: its
    # accuracy kept rising)
    d = get_json(server, f"/api/runs/{rid}/diagnosis")
    assert d["source"] in ("engine", "stored")
    assert d["overrides"] and all("=" in o for o in d["overrides"])
    titles = [f["title"] for f in d["diagnosis"]["findings"]]
    assert titles


def test_diagnosis_falls_back_to_stored_findings(store_env, monkeypatch) -> None:
    """A diagnosis that raises at run time shows the stored findings and says why (import errors are not
    caught: a moved health function fails loudly)."""
    def broken(store, run_id):
        raise RuntimeError("replay failed")

    monkeypatch.setattr(routes_health, "diagnose_run", broken)
    client = TestClient(create_app(open_store(store_env["dir"])), base_url="http://127.0.0.1")
    d = client.get("/api/runs/grpo-baseline/diagnosis").json()
    assert d["source"] == "stored" and d["diagnosis"]["root_cause"] is None
    assert d["engine_error"] == "RuntimeError: replay failed"
    assert "actor.optim.lr=5e-7" in d["overrides"] and "actor_rollout_ref.actor.optim.lr=5e-7" in d["verl_overrides"]


def test_guide_and_openapi_document(server) -> None:
    guide = get_json(server, "/api/guide")
    assert set(guide) >= {"entries", "aliases", "patterns"}
    assert get_json(server, "/api/guide?lang=zh")["lang"] == "zh"
    doc = get_json(server, "/api/openapi.json")
    validate(doc)  # raises on an invalid OpenAPI document
    described = set(doc["paths"])
    api_paths = {r.path for r in server.app.routes if getattr(r, "path", "").startswith("/api/")}
    assert api_paths - {"/api/openapi.json"} <= described, api_paths - described
    assert "/api/runs/{run}/report.html" in described and "/api/runs/{run}/live" in described
    since = next(p for p in doc["paths"]["/api/runs/{run}/series"]["get"]["parameters"] if p["name"] == "since")
    assert "since" in since["name"] and since["in"] == "query"


def test_live_run_updates_incrementally(tmp_path) -> None:
    run = rlcockpit.init(project="live", name="live-run", dir=tmp_path, system_interval=None, health=False,
                         capture_meta=False)
    for s in range(50):
        run.log({"actor/entropy": 1.0 - s / 100}, step=s)
    run.flush()
    with running_server(tmp_path) as srv:
        first = json.loads(http(srv, f"/api/runs/{run.id}/series?keys=actor/entropy")[2])
        assert first["status"] == "running" and first["last_step"] == 49
        for s in range(50, 53):
            run.log({"actor/entropy": 0.5}, step=s)
        run.flush()
        t0 = time.perf_counter()
        status, headers, body = http(srv, f"/api/runs/{run.id}/series?keys=actor/entropy&since={first['last_step']}")
        elapsed = time.perf_counter() - t0
        new = json.loads(body)
        assert new["series"]["actor/entropy"]["steps"] == [50, 51, 52]
        assert float(headers["Server-Timing"].split("dur=")[1]) < 200 and elapsed < 2
    run.finish()


def test_summary_nan_is_served_as_null(tmp_path) -> None:
    store = open_store(tmp_path)
    store.create_run({"id": "r1", "project": "p", "name": "n", "summary": {"actor/kl_loss": float("nan")}})
    client = TestClient(create_app(store), base_url="http://127.0.0.1")
    row: dict[str, Any] = client.get("/api/runs").json()["runs"][0]
    assert row["metrics"]["kl"] is None
    resp = client.get("/api/runs/r1")
    assert resp.status_code == 200 and "NaN" not in resp.text
    assert json.loads(resp.text)["run"]["summary"]["actor/kl_loss"] is None
