"""A run that stopped making progress while its process lives (issue 29): no new step for k x its median step
time is a finding, raised once per stall and again only when it escalates; under ``rlcockpit watch`` a log that
stopped growing becomes a stored finding (which reaches the alert channels like any other)."""

from __future__ import annotations

import threading
import time

from rlcockpit.health.stall import STALL, StallWatch
from rlcockpit.integrations.watch import VerlWatcher
from rlcockpit.store import open_store


def test_a_stall_is_a_warning_then_a_critical_once_each_and_a_new_step_ends_it():
    w = StallWatch(factor=5, critical_factor=20, min_gap_s=0)
    for i in range(6):
        w.step(i, 10.0 * i)  # a step every 10 s
    assert w.check(50.0 + 30) is None  # 3x the usual spacing: a slow step, not a stall
    warn = w.check(50.0 + 60)
    assert warn is not None and warn.severity == "warning" and warn.step == 5
    assert "10 s between its last 5 steps" in warn.title
    assert w.check(50.0 + 90) is None  # the same stall: not raised again
    crit = w.check(50.0 + 250)
    assert crit is not None and crit.severity == "critical" and w.check(50.0 + 400) is None
    w.step(6, 50.0 + 410)
    assert w.check(50.0 + 420) is None


def test_too_few_steps_or_a_short_gap_is_no_stall():
    w = StallWatch(min_gap_s=120)
    for i in range(3):
        w.step(i, float(i))
    assert w.check(1000.0) is None  # three steps: no usual spacing yet
    w.step(3, 3.0)
    assert w.check(60.0) is None and w.check(130.0) is not None  # at least min_gap_s


def test_watch_reports_a_log_that_stopped_growing(tmp_path):
    log = tmp_path / "job.out"
    watcher = VerlWatcher(console_log=log, dir=tmp_path / "s", project="p", name="stalled")
    watcher.stall = StallWatch(factor=5, critical_factor=1000, min_gap_s=0.5)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run_until, args=(stop,), kwargs={"poll_s": 0.05})
    thread.start()
    try:
        for s in range(1, 7):
            with log.open("a") as f:
                f.write(f"step:{s} - critic/score/mean:0.5 - actor/pg_loss:0.01\n")
            time.sleep(0.1)
        time.sleep(1.5)  # the job hangs: its log stops growing
    finally:
        stop.set()
        thread.join()
    watcher.close()
    found = [f for f in open_store(tmp_path / "s").findings(watcher.run.id) if f["detector"] == STALL]
    assert [f["severity"] for f in found] == ["warning"] and found[0]["step"] == 6


def test_steps_read_in_one_poll_are_one_arrival_not_a_zero_step_time():
    """A watcher that catches up on a log reads many steps at once; their spacing is unknown, not 0 s (which
    made the next ordinary pause a critical stall of "102203x the median 0 s")."""
    w = StallWatch(factor=5, critical_factor=20, min_gap_s=0)
    for i in range(10):
        w.step(i, 100.0)  # one poll: ten steps of an existing log
    for i, t in enumerate((110.0, 120.0, 130.0, 140.0)):
        w.step(10 + i, t)
    assert w.check(145.0) is None  # 5 s after a step that comes every 10 s
    found = w.check(140.0 + 60)
    assert found is not None and found.severity == "warning" and "the median 10 s between" in found.title
