"""Diagnosis of a synthetic collapse stored in a real SQLite store: root-cause chain, HTML report, CLI."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from rlcockpit.health import diagnose_run, render_html_report
from rlcockpit.health.synthetic import make_trace
from rlcockpit.store import open_store


def store_trace(store, kind: str, seed: int = 0, run_id: str = "run1", name: str = "grpo-1", config=None):
    trace = make_trace(kind, seed, steps=160)
    store.create_run({"id": run_id, "name": name, "project": "arith", "config": config or trace.config})
    keys = sorted({k for _s, m in trace.metrics for k in m})
    points = {}
    for key in keys:
        steps = np.array([s for s, m in trace.metrics if key in m], dtype=np.int64)
        vals = np.array([m[key] for s, m in trace.metrics if key in m], dtype=np.float64)
        points[key] = (steps, vals, np.full(len(steps), time.time()))
    store.append_points(run_id, points)
    for step, rows in trace.samples.items():
        if kind == "collapse" and step > trace.onset:
            rows = [dict(r, response=r["response"] + "<script>alert('x')</script>") for r in rows]
        store.append_samples(run_id, step, rows)
    return trace


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path)
    yield s
    s.close()


def test_collapse_chain_links_reward_kl_samples_and_config(store):
    trace = store_trace(store, "collapse")
    diag = diagnose_run(store, "grpo-1")  # by name
    assert diag["run"]["id"] == "run1" and diag["run"]["project"] == "arith"
    rc = diag["root_cause"]
    assert rc["story"] == "collapse" and abs(rc["step"] - trace.onset) <= 3
    roles = [link["role"] for link in rc["chain"]]
    # the chain starts with the first failure in time (here the reward cliff), then what followed it
    assert roles[0] == "root" and "mechanism" in roles and "samples" in roles and "config" in roles
    assert rc["chain"][0]["detector"] == "reward_cliff" and rc["root"]["detector"] == "reward_cliff"
    starts = [link["step_start"] for link in rc["chain"] if link["role"] != "config"]
    assert starts == sorted(starts)
    assert any(link["detector"] == "kl_spike" for link in rc["chain"])
    assert any("kl_coef=0.001 is far below" in link["text"] for link in rc["chain"])
    assert "too weak" in rc["explanation"]
    flat = [o for a in rc["actions"] for o in a["overrides"]]
    assert "algorithm.kl_ctrl.kl_coef=0.02" in flat and "algorithm.kl_ctrl.type=adaptive" in flat
    ids = {f["id"] for f in diag["findings"]}
    assert {link["finding_id"] for link in rc["chain"] if link["finding_id"]} <= ids
    json.dumps(diag)  # JSON-safe (no NaN objects)


def test_verl_config_gets_verl_override_paths(store):
    cfg = {"algorithm": {"kl_ctrl": {"kl_coef": 0.001}, "use_kl_in_reward": True},
           "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}}}}
    store_trace(store, "collapse", config=cfg)
    flat = [o for a in diagnose_run(store, "run1")["root_cause"]["actions"] for o in a["overrides"]]
    assert "actor_rollout_ref.actor.optim.lr=1e-07" in flat  # a collapse cuts the lr 10x


def test_healthy_run_has_no_root_cause(store):
    store_trace(store, "healthy_grpo")
    diag = diagnose_run(store, "run1")
    assert diag["root_cause"] is None and diag["counts"]["critical"] == 0


def test_live_and_replay_agree(store):
    """Findings raised live (monitor fed while logging) equal those of the post-mortem replay."""
    from rlcockpit.health import HealthMonitor

    trace = store_trace(store, "reward_hacking")
    live = HealthMonitor(run_config=trace.config)
    for step, metrics in trace.metrics:
        if step in trace.samples:
            live.observe_samples(step, trace.samples[step])
        live.observe(step, metrics)
    live.close()
    replayed = diagnose_run(store, "run1")["findings"]
    assert [(f.detector, f.severity, f.step) for f in live.findings] == [
        (f["detector"], f["severity"], f["step"]) for f in replayed]


def test_html_report_is_self_contained_and_escapes_model_output(store):
    store_trace(store, "collapse")
    diag = diagnose_run(store, "run1")
    page = render_html_report(diag, store, "run1")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<svg" in page and "stroke-dasharray" in page  # plots with the event marked
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_cli_diagnose_text_json_and_html(store, tmp_path, capsys):
    from rlcockpit.cli import main

    store_trace(store, "collapse")
    html_file = tmp_path / "report.html"
    assert main(["diagnose", "grpo-1", "--dir", str(tmp_path), "--html", str(html_file)]) == 0
    out = capsys.readouterr().out
    assert "ROOT CAUSE: Policy collapse" in out and "algorithm.kl_ctrl.kl_coef=0.02" in out
    assert html_file.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["diagnose", "run1", "--dir", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["root_cause"]["story"] == "collapse"
    assert main(["diagnose", "nope", "--dir", str(tmp_path)]) == 2


def test_html_report_names_each_samples_step_and_rounds_its_reward():
    link = {"role": "samples", "text": "degenerate samples", "step": 120, "metric": None,
            "samples": [{"idx": 7, "reward": 0.6000000238418579, "response": "aaaa"}]}
    diag = {"run": {"id": "r1", "name": "n"}, "findings": [],
            "root_cause": {"title": "t", "chain": [link], "explanation": "e", "actions": [], "step": 120}}
    page = render_html_report(diag)
    assert "step 120 · sample #7 · reward 0.6\n" in page, page[page.find("<pre>"):][:200]
    assert "0.6000000238" not in page
