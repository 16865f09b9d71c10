"""Tracker and alert servers that accept the connection and never answer (a real loopback TCP server): the
run starts within its bound, ``log()`` costs what it costs without them, ``finish()`` returns within its
documented bound, and what was not delivered is said (a console line / a ``data_lost`` event)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.tracking import parts

pytestmark = pytest.mark.faults


class SilentServer:
    """Accepts every connection on 127.0.0.1 and never sends a byte (a hung tracker or webhook)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.close()


def _log_steps(run, n: int = 200) -> list[float]:  # noqa: ANN001
    took = []
    for s in range(n):
        t = time.perf_counter()
        run.log({"a": float(s), "b": -float(s)}, step=s)
        took.append(time.perf_counter() - t)
        time.sleep(0.002)
    return sorted(took)


def test_a_hung_mlflow_server_neither_blocks_init_nor_training(tmp_path: Path, silent, monkeypatch, capsys) -> None:
    """Before the fix ``init()`` opened the MLflow logger on the caller's thread: MLflow's client retried the
    silent server for minutes (120 s timeout x 7 retries) and training never started."""
    monkeypatch.setenv(parts.OPEN_TIMEOUT_ENV, "3")
    t0 = time.monotonic()
    run = rlcockpit.init(project="hung", dir=tmp_path / "store", system_interval=None, capture_meta=False,
                         health=False, loggers=["rlcockpit", "mlflow"],
                         logger_options={"mlflow": {"tracking_uri": silent.url}})
    took_init = time.monotonic() - t0
    assert took_init < 10.0, f"init() waited {took_init:.1f}s for a tracker that never answers"
    err = capsys.readouterr().err
    assert "mlflow" in err and "did not start" in err  # the user is told the logger is missing
    took = _log_steps(run)
    assert took[-3] < 0.05
    t0 = time.monotonic()
    run.finish(timeout=10)
    assert time.monotonic() - t0 < 12.0
    stored = rlcockpit.Api(tmp_path / "store").run(run.id)
    assert stored.status == "finished" and stored.series("a")[0].tolist() == list(range(200))


def test_a_hung_alert_webhook_costs_no_step_time_and_finish_says_what_was_not_sent(tmp_path: Path, silent,
                                                                                   caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = rlcockpit.init(project="hung", dir=tmp_path / "store", system_interval=None, capture_meta=False,
                         health=False, alerts={"channels": [{"type": "slack", "url": silent.url + "/hook"}],
                                               "timeout_s": 5, "flush_timeout_s": 2})
    took = []
    for s in range(200):
        t = time.perf_counter()
        run.log({"a": float(s)}, step=s)
        if s % 40 == 0:
            run.alert("manual check", f"at {s}")
        took.append(time.perf_counter() - t)
        time.sleep(0.002)
    took.sort()
    assert took[-3] < 0.05, f"a step took {took[-3]:.3f}s with a hung alert channel"
    t0 = time.monotonic()
    run.finish()
    took_finish = time.monotonic() - t0
    assert took_finish < 2.0 + 3.0, f"finish() took {took_finish:.1f}s (flush_timeout_s=2)"
    said = " ".join(r.getMessage() for r in caplog.records if "not delivered" in r.getMessage()
                    or "failed after" in r.getMessage())
    # every alert that did not reach the channel is named (before the fix: only "final alert not confirmed")
    assert said.count("'manual check'") == 5 and "'run finished'" in said and silent.url in said, said
    stored = rlcockpit.Api(tmp_path / "store").run(run.id)
    assert stored.status == "finished" and len(stored.series("a")[0]) == 200
    assert len(stored.events("alert")) == 5  # the alerts are in the store even if the channel never got them
