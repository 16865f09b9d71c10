"""QA: W&B public-API reading code (docs.wandb.ai/guides/track/public-api-guide) against an rlcockpit store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import rlcockpit


def _project(start) -> list:
    runs = []
    for i, lr in enumerate([1e-3, 1e-4, 1e-5]):
        run = start(project="my-project", name=f"r{i}", tags=["base"] if i else ["best", "base"], job_type="train",
                    config={"lr": lr, "optimizer": {"name": "adam"}})
        for step in range(10):
            run.log({"loss": 1.0 / (step + 1) + i, "acc": step / 10})
        run.finish(exit_code=1 if i == 2 else 0)
        runs.append(run)
    return runs


def test_runs_by_entity_project_path_filters_and_order(start, store_dir: Path) -> None:
    runs = _project(start)
    api = rlcockpit.Api(store_dir)
    assert len(api.runs("my-entity/my-project")) == 3
    assert [r.name for r in api.runs("me/my-project", filters={"config.lr": 1e-4})] == ["r1"]
    assert [r.name for r in api.runs("my-project", filters={"state": "finished", "tags": {"$in": ["best"]}})] == ["r0"]
    assert {r.name for r in api.runs("my-project", filters={"$or": [{"config.lr": {"$lt": 5e-5}},
                                                                     {"display_name": {"$regex": "^r0"}}]})} == {"r0", "r2"}
    assert [r.name for r in api.runs("my-project", filters={"config.optimizer.name": "adam", "jobType": "train",
                                                             "summary_metrics.loss": {"$gte": 1.1}})] == ["r2", "r1"]
    assert [r.name for r in api.runs("my-project", order="+summary_metrics.loss")] == ["r0", "r1", "r2"]
    with pytest.raises(ValueError, match=r"\$near"):
        api.runs("my-project", filters={"config.lr": {"$near": 1}})
    run = api.run(f"my-entity/my-project/{runs[0].id}")
    assert (run.state, run.display_name, run.job_type, run.path[-1]) == ("finished", "r0", "train", runs[0].id)
    assert api.run(f"my-project/{runs[2].id}").state == "failed"


def test_scan_history_and_history_in_wandbs_shape(start, store_dir: Path) -> None:
    run = start()
    for step in range(100):
        row = {"loss": 1.0 / (step + 1)}
        if step % 10 == 0:
            row["val/acc"] = step / 100
        run.log(row)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    rows = list(stored.scan_history())
    assert all(r.pop("_runtime") == pytest.approx(r.pop("_timestamp") - run.start_time, abs=0.5) for r in rows)  # W&B columns
    assert len(rows) == 100 and rows[0] == {"_step": 0, "loss": 1.0, "val/acc": 0.0} and rows[1] == {"_step": 1, "loss": 0.5}
    val = list(stored.scan_history(keys=["val/acc"]))
    assert [r["_step"] for r in val] == list(range(0, 100, 10)) and set(val[0]) == {"_step", "val/acc"}
    assert [r["_step"] for r in stored.scan_history(min_step=10, max_step=13)] == [10, 11, 12]
    df = stored.history(samples=20)
    assert isinstance(df, pd.DataFrame) and len(df) == 20 and df["_step"].iloc[0] == 0 and df["_step"].iloc[-1] == 99
    last = stored.history(pandas=False, samples=5)[-1]
    assert {k: v for k, v in last.items() if k not in ("_runtime", "_timestamp")} == {"_step": 99, "loss": 0.01}
    assert list(stored.history().index[:2]) == [0, 1]  # rlcockpit's own shape is unchanged without W&B's arguments
