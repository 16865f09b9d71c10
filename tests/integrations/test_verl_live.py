"""The real verl package (in .venv-verl) writing its file log while ``rlcockpit watch`` follows it live,
and verl's Tracking with the in-process ``rlcockpit`` backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from integrations_support import REPO, require_findings

from rlcockpit.store import open_store

pytestmark = pytest.mark.slow
JOB = REPO / "tests" / "integrations" / "verl_job.py"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update({"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO / "src"), "RAY_USAGE_STATS_ENABLED": "0"})
    env.update(extra)
    return env


def _wait(predicate, timeout: float, what: str, procs=()):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                out = p.stdout.read() if p.stdout else ""
                raise AssertionError(f"{what}: process {p.args[:3]} exited {p.returncode}:\n{out}")
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def test_watch_follows_real_verl_file_logger_and_alerts_while_job_runs(tmp_path, verl_python, webhook):
    log, rollouts, store_dir, hold = tmp_path / "verl.jsonl", tmp_path / "rollouts", tmp_path / "store", tmp_path / "go"
    (tmp_path / "alerts.yaml").write_text(json.dumps(
        {"alerts": {"channels": [{"type": "webhook", "url": webhook.url}], "use_env": False}}))
    (tmp_path / "config.yaml").write_text(
        "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-06\n    entropy_coeff: 0.0\n"
        "algorithm:\n  kl_ctrl:\n    kl_coef: 0.001\ntrainer:\n  experiment_name: ${algorithm.kl_ctrl.kl_coef}\n")
    watch = subprocess.Popen(
        [sys.executable, "-m", "rlcockpit.cli", "watch", "--verl-file", str(log), "--rollout-dir", str(rollouts),
         "--config", str(tmp_path / "config.yaml"), "--project", "verl-live", "--name", "job", "--dir", str(store_dir),
         "--alerts-config", str(tmp_path / "alerts.yaml"), "--poll", "0.2"],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job = None
    try:
        _wait(lambda: (store_dir / "rlcockpit.db").exists() and open_store(store_dir).list_runs(), 60,
              "the watcher to create its run", [watch])
        job = subprocess.Popen(
            [str(verl_python), str(JOB), "--steps", "60", "--cliff", "40", "--rollout-dir", str(rollouts),
             "--hold", str(hold)],
            env=_env(VERL_FILE_LOGGER_PATH=str(log)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        store = open_store(store_dir)
        run_id = store.list_runs()[0]["id"]

        _wait(lambda: len(store.series(run_id, "critic/score/mean")[0]) == 60, 120, "all 60 steps", [watch, job])
        _wait(lambda: any(f.get("detector") in ("reward_cliff", "kl_spike") for f in store.findings(run_id)),
              30, "reward-cliff / KL-spike findings", [watch])
        _wait(lambda: len(webhook.received) > 0, 30, "the webhook alert", [watch])
        assert job.poll() is None, "findings and the alert must arrive while the job is still running"
        hold.touch()  # let the job finish
        assert job.wait(60) == 0, job.stdout.read()
        time.sleep(0.6)
        watch.send_signal(signal.SIGTERM)
        out, _ = watch.communicate(timeout=60)
        assert watch.returncode == 0, out
    finally:
        for p in (watch, job):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()

    store = open_store(store_dir)
    run = store.get_run(run_id)
    steps = store.series(run_id, "critic/score/mean")[0]
    assert list(steps) == list(range(1, 61))
    assert store.sample_steps(run_id) == list(range(1, 61))
    assert store.samples(run_id, step=45)[0]["gts"] == "45"
    assert run["config"]["algorithm"]["kl_ctrl"]["kl_coef"] == 0.001
    assert run["config"]["trainer"]["experiment_name"] == 0.001  # Hydra interpolation resolved
    assert run["config"]["framework"] == "verl" and run["meta"]["framework"] == "verl"
    assert run["stored_status"] == "finished" and "SIGTERM" in run["meta"]["end_reason"]
    findings = store.findings(run_id)
    require_findings(findings, "reward_cliff", "kl_spike")
    texts = json.dumps(webhook.received)
    assert webhook.url not in json.dumps(run["config"])
    assert "KL" in texts or "Reward" in texts or "reward" in texts


def test_verl_tracking_with_in_process_rlcockpit_backend(tmp_path, verl_python):
    store_dir = tmp_path / "store"
    proc = subprocess.run(
        [str(verl_python), str(JOB), "--steps", "45", "--cliff", "35", "--delay", "0", "--backend", "rlcockpit",
         "--project", "verl-inproc", "--name", "grpo-run"],
        env=_env(RLCOCKPIT_DIR=str(store_dir)), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = open_store(store_dir)
    (run,) = store.list_runs("verl-inproc")
    assert run["name"] == "grpo-run" and run["stored_status"] == "finished"
    assert list(store.series(run["id"], "actor/kl_loss")[0]) == list(range(1, 46))
    # verl's config, with its secrets redacted and the verl marker
    assert run["config"]["actor_rollout_ref"]["actor"]["optim"]["lr"] == 1e-6
    assert run["config"]["trainer"]["wandb_api_key"] == "***" and run["config"]["framework"] == "verl"
    # the val/generations path (ValidationGenerationsLogger) stored samples
    (val,) = store.samples(run["id"], step=45)
    assert val["prompt"] == "val question" and val["reward"] == 1.0 and val["source"] == "val/generations"
    require_findings(store.findings(run["id"]), "reward_cliff", "kl_spike")


def test_verl_plugin_module_registers_backend_via_verl_external_modules(tmp_path, verl_python):
    """verl imports VERL_USE_EXTERNAL_MODULES while `import verl` runs: the backend must be there after."""
    code = ("from verl.utils.tracking import Tracking; assert 'rlcockpit' in Tracking.supported_backend; "
            "t = Tracking('p', 'e', default_backend=['rlcockpit']); t.log({'critic/score/mean': 0.5}, step=1); "
            "t.finish(); print('ok')")
    proc = subprocess.run([str(verl_python), "-c", code], capture_output=True, text=True, timeout=300,
                          env=_env(RLCOCKPIT_DIR=str(tmp_path / "s"),
                                   VERL_USE_EXTERNAL_MODULES="rlcockpit.integrations.verl_plugin"))
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr
    (run,) = open_store(tmp_path / "s").list_runs("p")
    assert run["summary"]["critic/score/mean"] == 0.5
