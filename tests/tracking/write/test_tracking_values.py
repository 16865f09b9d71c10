"""What ``log()`` accepts, converts, rejects and warns about."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import rlcockpit


def _history(store_dir: Path, run_id: str):
    return rlcockpit.Api(store_dir).run(run_id).history()


def test_numpy_torch_scalars_and_nested_dicts(start, store_dir: Path) -> None:
    run = start()
    run.log({
        "np32": np.float32(1.5), "np64": np.float64(2.5), "i64": np.int64(3), "npbool": np.bool_(True),
        "t0": torch.tensor(4.5), "t1": torch.tensor([5.5]), "tint": torch.tensor(6), "tbf16": torch.tensor(0.5, dtype=torch.bfloat16),
        "arr1": np.array([7.0]), "pybool": False, "pyint": 8,
        "actor": {"pg_loss": 0.25, "kl": {"mean": torch.tensor(0.125)}},
    }, step=0)
    run.finish()
    row = _history(store_dir, run.id).drop(columns=["_step", "_runtime", "_timestamp"]).loc[0].to_dict()
    assert row == {
        "np32": 1.5, "np64": 2.5, "i64": 3.0, "npbool": 1.0, "t0": 4.5, "t1": 5.5, "tint": 6.0, "tbf16": 0.5,
        "arr1": 7.0, "pybool": 0.0, "pyint": 8.0, "actor/pg_loss": 0.25, "actor/kl/mean": 0.125,
    }


def test_nan_and_inf_are_stored_as_such(start, store_dir: Path) -> None:
    run = start()
    run.log({"v": float("nan"), "p": float("inf"), "n": -np.inf, "t": torch.tensor(float("nan"))}, step=0)
    run.finish()
    row = _history(store_dir, run.id).loc[0]
    assert math.isnan(row["v"]) and math.isnan(row["t"])
    assert row["p"] == math.inf and row["n"] == -math.inf
    assert math.isnan(rlcockpit.Api(store_dir).run(run.id).summary["v"])


def test_bad_values_are_rejected_per_key_with_one_warning(start, store_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    for step in range(3):
        run.log({"ok": float(step), "text": "hello", "none": None, "vec": torch.zeros(3, dtype=torch.complex64),
                 "arr": np.array([object(), 1]), "lst": ["a", 1.0], "dicts": [{"a": 1}]}, step=step)
    run.finish()
    df = _history(store_dir, run.id)
    assert list(df.columns) == ["ok", "_step", "_runtime", "_timestamp"] and df["ok"].tolist() == [0.0, 1.0, 2.0]
    rejected = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    for key in ("'text'", "'vec'", "'arr'", "'lst'", "'dicts'"):
        assert sum(key in m for m in rejected) == 1, (key, rejected)  # named, and only once per key
    assert not any("'none'" in m for m in rejected)  # None is W&B's null: stored as such, not an error
    assert any("shape (3,)" in m for m in rejected)


def test_lower_step_is_rejected_with_a_warning_naming_both(start, store_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    run = start()
    run.log({"x": 1.0}, step=10)
    run.log({"x": 2.0}, step=7)
    run.log({"x": 3.0}, step=10)  # the same step again is allowed (more keys for that step)
    run.log({"x": 4.0})
    run.finish()
    msgs = [r.getMessage() for r in caplog.records if "lower" in r.getMessage()]
    assert len(msgs) == 1 and "7" in msgs[0] and "10" in msgs[0]
    df = _history(store_dir, run.id)
    assert df["x"].to_dict() == {10: 3.0, 11: 4.0}
    assert run.step == 11


def test_keys_are_stored_verbatim(start, store_dir: Path) -> None:
    keys = ["ünïcödé/键", "with space/x y", "val-core/arith/acc/mean@1", "a:b", "trailing/", "a//b", "%_like"]
    run = start()
    run.log({k: float(i) for i, k in enumerate(keys)}, step=0)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert sorted(stored.keys()) == sorted(keys)
    assert stored.history(keys)[keys].loc[0].tolist() == [float(i) for i in range(len(keys))]
