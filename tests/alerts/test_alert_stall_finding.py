"""A run of ``rlcockpit.init`` that stops making progress while its process lives (issue 29): its health monitor,
ticked by the observer thread on the wall clock, stores a ``run_stalled`` finding (no new step for k x the run's
own step time) and the alert channels get it — once per stall, again only when it escalates."""

from __future__ import annotations

import time

import rlcockpit
from rlcockpit.health.stall import STALL, StallWatch
from rlcockpit.store import open_store


def _wait(pred, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _stall_findings(tmp_path, run_id):
    return [f for f in open_store(tmp_path / "store").findings(run_id) if f["detector"] == STALL]


def test_a_hung_init_run_gets_a_stall_finding_and_one_alert(tmp_path, http_server):
    url, rec = http_server
    run = rlcockpit.init(project="p", name="hangs", dir=tmp_path / "store", system_interval=None,
                         capture_meta=False, print_findings=False,
                         health={"stall": {"min_gap_s": 2.0, "factor": 5, "critical_factor": 1000}},
                         alerts={"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                                 "stall_timeout_s": 0, "on_finish": False})
    try:
        for step in range(8):
            run.log({"loss": 1.0 / (step + 1)}, step=step)
            time.sleep(0.05)
        assert _wait(lambda: _stall_findings(tmp_path, run.id), timeout=20), "no stall finding stored"
        time.sleep(3.0)  # still hung: the same stall is not raised again
        found = _stall_findings(tmp_path, run.id)
        assert [(f["severity"], f["step"]) for f in found] == [("warning", 7)]
        assert "No new step" in found[0]["title"] and "after step 7" in found[0]["title"]
        rec.wait_for(1, timeout=10)
        assert [b["title"] for b in rec.bodies()] == [found[0]["title"]]
    finally:
        run.finish()


def test_a_run_that_keeps_logging_or_turned_the_watch_off_has_no_stall(tmp_path):
    busy = rlcockpit.init(project="p", name="busy", dir=tmp_path / "store", system_interval=None,
                          capture_meta=False, print_findings=False, health={"stall": {"min_gap_s": 2.0}})
    for step in range(60):
        busy.log({"loss": 1.0}, step=step)
        time.sleep(0.05)
    busy.finish()
    off = rlcockpit.init(project="p", name="off", dir=tmp_path / "store", system_interval=None,
                         capture_meta=False, print_findings=False, health={"stall": False})
    for step in range(6):
        off.log({"loss": 1.0}, step=step)
    time.sleep(3.5)
    off.finish()
    assert _stall_findings(tmp_path, busy.id) == [] and _stall_findings(tmp_path, off.id) == []


def test_a_pause_the_run_came_back_from_is_its_rhythm_not_a_stall():
    """A run that validates for 60 s every 10 steps of 1 s: the second validation is no stall."""
    w = StallWatch(factor=5, critical_factor=20, min_gap_s=0)
    t = 0.0
    for step in range(10):
        w.step(step, t)
        t += 1.0
    t += 59.0  # the first validation: a stall as far as anyone knew (5x the usual second)
    assert w.check(t - 50.0) is not None
    for step in range(10, 20):
        w.step(step, t)
        t += 1.0
    assert w.check(t - 1.0 + 60.0) is None  # the second validation, as long as the first
    crit = w.check(t - 1.0 + 95.0)  # well past 1.5x the longest pause: a stall again
    assert crit is not None and crit.severity == "critical"


def test_stall_settings_are_checked():
    assert StallWatch.from_settings(False) is None
    assert StallWatch.from_settings({"min_gap_s": 3}).min_gap_s == 3.0
    try:
        StallWatch.from_settings({"min_gap": 3})
    except TypeError as exc:
        assert "min_gap" in str(exc) and "min_gap_s" in str(exc)
    else:
        raise AssertionError("an unknown stall setting was accepted")
