"""A broken or stuck logger never takes the run down; a missing optional library is one clear line."""

from __future__ import annotations

import logging
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

import rlcockpit
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
    assert rlcockpit.Api(store_dir).run(run.id).history()["x"].size == 3 * MAX_CONSECUTIVE_FAILURES
    messages = [r.getMessage() for r in caplog.records]
    assert sum("disk on fire" in m for m in messages) == 1  # the error is reported once
    assert sum("disabled after" in m and "'exploding'" in m for m in messages) == 1


def test_full_queue_drops_and_counts_entries_with_bounded_memory(
    start, store_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    stuck = BlockedSink()
    run = start(sinks=[stuck], max_queue=100)
    run.log({"x": 0.0})
    assert run.flush(timeout=0.5) is False  # the writer is stuck in the sink
    assert stuck.entered.wait(5)
    tracemalloc.start()
    for _ in range(20_000):
        run.log({"x": 1.0, "y": 2.0})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(run._queue) <= 100
    assert run.dropped == 20_000 - 100
    assert peak < 2_000_000  # a queue of 20k dicts would be several MB
    assert sum("queue full" in r.getMessage() for r in caplog.records) == 1
    stuck.release.set()
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id).history()
    assert len(stored) == 1 + 100  # what was queued got through; the drops are counted, not hidden
    assert run.step == 20_000  # steps keep counting through drops


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
