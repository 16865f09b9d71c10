"""Alerts wired into a real run: triggers, dedup/cooldown/rate limit, stall, delivery log, no blocking."""

from __future__ import annotations

import time

import pytest

import rlcockpit
from rlcockpit.alerts import get_manager
from rlcockpit.health.findings import Action, Finding
from rlcockpit.store import open_store


def _finding(title="policy entropy collapsed", severity="critical", step=3, detector="entropy_collapse"):
    return Finding(detector=detector, severity=severity, step=step, title=title, summary="entropy fell",
                   actions=[Action(title="raise entropy bonus", overrides=["actor.entropy_coeff=0.001"])])


def _init(tmp_path, alerts, **kw):
    return rlcockpit.init(project="alerts", name=kw.pop("name", "r1"), dir=tmp_path / "store", alerts=alerts,
                          system_interval=None, capture_meta=False, health=False, **kw)


def _wait(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_finding_manual_and_finish_reach_the_channel(tmp_path, http_server):
    url, rec = http_server
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "dashboard_url": "http://127.0.0.1:8765", "stall_timeout_s": 0})
    run.log({"x": 1.0}, step=3)
    run.log_finding(_finding())
    run.alert("checkpoint saved", "step 3", level="info")
    rec.wait_for(2)
    run.finish()
    bodies = rec.bodies()
    by_kind = {b["kind"]: b for b in bodies}
    assert set(by_kind) == {"finding", "manual", "finished"}
    f = by_kind["finding"]
    assert f["title"] == "policy entropy collapsed" and f["step"] == 3 and f["run_id"] == run.id
    assert f["overrides"] == ["actor.entropy_coeff=0.001"] and f["link"] == f"http://127.0.0.1:8765/#/run/{run.id}"
    assert by_kind["manual"]["title"] == "checkpoint saved" and by_kind["manual"]["level"] == "info"
    assert by_kind["finished"]["level"] == "info"
    # the delivery log is stored with the run
    events = [e["payload"] for e in open_store(tmp_path / "store").events(run.id, "alert") if "status" in e["payload"]]
    assert sorted(e["kind"] for e in events) == ["finding", "finished", "manual"]
    assert all(e["status"] == "sent" and e["attempts"] == 1 and e["channel"] == "webhook" for e in events)


def test_min_severity_dedup_cooldown(tmp_path, http_server):
    url, rec = http_server
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "min_severity": "warning", "cooldown_s": 60, "stall_timeout_s": 0, "on_finish": False})
    run.log_finding(_finding(severity="info", title="just so you know"))
    run.log_finding(_finding(step=3))
    run.log_finding(_finding(step=9))  # same detector + title within the cooldown: suppressed
    run.log_finding(_finding(step=9, title="reward hacking suspected", detector="reward_hacking"))
    run.flush()
    mgr = get_manager(run)
    assert mgr.flush(5)
    run.finish()
    titles = [b["title"] for b in rec.bodies()]
    assert titles == ["policy entropy collapsed", "reward hacking suspected"]
    assert mgr.suppressed == 1


def test_global_rate_limit_is_logged(tmp_path, http_server):
    url, rec = http_server
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "rate_limit": 2, "rate_window_s": 60, "stall_timeout_s": 0, "on_finish": False})
    for i in range(4):
        run.alert(f"manual {i}")
    mgr = get_manager(run)
    assert mgr.flush(5)
    run.finish()
    assert [b["title"] for b in rec.bodies()] == ["manual 0", "manual 1"]
    suppressed = [d for d in mgr.deliveries if d["status"] == "suppressed"]
    assert len(suppressed) == 2 and "rate limit" in suppressed[0]["reason"]


def test_stall_watchdog_alerts_once_and_rearms(tmp_path, http_server):
    url, rec = http_server
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "stall_timeout_s": 0.6, "on_finish": False})
    run.log({"x": 1.0}, step=0)
    rec.wait_for(1, timeout=5)
    time.sleep(0.8)  # still stalled: no second alert for the same stall
    assert len(rec.requests) == 1
    stalled = rec.bodies()[0]
    assert stalled["kind"] == "stalled" and stalled["title"].startswith("run stalled") and stalled["step"] == 0
    run.log({"x": 2.0}, step=1)  # progress re-arms the watchdog
    rec.wait_for(2, timeout=5)
    run.finish()
    assert [b["kind"] for b in rec.bodies()] == ["stalled", "stalled"]


def test_dead_channel_never_slows_training(tmp_path, http_server):
    """A hanging channel and a refusing one: log() and notify() stay fast; the good channel still delivers."""
    url, rec = http_server
    rec.script, rec.hang_s = ["hang"] * 3, 1.0
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{s.getsockname()[1]}/h"
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/hang", "name": "hanging"},
                                        {"type": "webhook", "url": refused, "name": "refusing"},
                                        {"type": "console", "stream": "stdout"}],
                           "use_env": False, "timeout_s": 0.3, "max_retries": 2, "backoff_s": 0.05,
                           "stall_timeout_s": 0, "on_finish": False, "rate_limit": 0, "cooldown_s": 0})
    worst = 0.0
    for step in range(200):
        t0 = time.perf_counter()
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        if step % 20 == 0:
            run.log_finding(_finding(step=step, title=f"finding {step}"))
            run.alert(f"manual {step}")
        worst = max(worst, time.perf_counter() - t0)
    assert worst < 0.05, f"a training step was held up for {worst:.3f}s by alerts"
    mgr = get_manager(run)
    assert _wait(lambda: len([d for d in mgr.deliveries if d["channel"] == "console"]) == 20)
    run.finish()
    refusing = [d for d in mgr.deliveries if d["channel"] == "refusing"]
    assert refusing and all(d["status"] == "failed" and "connection failed" in d["reason"] for d in refusing)
    hanging = [d for d in mgr.deliveries if d["channel"] == "hanging"]
    assert hanging and "timed out" in hanging[0]["reason"]


def test_finish_flush_is_bounded_when_the_channel_hangs(tmp_path, http_server):
    url, rec = http_server
    rec.default, rec.hang_s = "hang", 5.0
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "timeout_s": 3.0, "max_retries": 5, "flush_timeout_s": 1.0, "stall_timeout_s": 0})
    t0 = time.monotonic()
    run.finish(1, reason="RuntimeError: boom")
    assert time.monotonic() - t0 < 3.0
    failed = get_manager(run).deliveries[-1]
    assert failed["status"] == "failed" and failed["kind"] == "failed"


def test_no_channel_configured_is_harmless(tmp_path, caplog):
    run = _init(tmp_path, {"use_env": False})
    run.alert("nobody listens")
    run.finish()
    assert "no channel is configured" in caplog.text


def test_broken_alert_config_does_not_stop_the_run(tmp_path, capsys):
    run = _init(tmp_path, {"channels": [{"type": "pager"}]})
    run.log({"x": 1.0})
    run.finish()
    assert "alerts disabled" in capsys.readouterr().err


@pytest.mark.parametrize("status,code,reason,kind,level", [
    ("failed", 1, "ValueError: bad", "failed", "critical"),
    ("failed", 143, "killed by SIGTERM", "killed", "critical"),
])
def test_end_messages(tmp_path, http_server, status, code, reason, kind, level):
    url, rec = http_server
    run = _init(tmp_path, {"channels": [{"type": "webhook", "url": f"{url}/h"}], "use_env": False,
                           "stall_timeout_s": 0})
    run.finish(code, status=status, reason=reason)
    (body,) = rec.bodies()
    assert body["kind"] == kind and body["level"] == level and reason in body["title"] + body["text"]
