"""Alerts get out of dying processes (real subprocesses, real signals); the watchdog covers SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from rlcockpit.store import open_store

CHILD = textwrap.dedent("""
    import sys, time
    import rlcockpit
    url, store_dir, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    run = rlcockpit.init(project="dying", name="child-" + mode, dir=store_dir, system_interval=None,
                         capture_meta=False, health=False,
                         alerts={"channels": [{"type": "webhook", "url": url}], "use_env": False,
                                 "stall_timeout_s": 0, "on_finish": False})
    run.log({"loss": 1.0}, step=0)
    run.log({"loss": 0.5}, step=1)
    print("ready", flush=True)
    if mode == "raise":
        raise RuntimeError("CUDA error: device-side assert triggered")
    while True:
        time.sleep(0.05)
""")


def _child(tmp_path, url, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, str(script), f"{url}/final", str(tmp_path / "store"), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read()
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("mode,sig,kind,needle", [
    ("raise", None, "failed", "RuntimeError: CUDA error"),
    ("wait", signal.SIGTERM, "killed", "killed by SIGTERM"),
    ("wait", signal.SIGINT, "killed", "killed by SIGINT"),
])
def test_final_alert_from_dying_process(tmp_path, http_server, mode, sig, kind, needle):
    url, rec = http_server
    proc = _child(tmp_path, url, mode)
    if sig is not None:
        proc.send_signal(sig)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    (body,) = rec.wait_for(1, timeout=5)
    body = body["json"]
    assert body["kind"] == kind and body["level"] == "critical"
    assert needle in body["title"] + " " + body["text"] and body["step"] == 1
    store = open_store(tmp_path / "store")
    run = store.list_runs("dying")[0]
    assert run["stored_status"] == "failed"
    delivered = [e["payload"] for e in store.events(run["id"], "alert")]
    assert [d["status"] for d in delivered] == ["sent"]  # the delivery log reached the store before exit


@pytest.mark.slow
def test_watchdog_reports_sigkilled_run(tmp_path, http_server):
    url, rec = http_server
    proc = _child(tmp_path, f"{url}/child-channel", "wait")
    time.sleep(1.5)  # the run makes its data durable every second; SIGKILL loses at most that
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    (tmp_path / "alerts.yaml").write_text(yaml.safe_dump(
        {"channels": [{"type": "webhook", "url": f"{url}/watchdog"}], "use_env": False}))
    cmd = [sys.executable, "-m", "rlcockpit.cli", "watchdog", "--dir", str(tmp_path / "store"),
           "--config", str(tmp_path / "alerts.yaml"), "--stall-timeout", "1", "--interval", "0.3"]
    t0 = time.monotonic()
    watcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        got = rec.wait_for(1, timeout=20)
        elapsed = time.monotonic() - t0
        time.sleep(1.0)  # further scans must not alert again
        assert len(rec.requests) == 1
    finally:
        watcher.send_signal(signal.SIGINT)
        out = watcher.communicate(timeout=10)[0]
    assert got and got[0]["path"] == "/watchdog"
    body = got[0]["json"]
    assert body["kind"] == "crashed" and body["level"] == "critical" and body["step"] == 1
    assert elapsed < 15, f"watchdog took {elapsed:.1f}s"
    assert "crashed" in out
    store = open_store(tmp_path / "store")
    run = store.list_runs("dying")[0]
    assert run["stored_status"] == "crashed" and "watchdog" in run["meta"]["end_reason"]
    assert [e["payload"]["status"] for e in store.events(run["id"], "alert")] == ["sent"]
    # --once afterwards: nothing new
    once = subprocess.run([*cmd[:-4], "--once"], capture_output=True, text=True, timeout=30)
    assert once.returncode == 0 and "no crashed runs" in once.stdout
