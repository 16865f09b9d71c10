"""VerlWatcher in-process: file logger and console log into a stored run, restart without duplicates or
gaps, verl restarts (truncation), rollout dumps as samples, config capture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from integrations_support import failure_rows, require_findings

from rlcockpit.integrations.watch import STATE_KEY, VerlWatcher
from rlcockpit.store import open_store


def _write(path, rows, mode="a"):
    with open(path, mode) as f:
        for step, data in rows:
            f.write(json.dumps({"step": step, "data": data}) + "\n")


def _steps(store, run_id, key="critic/score/mean"):
    return [int(s) for s in store.series(run_id, key)[0]]


def test_watcher_restart_resumes_same_run_without_duplicates_or_gaps(tmp_path):
    log, store_dir = tmp_path / "job.jsonl", tmp_path / "store"
    rows = list(failure_rows(60, cliff=40))
    cfg = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "entropy_coeff": 0.0}},
           "algorithm": {"kl_ctrl": {"kl_coef": 0.001}}}
    w = VerlWatcher(file_log=log, dir=store_dir, project="p", config=cfg)
    assert w.poll_once() == 0  # the job has not created its log yet
    _write(log, rows[:20])
    with open(log, "a") as f:  # a half-written line at the end
        f.write(json.dumps({"step": 21, "data": rows[20][1]})[:30])
    assert w.poll_once() == 20
    w.close("test stop")
    run_id = w.run.id
    store = open_store(store_dir)
    state = store.get_run(run_id)["meta"][STATE_KEY]
    assert state["follow"]["line"] == 20 and state["source"] == str(log.resolve())

    # finish the half line, add more, start a new watcher: same run, continues at step 21
    with open(log, "a") as f:
        f.write(json.dumps({"step": 21, "data": rows[20][1]})[30:] + "\n")
    _write(log, rows[21:45])
    w2 = VerlWatcher(file_log=log, dir=store_dir, project="p")
    assert w2.run.id == run_id and w2.run.resumed
    assert w2.poll_once() == 25

    # verl restarts from its step-30 checkpoint: FileLogger reopens the file with "wb" (truncation)
    _write(log, rows[29:60], mode="w")
    w2.poll_once()
    w2.close()
    assert _steps(store, run_id) == list(range(1, 61))  # each step exactly once, none lost
    run = store.get_run(run_id)
    assert run["config"]["actor_rollout_ref"]["actor"]["optim"]["lr"] == 1e-6  # config kept across resume
    assert run["config"]["framework"] == "verl" and run["meta"]["framework"] == "verl"
    assert run["meta"][STATE_KEY]["skip_through"] == 45
    findings = store.findings(run_id)
    require_findings(findings, "reward_cliff", "kl_spike")
    fired = [f for f in findings if f.get("detector") in ("reward_cliff", "kl_spike")]
    assert all(f["step"] >= 40 for f in fired)  # not before the cliff
    overrides = [o for f in fired for a in f.get("actions", []) for o in a.get("overrides", [])]
    assert any(o.startswith("actor_rollout_ref.") or o.startswith("algorithm.") for o in overrides), overrides


def test_console_log_and_rollout_dumps(tmp_path):
    log, rollouts = tmp_path / "console.log", tmp_path / "rollouts"
    rollouts.mkdir()
    with open(log, "w") as f:
        f.write("INFO some ray banner\n")
        for step, data in failure_rows(5):
            f.write(f"(TaskRunner pid=7) step:{step} - " + " - ".join(f"{k}:{v}" for k, v in data.items()) + "\n")
            (rollouts / f"{step}.jsonl").write_text(json.dumps(
                {"input": f"q{step}", "output": "a", "gts": "a", "score": 1.0, "step": step, "acc": True}) + "\n")
    (rollouts / "6.jsonl").write_text('{"input": "q6", "output": "cut')  # being written: not taken yet
    w = VerlWatcher(console_log=log, rollout_dir=rollouts, dir=tmp_path / "s", project="p", name="console-run")
    w.poll_once()
    w.poll_once()  # dumps are taken once they stopped growing between two polls
    w.close()
    store = open_store(tmp_path / "s")
    assert _steps(store, w.run.id) == [1, 2, 3, 4, 5]
    assert store.sample_steps(w.run.id) == [1, 2, 3, 4, 5]
    row = store.samples(w.run.id, step=3)[0]
    assert row["prompt"] == "q3" and row["reward"] == 1.0 and row["gts"] == "a" and row["acc"] is True
    vals = store.series(w.run.id, "actor/kl_loss")[1]
    assert np.all(np.isfinite(vals))


@pytest.mark.slow
def test_watch_cli_killed_hard_and_restarted_loses_and_repeats_nothing(tmp_path):
    """SIGKILL the watcher mid-stream (no chance to save its position), restart it: every step once."""
    log, store_dir = tmp_path / "job.jsonl", tmp_path / "store"
    rows = list(failure_rows(80, cliff=70))
    env = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "..", "src")}
    cmd = [sys.executable, "-m", "rlcockpit.cli", "watch", "--verl-file", str(log), "--dir", str(store_dir),
           "--project", "p", "--poll", "0.05"]
    watch = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for i, (step, data) in enumerate(rows[:50]):
            _write(log, [(step, data)])
            time.sleep(0.01)
            if i == 10:
                deadline = time.time() + 30
                while time.time() < deadline and not (store_dir / "rlcockpit.db").exists():
                    time.sleep(0.1)
        time.sleep(0.3)
        watch.send_signal(signal.SIGKILL)
        watch.wait(10)
    finally:
        if watch.poll() is None:
            watch.kill()
    _write(log, rows[50:])
    out = subprocess.run(cmd + ["--idle-exit", "1.5"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "resumed run" in out.stdout
    store = open_store(store_dir)
    (run,) = store.list_runs("p")
    steps = _steps(store, run["id"])
    assert steps == list(range(1, 81)), steps
    assert "no new data" in run["meta"]["end_reason"]
