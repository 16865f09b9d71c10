"""``log({"x": None})`` as W&B does it (QA: wandb 0.31 offline stores a null; rlcockpit rejected the key).

What real wandb 0.31 does, read back from its offline run file with its own protobuf messages: the history
row holds ``x: null`` (a row of only nulls is a row too), a nested ``{"a": None}`` is ``a/...: null``, a
list is kept as JSON; ``run.summary`` loses ``x`` once its latest value is a null. rlcockpit stores the
nulls beside the numeric series (a ``null_values`` event), so points, downsampling and detectors never see
them, and the ``Api`` gives them back as ``None`` in history rows."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path

import pytest

import rlcockpit

CALLS = [  # (step, dict): the same calls go to real wandb and to rlcockpit
    (0, {"x": 1.0, "y": 2.0}),
    (1, {"x": None, "y": 3.0}),
    (2, {"x": 2.0, "nest": {"a": None, "b": 1.0}}),
    (3, {"x": None}),
    (4, {"z": 0.0}),  # W&B commits an explicit step's row (and its summary) when the next step starts
]


def _log(run) -> None:  # noqa: ANN001
    for step, data in CALLS:
        run.log(data, step=step)


def _ours(store_dir: Path, run_id: str) -> list[dict]:
    special = ("_timestamp", "_runtime")  # in every full row, as W&B's; not compared here
    return [{k: v for k, v in r.items() if k not in special}
            for r in rlcockpit.Api(str(store_dir)).run(run_id).scan_history()]


def test_none_is_stored_as_a_null_and_read_back_as_none(start, store_dir: Path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start(name="nulls")
    _log(run)
    run.log({"lst": [1.0, None], "ok": 5.0}, step=5)  # a list is kept as logged, None in it too (as in W&B)
    run.finish()
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "'x'" not in warned and "nest/a" not in warned
    assert "rejected" not in warned
    rows = {r["_step"]: r for r in _ours(store_dir, run.id)}
    assert rows[1]["x"] is None and rows[1]["y"] == 3.0
    assert rows[2]["nest/a"] is None and rows[2]["nest/b"] == 1.0 and rows[2]["x"] == 2.0
    assert rows[3] == {"_step": 3, "x": None}  # a row of only a null is a row, as in W&B
    assert rows[5] == {"_step": 5, "ok": 5.0, "lst": [1.0, None]}
    stored = rlcockpit.Api(str(store_dir)).run(run.id)
    keyed = list(stored.scan_history(keys=["x"]))
    assert [(r["_step"], r["x"]) for r in keyed] == [(0, 1.0), (1, None), (2, 2.0), (3, None)]
    assert [r["_step"] for r in stored.scan_history(keys=["x"], min_step=1, max_step=3)] == [1, 2]
    # the numeric series are untouched: no NaN standing in for the null, nothing at the null's steps
    steps, values, _ = stored.series("x")
    assert steps.tolist() == [0, 2] and values.tolist() == [1.0, 2.0]
    assert "nest/a" not in stored.keys()
    # W&B's summary: a key whose latest value is a null is not in it; the others keep their last value
    assert "x" not in stored.summary and stored.summary["y"] == 3.0 and stored.summary["nest/b"] == 1.0
    frame = stored.history(pandas=False)
    assert [r.get("x", "absent") for r in frame] == [1.0, None, 2.0, None, "absent", "absent"]


def test_many_nulls_in_one_drain_and_a_number_after_a_null(start, store_dir: Path) -> None:
    """The writer's fast path sees blocks of identical key tuples; a None in one entry of a block of
    thousands must not lose the block's other points, and a number logged after a null is the summary."""
    run = start(name="block")
    for step in range(2000):
        run.log({"loss": None if step % 500 == 7 else float(step), "kl": 0.1}, step=step)
    run.finish()
    stored = rlcockpit.Api(str(store_dir)).run(run.id)
    steps, values, _ = stored.series("loss")
    assert len(steps) == 1996 and not any(math.isnan(v) for v in values.tolist())
    assert len(stored.series("kl")[0]) == 2000
    nulls = [r["_step"] for r in stored.scan_history(keys=["loss"]) if r["loss"] is None]
    assert nulls == [7, 507, 1007, 1507]
    assert stored.summary["loss"] == 1999.0


