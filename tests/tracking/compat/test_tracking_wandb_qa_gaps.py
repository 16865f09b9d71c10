"""Three places where a W&B user's unchanged code behaved differently under ``import rlcockpit as wandb``:

* ``wandb.init()`` again while a run is active: W&B (>= 0.19.10, ``reinit="default"``) returns the active
  run in a script; rlcockpit started a second run and moved ``wandb.log`` to it;
* ``Api().run(...).history()`` had no ``_step`` / ``_timestamp`` / ``_runtime`` columns (``df["_step"]``
  was a KeyError) and ``scan_history()`` rows had no ``_timestamp`` / ``_runtime``;
* ``wandb.log({"x": [1, 2, 3]})`` (or a small numpy array) was rejected; W&B keeps the list in its row.

Every test logs through the public API into a real SQLite store and reads it back with ``rlcockpit.Api``;
the last one runs the same calls through real wandb 0.31 (offline) and compares the rows.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from tracking_support import finish_current_run

import rlcockpit
import rlcockpit as wandb
from rlcockpit.tracking.compat import reinit as reinit_module


@pytest.fixture(autouse=True)
def _no_current_run():
    yield
    finish_current_run()


def _stored(store_dir: Path, run_id: str):
    return rlcockpit.Api(str(store_dir)).run(run_id)


# ---- 1. init() while a run is active ----------------------------------------------------------------------

def test_init_twice_in_a_script_returns_the_active_run_and_loses_nothing(start, store_dir: Path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    first = start(name="first", config={"lr": 0.1})
    wandb.log({"loss": 1.0})
    second = start(name="second", config={"lr": 0.5})  # W&B's default in a script: the same run back
    assert second is first and wandb.run is first and not first.finished
    wandb.log({"loss": 0.5})
    first.finish()
    warned = " ".join(r.getMessage() for r in caplog.records if "init() called while" in r.getMessage())
    assert first.id in warned and "config, name" in warned and "not applied" in warned
    runs = rlcockpit.Api(str(store_dir)).runs("proj")
    assert [r.id for r in runs] == [first.id]  # no second run was made
    stored = _stored(store_dir, first.id)
    assert stored.name == "first" and stored.config == {"lr": 0.1} and stored.status == "finished"
    assert [(r["_step"], r["loss"]) for r in stored.scan_history(keys=["loss"])] == [(0, 1.0), (1, 0.5)]


def test_reinit_false_and_return_previous_return_it_too(start) -> None:
    first = start(name="a")
    assert start(name="b", reinit=False) is first
    assert start(name="c", reinit="return_previous") is first
    assert start(name="d", reinit="default") is first


def test_reinit_finish_previous_finishes_every_active_run_with_its_data(start, store_dir: Path) -> None:
    first = start(name="a")
    first.log({"x": 1.0})
    beside = start(name="beside", reinit="create_new")
    beside.log({"y": 2.0})
    second = start(name="b", reinit="finish_previous")
    assert first.finished and beside.finished and wandb.run is second
    second.log({"x": 3.0})
    second.finish()
    assert _stored(store_dir, first.id).status == "finished"
    assert _stored(store_dir, first.id).history()["x"].tolist() == [1.0]
    assert _stored(store_dir, beside.id).history()["y"].tolist() == [2.0]
    assert start(name="c", reinit=True).name == "c"  # True is the deprecated finish_previous


def test_reinit_create_new_leaves_wandb_run_and_wandb_log_alone(start, store_dir: Path) -> None:
    first = start(name="a")
    other = start(name="eval", reinit="create_new")
    assert other is not first and wandb.run is first  # as W&B: create_new is not the global run
    wandb.log({"loss": 1.0})
    other.log({"acc": 0.5})
    other.finish()
    assert wandb.run is first
    first.finish()
    assert list(_stored(store_dir, first.id).history().columns.drop(["_step", "_runtime", "_timestamp"])) == ["loss"]
    assert list(_stored(store_dir, other.id).history().columns.drop(["_step", "_runtime", "_timestamp"])) == ["acc"]


def test_reinit_default_in_a_notebook_finishes_the_previous_run(start, monkeypatch) -> None:
    monkeypatch.setattr(reinit_module, "in_notebook", lambda: True)
    first = start(name="cell-1")
    second = start(name="cell-2")
    assert first.finished and second is not first and wandb.run is second


def test_reinit_errors_as_wandb(start) -> None:
    with pytest.raises(ValueError, match="reinit='sometimes'"):
        start(reinit="sometimes")
    first = start(name="a")
    with pytest.raises(wandb.errors.UsageError, match=f"{first.id} is still active"):
        start(id="other", resume="must")
    assert not first.finished


def test_rlcockpit_integrations_still_get_a_run_of_their_own(start) -> None:
    """The trainer, the verl/TRL loggers, the importer and the watcher pass OWN_RUN: a new run, current."""
    user = start(name="user")
    own = start(name="trainer", reinit=reinit_module.OWN_RUN)
    assert own is not user and wandb.run is own and not user.finished


# ---- 2. history() / scan_history() carry _step, _timestamp, _runtime -----------------------------------

def test_history_has_wandbs_columns_and_keeps_its_shape(start, store_dir: Path) -> None:
    before = time.time()
    run = start(name="h")
    run.log({"data/n": 4.0})  # step 0: what bench/gpu_vs_trl.py drops with .iloc[1:]
    for step in (1, 2, 3):
        run.log({"loss": 1.0 / step, "timing_s/step": 0.1 * step}, step=step)
    run.finish()
    stored = _stored(store_dir, run.id)
    df = stored.history()
    assert df.index.name == "step" and df.index.tolist() == [0, 1, 2, 3]  # rlcockpit's frame, as before
    assert df["_step"].tolist() == [0, 1, 2, 3]
    assert (df["_timestamp"] >= before - 1).all() and (df["_timestamp"] <= time.time()).all()
    assert (df["_runtime"] >= 0).all() and df["_runtime"].is_monotonic_increasing
    assert (df["_timestamp"] - df["_runtime"]).round(6).nunique() == 1  # both from the same start time
    timing = [c for c in df.iloc[1:].columns if c.startswith("timing_s/")]
    assert timing == ["timing_s/step"] and df.iloc[1:]["timing_s/step"].tolist() == pytest.approx([0.1, 0.2, 0.3])
    keyed = stored.history(keys=["loss"])  # W&B: the x axis and the keys asked for
    assert list(keyed.columns) == ["loss", "_step"]
    assert list(stored.history(keys=["loss", "_timestamp"]).columns) == ["loss", "_step", "_timestamp"]
    rows = list(stored.scan_history())
    assert [r["_step"] for r in rows] == [0, 1, 2, 3]
    assert all(r["_timestamp"] == pytest.approx(t) for r, t in zip(rows, df["_timestamp"]))
    assert all(r["_runtime"] == pytest.approx(t) for r, t in zip(rows, df["_runtime"]))
    assert set(next(iter(stored.scan_history(keys=["loss"])))) == {"_step", "loss"}
    assert set(stored.history(pandas=False)[1]) == {"_step", "_timestamp", "_runtime", "loss", "timing_s/step"}
    sampled = stored.history(samples=2)
    assert sampled["_step"].tolist() == [0, 3] and "_timestamp" in sampled.columns


def test_history_of_an_empty_run_has_the_columns(start, store_dir: Path) -> None:
    run = start(name="empty")
    run.finish()
    df = _stored(store_dir, run.id).history()
    assert len(df) == 0 and {"_step", "_timestamp", "_runtime"} <= set(df.columns)


# ---- 3. lists and small arrays -------------------------------------------------------------------------

def test_lists_and_small_arrays_are_kept_as_wandb_keeps_them(start, store_dir: Path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start(name="lists")
    wandb.log({"x": [1, 2, 3], "loss": 0.5})
    wandb.log({"x": (4, 5.5), "arr": np.arange(3.0), "t": torch.tensor([0.25, 0.5]), "grid": np.ones((2, 2)),
               "nest": {"v": [1.0, None]}, "loss": 0.25, "big": np.arange(40.0)})
    wandb.log({"words": ["a", "b"], "huge": list(range(5000)), "deep": {"a": np.arange(40.0)}, "loss": 0.125})
    run.finish()
    stored = _stored(store_dir, run.id)
    rows = {r["_step"]: r for r in stored.scan_history()}
    assert rows[0]["x"] == [1, 2, 3] and rows[0]["loss"] == 0.5
    assert rows[1]["x"] == [4, 5.5] and rows[1]["arr"] == [0.0, 1.0, 2.0] and rows[1]["t"] == [0.25, 0.5]
    assert rows[1]["grid"] == [[1.0, 1.0], [1.0, 1.0]] and rows[1]["nest/v"] == [1.0, None]
    assert rows[1]["big/max"] == 39.0 and rows[1]["loss"] == 0.25  # > 32 values: a histogram, as before
    assert rows[2]["loss"] == 0.125 and not {"words", "huge", "deep/a"} & set(rows[2])  # the rest of the row kept
    warned = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    for key, why in (("'words'", "holding text"), ("'huge'", "5000 numbers"), ("'deep/a'", "inside a dict")):
        assert sum(key in m and why in m for m in warned) == 1, (key, warned)
    assert len(warned) == 3
    assert stored.summary["x"] == [4, 5.5] and stored.summary["loss"] == 0.125  # W&B's summary: the last value
    df = stored.history()
    assert df.loc[0, "x"] == [1, 2, 3] and df.loc[1, "arr"] == [0.0, 1.0, 2.0] and df["loss"].tolist() == [0.5, 0.25,
                                                                                                           0.125]
    assert [r["x"] for r in stored.scan_history(keys=["x"])] == [[1, 2, 3], [4, 5.5]]
    assert "x" not in stored.keys() and stored.series("loss")[1].tolist() == [0.5, 0.25, 0.125]  # numbers only


def test_a_key_logged_as_number_then_list(start, store_dir: Path) -> None:
    run = start(name="mixed")
    for step in range(200):  # the writer's fast path for the numeric block, the careful one for the list
        run.log({"x": float(step)} if step != 150 else {"x": [step, step]}, step=step)
    run.finish()
    stored = _stored(store_dir, run.id)
    df = stored.history()
    assert df.loc[150, "x"] == [150, 150] and df.loc[149, "x"] == 149.0 and len(df) == 200
    assert len(stored.series("x")[0]) == 199


@pytest.mark.slow
def test_the_same_calls_give_wandbs_rows(start, store_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Real wandb 0.31 offline: a second init returns the run, lists stay lists, arrays become lists."""
    import wandb as real

    from rlcockpit.integrations.wandb_log import read_offline_run

    def calls(lib, **init):
        run = lib.init(**init)
        lib.log({"x": [1, 2, 3], "loss": 0.5})
        again = lib.init(**init)
        lib.log({"arr": np.arange(5.0), "loss": 0.25, "nest": {"v": [1.0, 2.0]}})
        run.finish()
        return run, again

    monkeypatch.setenv("WANDB_SILENT", "true")
    wb, wb_again = calls(real, mode="offline", project="p", dir=str(tmp_path), settings=real.Settings(console="off"))
    real.teardown()
    theirs = dict(read_offline_run(tmp_path / "wandb")["rows"])
    ours_run, ours_again = calls(rlcockpit, project="p", dir=store_dir, health=False, system_interval=None,
                                 capture_meta=False)
    assert (wb_again is wb) and (ours_again is ours_run)
    ours = {r.pop("_step"): {k: v for k, v in r.items() if k not in ("_timestamp", "_runtime")}
            for r in _stored(store_dir, ours_run.id).scan_history()}
    assert ours == theirs


@pytest.mark.slow
def test_the_wandb_logger_gets_the_lists_in_its_rows(start, store_dir: Path, monkeypatch) -> None:
    from rlcockpit.integrations.wandb_log import read_offline_run

    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_MODE", raising=False)
    run = start(name="fan", loggers=["rlcockpit", "wandb", "jsonl", "console"])
    run.log({"x": [1, 2, 3], "loss": 0.5})
    run.log({"loss": 0.25, "arr": np.arange(3.0)})
    run.log({"x": [4]})
    run.finish()
    stored = _stored(store_dir, run.id)
    assert not stored.events("data_lost") and stored.status == "finished"
    deadline = time.monotonic() + 30
    while True:  # wandb-core may still be writing its offline file (seen on a loaded 2-core machine)
        offline = read_offline_run(store_dir / "wandb" / run.id / "wandb")
        if len(offline["rows"]) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    wb = dict(offline["rows"])
    assert wb[0] == {"x": [1, 2, 3], "loss": 0.5} and wb[1] == {"loss": 0.25, "arr": [0.0, 1.0, 2.0]}
    assert wb[2] == {"x": [4]}
