"""The same logging calls into real wandb 0.31 (offline, its run file read back) and into rlcockpit give the
same history rows: W&B's ``step_sync`` and logged NaN values."""

from __future__ import annotations

import math

import rlcockpit


def _calls(lib, run):
    """A script using define_metric's custom x axis (W&B's "Customize log axes" guide) with a NaN loss."""
    run.define_metric("epoch")
    run.define_metric("val/*", step_metric="epoch")          # step_sync defaults to True
    run.define_metric("test/*", step_metric="epoch", step_sync=False)
    lib_log = run.log
    lib_log({"loss": 1.0, "acc": 0.5})
    lib_log({"loss": math.nan, "acc": 0.6})
    lib_log({"epoch": 1})
    lib_log({"val/acc": 0.9})
    lib_log({"val/acc": 0.95, "epoch": 2})
    lib_log({"test/acc": 0.7})
    lib_log({"loss": math.inf})


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _rows_equal(got, want):
    # W&B's full rows carry _timestamp and _runtime too (read_offline_run leaves them out of `want`)
    got = [{k: v for k, v in r.items() if k not in ("_timestamp", "_runtime")} for r in got]
    assert [r["_step"] for r in got] == [r["_step"] for r in want], (got, want)
    for g, w in zip(got, want):
        assert set(g) == set(w) and all(_same(g[k], w[k]) for k in w), (g, w)


def _wandb_rows(tmp_path, monkeypatch):
    import wandb

    from rlcockpit.integrations.wandb_log import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = wandb.init(mode="offline", project="p", dir=str(tmp_path))
    _calls(wandb, run)
    run.finish()
    wandb.teardown()
    return [{"_step": step, **{k: float(v) for k, v in row.items()}}
            for step, row in read_offline_run(tmp_path / "wandb")["rows"]]


def test_step_sync_and_nan_rows_match_wandb(tmp_path, monkeypatch):
    want = _wandb_rows(tmp_path / "wb", monkeypatch)
    assert want[3] == {"_step": 3, "val/acc": 0.9, "epoch": 1.0}  # what wandb itself wrote (step_sync)
    run = rlcockpit.init(project="p", dir=tmp_path / "s", health=False)
    _calls(rlcockpit, run)
    run.finish()
    (stored,) = rlcockpit.Api(dir=tmp_path / "s").runs("p")
    _rows_equal(list(stored.scan_history()), want)
    _rows_equal(stored.history(pandas=False), want)
    nan_row = [r for r in want if "loss" in r]
    _rows_equal(list(stored.scan_history(keys=["loss"])), [{"_step": r["_step"], "loss": r["loss"]} for r in nan_row])
    assert [r["_step"] for r in stored.scan_history(keys=["loss"], min_step=1, max_step=6)] == [1]