def test_module_api_and_health_detectors_with_nulls(store_dir: Path) -> None:
    """``rlcockpit.log`` (the wandb-shaped module API) takes nulls too, and a detector never reads a null
    as a non-finite value (no NaN finding for a loss logged as None)."""
    run = rlcockpit.init(project="proj", dir=store_dir, system_interval=None, capture_meta=False, health=True)
    try:
        for step in range(30):
            rlcockpit.log({"actor/pg_loss": None if step in (5, 6) else 0.1, "critic/score/mean": 0.5})
    finally:
        rlcockpit.finish()
    stored = rlcockpit.Api(str(store_dir)).run(run.id)
    assert [r["_step"] for r in stored.scan_history(keys=["actor/pg_loss"]) if r["actor/pg_loss"] is None] == [5, 6]
    texts = json.dumps(stored.findings()).lower()
    assert "nan" not in texts and "non-finite" not in texts


@pytest.mark.slow
def test_rows_match_real_wandb_offline(start, store_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """The same calls to real wandb 0.31 (offline) and to rlcockpit give the same history rows."""
    import wandb

    from rlcockpit.integrations.wandb_log import read_offline_run

    monkeypatch.setenv("WANDB_SILENT", "true")
    wb = wandb.init(mode="offline", project="p", dir=str(tmp_path), settings=wandb.Settings(console="off"))
    _log(wb)
    deadline = time.monotonic() + 20
    while (summary_after := dict(wb.summary)).get("_step", -1) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)  # wandb-core applies the last log() to the summary a moment later
    assert summary_after.get("_step") >= 3 and "x" not in summary_after and summary_after["y"] == 3
    wb.finish()
    wandb.teardown()
    theirs = {step: row for step, row in read_offline_run(tmp_path / "wandb")["rows"]}
    run = start(name="same")
    _log(run)
    run.finish()
    ours = {r.pop("_step"): r for r in _ours(store_dir, run.id)}
    assert ours == theirs
    assert ("x" in summary_after) == ("x" in rlcockpit.Api(str(store_dir)).run(run.id).summary)


@pytest.mark.slow
def test_every_logger_takes_nulls_as_its_library_expects(start, store_dir: Path, monkeypatch) -> None:
    """W&B gets the null in its row; MLflow, TensorBoard and SwanLab have no missing-value form, so the step
    is simply absent for that key there (as when the key is not logged); nothing fails, nothing is lost."""
    from mlflow.tracking import MlflowClient
    from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    from swanlab.sdk.internal.core_python.store import DataStoreReader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from rlcockpit.integrations.wandb_log import read_offline_run
    from rlcockpit.tracking.sinks.mlflow_sink import default_tracking_uri

    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    run = start(name="fan", loggers=["rlcockpit", "wandb", "mlflow", "tensorboard", "swanlab", "jsonl", "console"])
    _log(run)
    run.finish()
    stored = rlcockpit.Api(str(store_dir)).run(run.id)
    assert not stored.events("data_lost") and stored.status == "finished"

    wb = dict(read_offline_run(store_dir / "wandb" / run.id / "wandb")["rows"])
    assert wb[1]["x"] is None and wb[1]["y"] == 3 and wb[2]["nest/a"] is None and wb[3] == {"x": None}

    client = MlflowClient(tracking_uri=default_tracking_uri(store_dir))
    (mrun,) = client.search_runs([e.experiment_id for e in client.search_experiments() if e.name == "proj"])
    assert sorted(m.step for m in client.get_metric_history(mrun.info.run_id, "x")) == [0, 2]
    assert not client.get_metric_history(mrun.info.run_id, "nest/a")

    acc = EventAccumulator(str(store_dir / "tensorboard" / run.id), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("x")] == [0, 2] and "nest/a" not in acc.Tags()["scalars"]

    (path,) = (store_dir / "swanlab" / run.id).glob("run-*/run-*.swanlab")
    reader = DataStoreReader()
    reader.open(path)
    scalars: dict[str, dict[int, float]] = {}
    for raw in reader:
        rec = Record()
        rec.ParseFromString(raw)
        if rec.WhichOneof("record_type") == "scalar":
            scalars.setdefault(rec.scalar.key, {})[rec.scalar.step] = rec.scalar.value.number
    reader.close()
    assert scalars["x"] == {0: 1.0, 2: 2.0} and "nest/a" not in scalars
