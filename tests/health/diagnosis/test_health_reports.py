"""Scheduled health reports (our users' guide §5.2): built from a stored run, stored with it, delivered through
a real webhook server on loopback. Time is moved forward with an injected clock instead of waiting hours."""

from __future__ import annotations

import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import rlcockpit
from rlcockpit.alerts.reports import send_report_live
from rlcockpit.health.checkups import build_report, parse_reports
from rlcockpit.health.schedule import ReportSchedule, get_schedule
from rlcockpit.store import open_store


class Hook:
    """A loopback HTTP server recording the JSON bodies POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.cv = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with hook.cv:
                    hook.bodies.append(body)
                    hook.cv.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict]:
        end = time.monotonic() + timeout
        with self.cv:
            while len(self.bodies) < n and time.monotonic() < end:
                self.cv.wait(0.05)
        return list(self.bodies)


@pytest.fixture
def hook():
    h = Hook()
    yield h
    h.server.shutdown()
    h.server.server_close()


def grpo_metrics(step: int, rng: np.random.RandomState, kl_blowup: bool = False) -> dict[str, float]:
    kl = 0.02 * (1 - math.exp(-step / 30)) + (0.05 * max(0, step - 60) if kl_blowup else 0.0)
    return {"critic/score/mean": 0.2 + 0.5 * (1 - math.exp(-step / 40)) + rng.normal(0, 0.02),
            "actor/kl_loss": kl * math.exp(rng.normal(0, 0.1)) + 1e-5, "actor/pg_loss": float(rng.normal(0, 0.01)),
            "actor/entropy": 1.0 - 0.002 * step, "system/gpu/0/utilization": float(rng.normal(82, 4)),
            "timing_s/step": 30.0, "timing_s/gen": 17.0, "timing_s/update_actor": 9.0}


def test_parse_reports_names_a_bad_entry():
    assert parse_reports("1h, daily") == ("1h", "daily")
    assert parse_reports(["1h", "6h", "daily", "checkpoint", "1h"]) == ("1h", "6h", "daily", "checkpoint")
    with pytest.raises(ValueError, match="'2h'"):
        parse_reports(["1h", "2h"])


def test_schedule_stores_and_sends_every_report_through_a_real_webhook(tmp_path, hook):
    run = rlcockpit.init(project="reports", name="sched", dir=tmp_path, system_interval=None, capture_meta=False,
                         alerts={"channels": [{"type": "webhook", "url": hook.url}]}, config={"x": 1})
    rng = np.random.RandomState(0)
    for step in range(1, 91):
        run.log(grpo_metrics(step, rng), step=step)
        if step % 10 == 0:
            run.log_samples([{"prompt": f"q{step}-{i}", "response": f"answer {i}", "reward": float(i % 2)}
                             for i in range(8)], step=step)
    ckpt = tmp_path / "global_step_90"
    ckpt.mkdir()
    (ckpt / "trainer_state.pt").write_bytes(b"x" * 100)
    run.log_event("checkpoint", {"path": str(ckpt), "step": 90}, step=90)
    run.flush()
    start = run.store.get_run(run.id)["created_at"]
    clock = {"now": start + 60}
    schedule = ReportSchedule(run, ["1h", "6h", "daily", "checkpoint"], clock=lambda: clock["now"], poll_s=0.05,
                              send=lambda report: send_report_live(run, report))  # as rlcockpit.defaults wires it
    schedule.start()
    try:
        assert {b["kind"] for b in hook.wait_for(1)} == {"report"}  # the checkpoint is due at once
        clock["now"] = start + 3600 + 5
        hook.wait_for(2)
        clock["now"] = start + 6 * 3600 + 5
        hook.wait_for(3)
        clock["now"] = start + 24 * 3600 + 5
        bodies = hook.wait_for(4)
        time.sleep(0.3)
        assert len(hook.bodies) == 4  # each report once
    finally:
        schedule.stop()
    by_kind = {r.kind: r for r in schedule.sent}
    assert set(by_kind) == {"1h", "6h", "daily", "checkpoint"}
    hour1 = by_kind["1h"]
    assert hour1.verdict == "ok", hour1.text()
    gpu = next(c for c in hour1.checks if c.name.startswith("GPU"))
    assert gpu.status == "ok" and "median 8" in gpu.evidence and "gen 57%" in gpu.evidence
    assert any("hovers around 0" in c.evidence for c in hour1.checks)  # GRPO's pg_loss: judged by the reward
    six = by_kind["6h"]
    assert [c.status for c in six.checks] == ["ok", "ok"], six.text()
    daily = by_kind["daily"]
    assert len(daily.samples) == 10 and all("reward" in s for s in daily.samples)
    assert len({s["prompt"] for s in daily.samples}) == 10
    cp = by_kind["checkpoint"]
    assert cp.verdict == "ok" and any("trainer_state.pt" in c.evidence for c in cp.checks), cp.text()
    texts = [b["body"] for b in bodies]
    assert any("Sampled generations" in t and "reward" in t for t in texts)  # the daily one carries the samples
    assert any("GPU utilisation > 70%" in " ".join(b["evidence"]) for b in bodies)
    run.finish()
    store = open_store(tmp_path)
    stored = store.events(run.id, "health_report")
    assert sorted(e["payload"]["kind"] for e in stored) == ["1h", "6h", "checkpoint", "daily"]
    store.close()


def test_init_health_reports_attaches_a_schedule(tmp_path):
    run = rlcockpit.init(project="reports", name="attach", dir=tmp_path, system_interval=None, capture_meta=False,
                         health={"reports": ["1h", "checkpoint"]})
    try:
        schedule = get_schedule(run)
        assert schedule is not None and schedule.is_alive() and schedule.kinds == ("1h", "checkpoint")
    finally:
        run.finish()
    schedule.join(timeout=5)
    assert not schedule.is_alive()  # stopped with the run


def store_hours(tmp_path, kl_blowup: bool = False) -> tuple[object, str]:
    """A stored run whose points span 8 hours (one step every 5 minutes)."""
    store = open_store(tmp_path)
    t0 = time.time() - 9 * 3600
    store.create_run({"id": "r1", "name": "long", "project": "p", "config": {"alerts": {}}, "created_at": t0})
    store.update_run("r1", created_at=t0)
    rng = np.random.RandomState(1)
    rows = {s: grpo_metrics(s, rng, kl_blowup) for s in range(1, 97)}
    keys = sorted(rows[1])
    steps = np.array(sorted(rows), dtype=np.int64)
    ts = t0 + steps * 300.0
    store.append_points("r1", {k: (steps, np.array([rows[s][k] for s in steps]), ts) for k in keys})
    for s in range(10, 97, 10):
        store.append_samples("r1", s, [{"prompt": f"p{s}-{i}", "response": f"r {i}", "reward": i / 8} for i in range(8)])
    return store, "r1"


def test_report_at_6h_uses_the_first_six_hours_and_catches_kl_out_of_control(tmp_path):
    store, rid = store_hours(tmp_path, kl_blowup=True)
    try:
        # the KL blow-up starts at step 60 = hour 5: within the 6h window, so the verdict is not ok
        six = build_report(store, rid, "6h")
        kl = next(c for c in six.checks if c.name == "KL under control")
        assert kl.status in ("warn", "fail") and six.verdict != "ok", six.text()
        assert six.step == 72  # 6 h / 5 min
        one = build_report(store, rid, "1h")
        assert one.step == 12
    finally:
        store.close()


def test_cli_report_prints_stores_and_sends(tmp_path, hook, capsys, monkeypatch):
    from rlcockpit.cli import main

    store, rid = store_hours(tmp_path)
    store.close()
    monkeypatch.setenv("RLCOCKPIT_WEBHOOK_URL", hook.url)
    assert main(["report", "long", "--dir", str(tmp_path), "--at", "daily", "--send"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("daily health report for run long") and out.count("    step ") == 10
    body = hook.wait_for(1)[0]
    assert body["kind"] == "report" and "Sampled generations" in body["body"]
    assert main(["report", "long", "--dir", str(tmp_path), "--at", "1h", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "1h"
    assert main(["report", "long", "--dir", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert "daily health report" in listed and "hour-1 health report" in listed
