"""Crash safety with real child processes and real signals (SIGKILL, SIGTERM, SIGINT)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from tracking_support import spawn

import rlcockpit
from rlcockpit.store import open_store

CHILD = """
import sys, time, rlcockpit
run = rlcockpit.init(project="crash", name="victim", dir=sys.argv[1] if len(sys.argv) > 1 else {dir!r},
                     system_interval=None, capture_meta=False, health=False)
print("id", run.id, flush=True)
step = 0
while True:
    run.log({{"wall": time.time(), "loss": 1.0 / (step + 1)}}, step=step)
    print(step, flush=True)
    step += 1
    time.sleep(0.005)
"""


def _wait_for_steps(store_dir: Path, run_id: str, n: int, timeout: float = 30.0) -> None:
    store = open_store(store_dir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = store.get_run(run_id).get("last_step")
        if last is not None and last >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"child did not reach step {n}")


def _start_child(store_dir: Path) -> tuple[subprocess.Popen, str]:
    proc = spawn(CHILD.format(dir=str(store_dir)))
    line = proc.stdout.readline()
    assert line.startswith("id "), proc.stderr.read()
    return proc, line.split()[1]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["id", "auto"])
def test_sigkill_loses_at_most_a_second_then_resume_continues(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    proc, run_id = _start_child(store_dir)
    try:
        _wait_for_steps(store_dir, run_id, 200)
        assert rlcockpit.Api(store_dir).run(run_id).status == "running"
        t_kill = time.time()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    stored = rlcockpit.Api(store_dir).run(run_id)
    df = stored.history(["wall", "loss"])
    steps = df.index.to_numpy()
    assert np.array_equal(steps, np.arange(len(steps)))  # no holes: what is stored is a prefix
    assert df["wall"].max() >= t_kill - 1.5, f"lost {t_kill - df['wall'].max():.2f}s of data"

    # the heartbeat goes stale → crashed (threshold made small for the test)
    monkeypatch.setenv("RLCOCKPIT_STALE_S", "2")
    deadline = time.monotonic() + 15
    while rlcockpit.Api(store_dir).run(run_id).status != "crashed":
        assert time.monotonic() < deadline, "run never showed as crashed"
        time.sleep(0.25)

    last = int(steps[-1])
    kw = {"resume": run_id} if how == "id" else {"resume": "auto", "name": "victim"}
    run = rlcockpit.init(project="crash", dir=store_dir, system_interval=None, capture_meta=False, health=False, **kw)
    assert run.id == run_id and run.resumed and run.step == last
    run.log({"loss": -1.0})
    run.finish()
    after = rlcockpit.Api(store_dir).run(run_id)
    assert after.status == "finished"
    assert after.history(["loss"]).index[-1] == last + 1
    assert len(rlcockpit.Api(store_dir).runs("crash")) == 1


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_flush_and_mark_failed(store_dir: Path, sig: signal.Signals) -> None:
    proc, run_id = _start_child(store_dir)
    try:
        _wait_for_steps(store_dir, run_id, 50)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    printed = [int(x) for x in out.split() if x.isdigit()]
    stored = rlcockpit.Api(store_dir).run(run_id)
    assert stored.status == "failed"
    assert sig.name in stored.meta["end_reason"]
    assert stored.last_step >= printed[-1]  # everything logged before the signal is on disk
    assert len(stored.history(["loss"])) == stored.last_step + 1
    if sig == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM  # the default action still happens after the flush
    else:
        assert "KeyboardInterrupt" in err
