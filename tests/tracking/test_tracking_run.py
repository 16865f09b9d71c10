"""The wandb-shaped write API and the read API, against a real SQLite store."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store import resolve_dir


def test_init_log_finish_reads_back(start, store_dir: Path) -> None:
    run = start(name="grpo-1", group="g", tags=["a", "b"], config={"actor": {"lr": 1e-5}, "api_key": "sk-123"})
    for step in range(5):
        run.log({"actor/pg_loss": 0.1 * step, "critic/score/mean": float(step)}, step=step)
    run.summary["best"] = 0.9
    run.finish()

    api = rlcockpit.Api(store_dir)
    (stored,) = api.runs("proj")
    assert (stored.id, stored.name, stored.project, stored.group, stored.tags) == (run.id, "grpo-1", "proj", "g", ["a", "b"])
    assert stored.status == "finished"
    assert stored.config["actor"] == {"lr": 1e-5}
    assert stored.config["api_key"] == "***"  # secrets never land in the store
    assert stored.summary["best"] == 0.9 and stored.summary["critic/score/mean"] == 4.0
    df = stored.history(["actor/pg_loss", "critic/score/mean"])
    assert list(df.index) == [0, 1, 2, 3, 4]
    assert df["critic/score/mean"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert api.runs("other") == []


def test_history_has_one_row_per_step_when_keys_are_logged_separately(start, store_dir: Path) -> None:
    run = start()
    run.log({"a": 1.0}, step=0)
    run.log({"b": 2.0}, step=0)
    run.log({"a": 3.0})  # default step: last + 1
    run.finish()
    df = rlcockpit.Api(store_dir).run(run.id).history()
    assert list(df.index) == [0, 1]
    assert df.loc[0, "a"] == 1.0 and df.loc[0, "b"] == 2.0 and df.loc[1, "a"] == 3.0
    assert math.isnan(df.loc[1, "b"])


def test_context_manager_and_module_level_api(start, store_dir: Path) -> None:
    with start(name="ctx") as run:
        rlcockpit.log({"x": 1.0})
        rlcockpit.log({"x": 2.0})
    assert rlcockpit.Api(store_dir).run("ctx").status == "finished"
    assert rlcockpit.Api(store_dir).run(run.id).history()["x"].tolist() == [1.0, 2.0]

    with pytest.raises(RuntimeError, match="no active run"):
        rlcockpit.log({"x": 3.0})

    with pytest.raises(ZeroDivisionError):
        with start(name="boom"):
            1 / 0  # noqa: B018
    boom = rlcockpit.Api(store_dir).run("boom")
    assert boom.status == "failed"
    assert "ZeroDivisionError" in boom.meta["end_reason"]

    start(name="modfinish")
    rlcockpit.log({"y": 1.0})
    rlcockpit.finish()
    assert rlcockpit.Api(store_dir).run("modfinish").status == "finished"


def test_samples_are_stored_one_row_per_sample_incrementally(start, store_dir: Path) -> None:
    run = start()
    run.log({"r": 1.0}, step=0)
    run.log_samples([{"prompt": "1+1=", "response": "2", "reward": 1.0, "uid": 7}], step=0)
    run.flush()
    api_run = rlcockpit.Api(store_dir).run(run.id)
    assert len(api_run.samples()) == 1  # visible before finish: written as they come
    run.log_samples([{"prompt": "2+2=", "response": "5", "reward": 0.0}, {"prompt": "3+3=", "response": "6"}], step=1)
    run.finish()
    rows = api_run.samples()
    assert [(r["step"], r["idx"], r["prompt"]) for r in rows] == [(0, 0, "1+1="), (1, 0, "2+2="), (1, 1, "3+3=")]
    assert rows[0]["uid"] == 7 and rows[2]["reward"] is None
    assert [r["response"] for r in api_run.samples(1)] == ["5", "6"]


def test_run_lookup_by_prefix_and_name(start, store_dir: Path) -> None:
    run = start(name="unique-name")
    run.finish()
    api = rlcockpit.Api(store_dir)
    assert api.run(run.id[:4]).id == run.id
    assert api.run("unique-name").id == run.id
    with pytest.raises(KeyError, match="no run"):
        api.run("does-not-exist")


def test_store_location_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RLCOCKPIT_DIR", raising=False)
    assert resolve_dir() == tmp_path / "rlcockpit"
    monkeypatch.setenv("RLCOCKPIT_DIR", str(tmp_path / "env"))
    assert resolve_dir() == tmp_path / "env"
    assert resolve_dir(tmp_path / "arg") == tmp_path / "arg"

    run = rlcockpit.init(project="p", system_interval=None, capture_meta=False, health=False)
    run.log({"a": 1.0})
    run.finish()
    assert (tmp_path / "env" / "rlcockpit.db").exists()
    assert [r.id for r in rlcockpit.Api().runs()] == [run.id]  # Api follows the same precedence
    assert not (tmp_path / "rlcockpit").exists()


def test_summary_is_refreshed_and_user_values_win(start, store_dir: Path) -> None:
    run = start()
    run.log({"loss": 2.0})
    run.log({"loss": 1.0})
    run.summary.update({"loss_best": 1.0})
    run.finish()
    assert run.summary["loss"] == 1.0
    stored = rlcockpit.Api(store_dir).run(run.id).summary
    assert stored == {"loss": 1.0, "loss_best": 1.0}


def test_unknown_logger_name_is_a_clear_error(start) -> None:
    with pytest.raises(ValueError, match="tensorbaord|tensorboard"):
        start(loggers=["rlcockpit", "tensorbaord"])
