"""Loggers that hang or raise, and a wall clock that jumps: the store stays complete and right, every
loss is recorded against the logger that had it, and the status says what is true."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store.batch import merge_ranges
from rlcockpit.tracking.sinks import Sink

pytestmark = pytest.mark.faults


class HangingSink(Sink):
    """Hangs forever in the write that carries step ``HANG_AT`` (a tracker whose server stopped answering).

    Chosen by step, not by call count: a writer slowed by a loaded machine hands a sink fewer, larger batches,
    and a "hang in the third call" then never came (2000 steps in two calls: nothing lost, and the test failed)."""

    name = "hanging"
    HANG_AT = 500

    def __init__(self) -> None:
        self.forever = threading.Event()

    def log_metrics(self, rows) -> None:  # noqa: ANN001
        if any(r[0] >= self.HANG_AT for r in rows):
            self.forever.wait()


class FlakySink(Sink):
    """Raises on every third write, on events, and when closed."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0
        self.got: list[int] = []

    def log_metrics(self, rows) -> None:  # noqa: ANN001
        self.calls += 1
        if self.calls % 3 == 0:
            raise ConnectionError("server said 502")
        self.got.extend(r[0] for r in rows)

    def log_event(self, kind, payload, step) -> None:  # noqa: ANN001
        raise ValueError("events unsupported")

    def close(self, status, exit_code) -> None:  # noqa: ANN001
        raise RuntimeError("close failed")


def _lost(stored, sink: str, what: str | None = None) -> list[list[int]]:  # noqa: ANN001
    return merge_ranges([r for e in stored.events("data_lost") if e["payload"]["sink"] == sink
                         and what in (None, e["payload"]["what"]) for r in e["payload"]["ranges"]])


def test_a_logger_that_hangs_forever_costs_nothing_but_its_own_data(tmp_path: Path) -> None:
    hang = HangingSink()
    run = rlcockpit.init(project="p", dir=tmp_path / "s", system_interval=None, capture_meta=False, health=False,
                         sinks=[hang])
    for step in range(2000):
        run.log({"x": float(step)}, step=step)
        if step % 100 == 0:
            time.sleep(0.02)
    t0 = time.monotonic()
    run.finish(timeout=5)
    assert time.monotonic() - t0 < 15, "finish() waited for the hung logger"
    stored = rlcockpit.Api(tmp_path / "s").run(run.id)
    assert stored.status == "finished"
    assert stored.series("x")[0].tolist() == list(range(2000))
    lost = _lost(stored, "hanging")
    # everything from the hang on is recorded as lost for that logger: at most the batch before step 500 got through
    assert lost and lost[0][0] <= HangingSink.HANG_AT and lost[-1][1] == 1999
    assert _lost(stored, "store") == []


def test_a_logger_that_raises_loses_exactly_the_parts_it_refused(tmp_path: Path, caplog) -> None:
    flaky = FlakySink()
    run = rlcockpit.init(project="p", dir=tmp_path / "s", system_interval=None, capture_meta=False, health=False,
                         sinks=[flaky])
    for step in range(40):
        run.log({"x": float(step)}, step=step)
        run.flush()  # one batch per step
    run.log_event("note", {"a": 1})
    run.finish()
    stored = rlcockpit.Api(tmp_path / "s").run(run.id)
    assert stored.status == "finished" and stored.series("x")[0].tolist() == list(range(40))
    refused = sorted(set(range(40)) - set(flaky.got))
    lost = [s for lo, hi in _lost(stored, "flaky", "metrics") for s in range(lo, hi + 1)]
    assert refused and lost == refused  # exactly the refused steps, each recorded against the logger
    assert _lost(stored, "flaky", "events") == [[39, 39]]
    assert any("close failed" in r.getMessage() for r in caplog.records)


CLOCK_CHILD = """
import sys, time
real = time.time
offset = [0.0]
time.time = lambda: real() + offset[0]  # the wall clock the process sees (NTP step, VM resume)
import rlcockpit
run = rlcockpit.init(project="clock", dir=sys.argv[1], system_interval=None, capture_meta=False, health=False)
print("id", run.id, flush=True)
for step in range(600):
    if step == 200:
        offset[0] = -3600.0  # one hour back
    if step == 400:
        offset[0] = +7200.0  # two hours forward
    run.log({"x": float(step)}, step=step)
    if step == 300:
        print("jumped", flush=True)
        sys.stdin.readline()  # the parent looks at the run while the clock is an hour behind
    time.sleep(0.002)
run.finish()
print("done", flush=True)
"""


@pytest.mark.slow
def test_a_wall_clock_jump_changes_no_data_and_no_status(tmp_path: Path, monkeypatch) -> None:
    import subprocess

    from faults_support import PYTHON, child_env

    store = tmp_path / "s"
    proc = subprocess.Popen([PYTHON, "-u", "-c", CLOCK_CHILD, str(store)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        rid = proc.stdout.readline().split()[1]
        assert proc.stdout.readline().strip() == "jumped"
        time.sleep(6)  # a heartbeat is written with the clock an hour behind
        monkeypatch.setenv("RLCOCKPIT_STALE_S", "60")
        row = rlcockpit.Api(store).run(rid)
        assert time.time() - row.to_dict()["heartbeat_at"] > 3000  # by the wall clock it looks dead...
        assert row.status == "running"  # ...but the monotonic heartbeat on this host says it is alive
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
        assert "done" in out, err
    finally:
        if proc.poll() is None:
            proc.kill()
    stored = rlcockpit.Api(store).run(rid)
    assert stored.status == "finished" and stored.series("x")[0].tolist() == list(range(600))
    ts = stored.series("x")[2]
    assert ts[250] < ts[150] < ts[450]  # timestamps are what the clock said; order comes from steps
