"""A broken or stuck logger never takes the run down; a missing optional library is one clear line."""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store.batch import merge_ranges
from rlcockpit.tracking.sinks import MissingExtra, Sink
from rlcockpit.tracking.sinks.base import MAX_CONSECUTIVE_FAILURES


class ExplodingSink(Sink):
    name = "exploding"

    def __init__(self) -> None:
        self.calls = 0

    def log_metrics(self, rows) -> None:  # noqa: ANN001
        self.calls += 1
        raise OSError("disk on fire")


class RecordingSink(Sink):
    name = "recording"

    def __init__(self) -> None:
        self.steps: list[int] = []

    def log_metrics(self, rows) -> None:  # noqa: ANN001
        self.steps.extend(step for step, _, _ in rows)


class BlockedSink(Sink):
    """Stuck in its first write until released (a hung network logger)."""

    name = "blocked"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def log_metrics(self, rows) -> None:  # noqa: ANN001
        self.entered.set()
        self.release.wait(30)


def test_failing_sink_is_disabled_after_repeated_failures_others_go_on(
    start, store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    bad, good = ExplodingSink(), RecordingSink()
    run = start(sinks=[bad, good])
    for step in range(3 * MAX_CONSECUTIVE_FAILURES):
        run.log({"x": float(step)}, step=step)  # never raises
        assert run.flush()  # one writer batch per step
    run.finish()
    assert bad.calls == MAX_CONSECUTIVE_FAILURES  # disabled: not called again
    assert good.steps == list(range(3 * MAX_CONSECUTIVE_FAILURES))
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.history()["x"].size == 3 * MAX_CONSECUTIVE_FAILURES
    assert _lost(stored, "exploding") == [(0, 3 * MAX_CONSECUTIVE_FAILURES - 1)]  # failed, then disabled: recorded
    assert _lost(stored, "recording") == [] and _lost(stored, "store") == []
    messages = [r.getMessage() for r in caplog.records]
    assert sum("disk on fire" in m for m in messages) == 1  # the error is reported once
    assert sum("disabled after" in m and "'exploding'" in m for m in messages) == 1


def _lost(stored, sink: str | None = None) -> list[tuple[int, int]]:  # noqa: ANN001
    out = []
    for e in stored.events("data_lost"):
        if sink is None or e["payload"]["sink"] == sink:
            out += e["payload"]["ranges"]
    return [tuple(r) for r in merge_ranges(out)]


def test_a_hung_logger_costs_only_its_own_copy_and_its_loss_is_recorded(
    start, store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(Changed by issue 11: a stuck logger used to stall the store too.) The store gets every step; the hung
    logger's queue is bounded in bytes; what it missed is a data_lost record naming it."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    stuck = BlockedSink()
    run = start(sinks=[stuck], max_queue_bytes=1_000_000)
    run.log({"x": 0.0, "y": 0.0}, step=0)
    assert stuck.entered.wait(5)
    worker = next(w for w in run._parts.workers if w.sink is stuck)
    most = 0
    for step in range(1, 20_001):
        run.log({"x": 1.0, "y": 2.0}, step=step)
        if step % 200 == 0:
            # the store keeps up (waited for, not assumed: on a loaded machine 10 ms was not always enough, and
            # the run's own queue overflowed); only the hung logger falls behind
            deadline = time.monotonic() + 10
            while run._queue and time.monotonic() < deadline:
                time.sleep(0.005)
            most = max(most, worker.queued_bytes)
    assert 0 < most <= 1_000_000  # the hung logger's queue stays within its byte bound
    assert run.flush(timeout=0.5) is False  # the logger has not taken everything
    stuck.release.set()
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished" and run.dropped == 0
    assert stored.series("x")[0].tolist() == list(range(20_001))  # the store lost nothing
    lost = _lost(stored, "blocked")
    assert lost and all(lo >= 1 for lo, _ in lost)
    assert sum("not keeping up" in r.getMessage() for r in caplog.records) == 1


def test_a_full_queue_drops_new_entries_and_records_each_gap(start, store_dir: Path, caplog, monkeypatch) -> None:
    """A queue bounded at ~2 entries and no backpressure (``RLCOCKPIT_QUEUE_WAIT_S=0``; the default waits):
    at full speed most calls are dropped; every step is either stored or inside a recorded data_lost range,
    never both, and run.dropped counts them."""
    monkeypatch.setenv("RLCOCKPIT_QUEUE_WAIT_S", "0")
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start(max_queue_bytes=8_000)
    keys = [f"k{i}" for i in range(50)]
    for step in range(20_000):
        run.log({k: float(step) for k in keys}, step=step)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    got = set(stored.series("k0")[0].tolist())
    lost = _lost(stored)
    assert run.dropped > 0 and lost
    covered = set(got)
    for lo, hi in lost:
        span = set(range(lo, hi + 1))
        assert not span & got
        covered |= span
    assert covered == set(range(20_000))
    assert sum(e["payload"]["entries"] for e in stored.events("data_lost")) == run.dropped
    assert stored.to_dict()["data_lost"] == run.dropped
    assert sum("queue full" in r.getMessage() for r in caplog.records) == 1
    assert run.step == 19_999  # steps keep counting through drops


@pytest.mark.parametrize(
    ("logger", "modules", "extra"),
    [
        ("wandb", ["wandb"], "wandb"),
        ("mlflow", ["mlflow", "mlflow.entities", "mlflow.tracking"], "mlflow"),
        ("swanlab", ["swanlab"], "swanlab"),
        ("tensorboard", ["torch.utils.tensorboard", "tensorboardX"], "tensorboard"),
    ],
)
def test_missing_optional_library_is_one_clear_line(
    start, store_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, logger: str,
    modules: list[str], extra: str
) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    run = start(loggers=["rlcockpit", logger, "jsonl"])
    assert [s.name for s in run.sinks] == ["rlcockpit", "jsonl"]  # the others still run
    run.log({"x": 1.0})
    run.finish()
    err = capsys.readouterr().err
    assert f"pip install 'rlcockpit[{extra}]'" in err
    assert "Traceback" not in err
    assert rlcockpit.Api(store_dir).run(run.id).history()["x"].tolist() == [1.0]
    assert (store_dir / "jsonl" / run.id / "metrics.jsonl").read_text().count("\n") == 1


def test_missing_extra_message_names_package_and_extra() -> None:
    text = str(MissingExtra("wandb", "wandb", "wandb"))
    assert "'wandb'" in text and "rlcockpit[wandb]" in text
