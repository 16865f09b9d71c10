"""Bad input is rejected at the smallest unit (key, row, cell) with one warning naming it; the training
thread never gets an exception from logging, and nothing else is lost."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store import open_store


def _warnings(caplog: pytest.LogCaptureFixture, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if word in r.getMessage()]


@pytest.mark.parametrize("bad_key", ["bad/\ud800", 7, ("a", "b"), None, ""])
def test_one_bad_key_is_rejected_alone(start, store_dir: Path, caplog, bad_key) -> None:
    """Defect 3: a surrogate or non-string key loses only itself — not the batch, not the summary, not the run."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    for step in range(40):
        row = {"loss": float(step), "acc": step / 40}
        if step == 5:
            row[bad_key] = 1.0
        run.log(row, step=step)
    run.summary["best"] = 0.5
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    assert sorted(stored.keys()) == ["acc", "loss"]
    assert stored.series("loss")[0].tolist() == list(range(40))
    assert stored.summary["best"] == 0.5 and stored.summary["loss"] == 39.0
    assert len(_warnings(caplog, "rejected")) == 1


@pytest.mark.parametrize(("label", "row", "step"), [
    ("huge int value", {"big": 10**400}, 3),
    ("step >= 2**63", {"ok": 1.0}, 2**63),
    ("nan step", {"ok": 1.0}, float("nan")),
    ("negative step", {"ok": 1.0}, -4),
])
def test_out_of_range_values_and_steps_lose_one_unit(start, store_dir: Path, caplog, label, row, step) -> None:
    """Defect 4: an out-of-range value loses one key, an out-of-range step one log call."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    for s in range(20):
        run.log({"ok": float(s)}, step=s)
        if s == 10:
            run.log(row, step=step if step != 3 else s)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    assert stored.series("ok")[0].tolist() == list(range(20))
    assert "big" not in stored.keys()
    assert len(_warnings(caplog, "rejected")) == 1, caplog.text


@pytest.mark.parametrize("call", [
    lambda r: r.log(None), lambda r: r.log("str"), lambda r: r.log(5), lambda r: r.log([1, 2]),
    lambda r: r.log({"x": 1.0}, step="7"), lambda r: r.log({"x": 1.0}, step=1.5),
    lambda r: r.log({"x": 1.0}, step=True), lambda r: r.log_samples(None), lambda r: r.log_samples(["str"]),
    lambda r: r.log_samples("abc"), lambda r: r.log_samples([{"prompt": "p"}], step="x"),
    lambda r: r.log_event(None), lambda r: r.log({"deep": _deep(10_000)}),
])
def test_bad_calls_never_raise_in_the_training_thread(start, store_dir: Path, caplog, call) -> None:
    """Defect 13: bad input is one warning, never an exception in the caller."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    run.log({"x": 0.0}, step=0)
    call(run)
    run.log({"x": 2.0}, step=2)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    assert stored.series("x")[0].tolist() == [0, 2]
    assert len(_warnings(caplog, "rejected")) == 1, caplog.text


def _deep(n: int) -> dict:
    d: dict = {"v": 1.0}
    for _ in range(n):
        d = {"d": d}
    return d


def test_a_fractional_step_is_rejected_by_name_not_truncated(start, store_dir: Path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    run.log({"x": 1.0}, step=1.5)
    run.log({"x": 2.0}, step=2.0)  # an integral float is that integer
    run.finish()
    assert rlcockpit.Api(store_dir).run(run.id).series("x")[0].tolist() == [2]
    msgs = _warnings(caplog, "rejected")
    assert len(msgs) == 1 and "1.5" in msgs[0]


def test_one_bad_cell_loses_only_that_cell(start, store_dir: Path, caplog) -> None:
    """Defect 13: a bad reward, a tuple key or surrogate text drops that cell, not the call."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    rows = [
        {"prompt": "p0", "response": "r0", "reward": 1.0},
        {"prompt": "p1", "response": "r1", "reward": "high"},
        {"prompt": "p2", "response": "r2", "reward": 0.5, ("a", "b"): 3},
        {"prompt": "p3\ud800", "response": "r3", "reward": 0.0},
        "not a row",
        {"prompt": "p5", "response": "r5", "reward": 0.25, "extra": "fine"},
    ]
    run.log_samples(rows, step=3)
    run.finish()
    got = open_store(store_dir).samples(run.id, step=3)
    assert [g["prompt"] for g in got] == ["p0", "p1", "p2", None, "p5"]
    assert [g["response"] for g in got] == ["r0", "r1", "r2", "r3", "r5"]
    assert got[1]["reward"] is None and got[2]["reward"] == 0.5 and got[4]["extra"] == "fine"
    msgs = _warnings(caplog, "rejected")
    assert len(msgs) == 4, msgs  # reward 'high', the tuple key, the surrogate prompt, the non-row
    assert any("'reward'" in m and "row 1" in m for m in msgs)


def test_nan_reward_is_kept_as_missing_and_numbers_stay_numbers(start, store_dir: Path) -> None:
    run = start()
    run.log_samples([{"prompt": "a", "response": "b", "reward": math.nan, "score": 2}], step=0)
    run.finish()
    got = open_store(store_dir).samples(run.id)
    assert got[0]["reward"] is None and got[0]["score"] == 2
