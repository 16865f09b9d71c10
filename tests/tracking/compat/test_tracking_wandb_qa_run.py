"""QA with W&B users' programs (docs/qa/wandb-trl-inputs.md): ``import rlcockpit as wandb`` must run the W&B
quickstart and docs snippets unchanged, with W&B's semantics, and store what they set."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from tracking_support import finish_current_run

import rlcockpit
import rlcockpit as wandb


@pytest.fixture(autouse=True)
def _no_current_run():
    yield
    finish_current_run()


def test_quickstart_config_attributes_and_updates_are_stored(start, store_dir: Path) -> None:
    # docs.wandb.ai/quickstart + docs.wandb.ai/guides/track/config: attribute access, update, setdefaults
    run = start(config={"learning_rate": 0.02, "architecture": "CNN", "epochs": 10})
    assert wandb.run is run and wandb.config is run.config
    assert wandb.config.learning_rate == 0.02 and run.config["epochs"] == 10
    wandb.config.update({"batch_size": 32})
    wandb.config.dropout = 0.2
    run.config["api_token"] = "hunter2"  # secrets stay masked after updates too
    run.config.update({"learning_rate": 0.01}, allow_val_change=True)
    run.config.setdefaults({"epochs": 99, "seed": 1})
    with pytest.raises(AttributeError, match="no key 'missing'"):
        _ = wandb.config.missing
    for epoch in range(3):
        wandb.log({"acc": 0.5 + epoch / 10, "loss": 1.0 - epoch / 10})
    wandb.summary["best_acc"] = 0.7
    run.finish()
    assert wandb.run is None
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.config == {"learning_rate": 0.01, "architecture": "CNN", "epochs": 10, "batch_size": 32,
                             "dropout": 0.2, "api_token": "***", "seed": 1}
    assert stored.summary["best_acc"] == 0.7


def test_commit_false_accumulates_into_one_step_as_in_wandb(start, store_dir: Path) -> None:
    # the equivalences in wandb.Run.log's docstring (wandb/sdk/wandb_run.py, wandb 0.31)
    run = start()
    run.log({"train-loss": 0.5}, commit=False)
    run.log({"accuracy": 0.8})
    run.log({"train-loss": 0.4}, commit=False)
    run.log({"accuracy": 0.9})
    run.log({"x": 1.0}, step=5, commit=False)
    run.log({"y": 2.0})
    run.log({"z": 3.0})
    run.finish()
    df = rlcockpit.Api(store_dir).run(run.id).history()
    assert df.loc[0, "train-loss"] == 0.5 and df.loc[0, "accuracy"] == 0.8
    assert df.loc[1, "train-loss"] == 0.4 and df.loc[1, "accuracy"] == 0.9
    assert df.loc[5, "x"] == 1.0 and df.loc[5, "y"] == 2.0 and df.loc[6, "z"] == 3.0
    assert list(df.index) == [0, 1, 5, 6]


def test_define_metric_summaries_have_wandbs_nested_shape(start, store_dir: Path) -> None:
    # docs.wandb.ai/guides/track/log/log-summary "Customize summary metrics"; shapes checked against wandb 0.31 offline
    run = start()
    wandb.define_metric("loss", summary="min")
    run.define_metric("acc", summary="max,mean")
    run.define_metric("val/*", step_metric="epoch")
    run.define_metric("score", summary="best", goal="maximize")
    run.define_metric("noise", summary="none")
    for loss, acc in [(3, 0.1), (1, 0.5), (2, 0.3)]:
        run.log({"loss": loss, "acc": acc, "score": acc, "noise": 1.0})
    run.log({"epoch": 1, "val/loss": 0.4})
    with pytest.raises(ValueError, match="summary 'median'"):
        run.define_metric("x", summary="median")
    with pytest.raises(ValueError, match="needs goal"):
        run.define_metric("x", summary="best")
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    s = stored.summary
    assert s["loss"] == {"min": 1.0}
    assert s["acc"] == {"max": 0.5, "mean": pytest.approx(0.3)}
    assert s["score"] == {"best": 0.5}
    assert "noise" not in s and s["val/loss"] == 0.4
    assert stored.meta["metrics"]["val/*"] == {"step_metric": "epoch"}


def test_wandb_init_arguments_are_accepted_and_kept(start, store_dir: Path) -> None:
    run = start(job_type="train", entity="my-team", mode="offline", reinit=True, settings=None, save_code=True,
                config={"a": 1, "b": 2, "c": 3}, config_exclude_keys=["c"])
    run.finish(exit_code=0, quiet=True)
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert (stored.job_type, stored.entity, stored.config) == ("train", "my-team", {"a": 1, "b": 2})
    with pytest.raises(TypeError, match="job_typo"):
        start(job_typo="x")


def test_reinit_finishes_the_previous_run(start, store_dir: Path) -> None:
    first = start(name="a")
    second = start(name="b", reinit=True)
    assert first.finished and not second.finished
    assert start(name="c", reinit="return_previous") is second


def test_resume_allow_with_an_id_continues_that_run(start, store_dir: Path) -> None:
    # docs.wandb.ai/guides/runs/resuming: wandb.init(id=..., resume="allow") in a preemptible job
    run = start(id="job-42", resume="allow")
    run.log({"loss": 1.0})
    run.finish(1)
    again = start(id="job-42", resume="allow")
    assert again.resumed and again.id == "job-42"
    again.log({"loss": 0.5})
    again.finish()
    assert rlcockpit.Api(store_dir).run("job-42").history()["loss"].tolist() == [1.0, 0.5]
    with pytest.raises(KeyError, match="no run with id 'nope'"):
        start(id="nope", resume="must")
    with pytest.raises(ValueError, match="exists already"):
        start(id="job-42", resume="never")
    fresh = start(resume=True, name="fresh")  # resume=True: W&B's "auto"
    assert not fresh.resumed


def test_mode_disabled_stores_nothing(store_dir: Path) -> None:
    run = wandb.init(project="p", dir=store_dir, mode="disabled", config={"lr": 0.1})
    assert run.config.lr == 0.1 and wandb.run is run
    run.log({"a": 1.0})
    wandb.log({"b": 2.0})
    run.define_metric("a", summary="max")
    run.summary["x"] = 1
    wandb.finish()
    assert wandb.run is None
    assert not (store_dir / "rlcockpit.db").exists()


def test_tables_histograms_images_in_log(start, store_dir: Path, caplog) -> None:
    run = start()
    table = wandb.Table(columns=["prompt", "completion", "reward"])
    table.add_data("1+2=", "3", 1.0)
    table.add_data("2+2=", "5", 0.0)
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run.log({"completions": table, "loss": 0.1})
        run.log({"grads": wandb.Histogram(np.array([1.0, 2.0, 3.0])), "pic": wandb.Image(np.zeros((2, 2)))})
        run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    rows = stored.samples(step=0)
    assert [(r["prompt"], r["response"], r["reward"], r["table"]) for r in rows] == [
        ("1+2=", "3", 1.0, "completions"), ("2+2=", "5", 0.0, "completions")]
    df = stored.history()
    assert df.loc[0, "loss"] == 0.1
    assert df.loc[1, "grads/mean"] == 2.0 and df.loc[1, "grads/max"] == 3.0 and df.loc[1, "grads/min"] == 1.0
    assert "pic" not in df.columns  # an image is no metric: it is a sample row of its step (issue 28)
    (pic,) = stored.samples(step=1)
    assert pic["table"] == "pic" and pic["image"]["_type"] == "image-file" and pic["image"]["width"] == 2
    assert not any("'pic'" in r.getMessage() for r in caplog.records)


def test_trl_completions_table_keeps_its_step_column_apart(start, store_dir: Path) -> None:
    # the columns TRL 1.16's GRPOTrainer.log puts in its wandb completions table (trl/trainer/grpo_trainer.py)
    import pandas as pd

    run = start()
    run.log({"reward": 0.5})
    df = pd.DataFrame({"step": [7, 7], "prompt": ["1+1=", "2+2="], "completion": ["2", "5"],
                       "accuracy_reward": [1.0, 0.0], "advantage": [0.7, -0.7]})
    run.log({"completions": wandb.Table(dataframe=df)}, commit=False)
    run.finish()
    rows = rlcockpit.Api(store_dir).run(run.id).samples(step=1)
    assert [(r["step"], r["table_step"], r["response"], r["advantage"]) for r in rows] == [(1, 7, "2", 0.7),
                                                                                         (1, 7, "5", -0.7)]

