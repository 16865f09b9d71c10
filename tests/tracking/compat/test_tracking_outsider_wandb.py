"""W&B users' calls nobody here wrote (docs/qa/outsider-inputs.md), run with ``import rlcockpit as wandb``:
W&B's tags guide, artifacts guide, log-summary guide, public-API export snippet, ``wandb.plot`` presets,
``wandb.alert`` with ``AlertLevel``. Each test failed before its fix; where W&B itself can run offline the
expected values come from real wandb 0.31."""

from __future__ import annotations

import datetime
import time
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


def test_name_tags_notes_group_set_after_init_are_stored(start, store_dir: Path) -> None:
    # docs.wandb.ai/guides/runs/tags: `run.tags = run.tags + ("release_candidate",)` (tags are a tuple);
    # sweep programs: `wandb.run.name = f"lr-{lr}"`. Before: TypeError (list + tuple), and the name was lost.
    run = start(tags=["debug"], notes="first")
    run.log({"loss": 1.0})
    run.tags = run.tags + ("release_candidate",)
    run.tags += ("x",)
    wandb.run.name = "lr-0.01"
    run.notes = "second"
    run.group = "g"
    assert run.tags == ("debug", "release_candidate", "x") and run.name == "lr-0.01"
    with pytest.raises(TypeError, match="run.tags"):
        run.tags = "not-a-sequence"
    with pytest.raises(TypeError, match="run.name"):
        run.name = 5
    run.log({"loss": 0.5})
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert (stored.name, stored.tags, stored.notes, stored.group) == ("lr-0.01", ["debug", "release_candidate", "x"],
                                                                       "second", "g")
    assert stored.last_step == 1  # the data around the renames is all there


def test_resume_with_new_group_and_tags_stores_them(start, store_dir: Path) -> None:
    # docs/tracking.md promised "group/tags are kept unless you pass new ones"; new ones were not stored
    first = start(id="job-42", tags=["a"], group="g1")
    first.log({"loss": 1.0})
    first.finish(1)
    again = start(id="job-42", resume="allow", tags=["resumed"], group="g2")
    assert again.resumed and again.tags == ("resumed",)
    again.finish()
    stored = rlcockpit.Api(store_dir).run("job-42")
    assert stored.tags == ["resumed"] and stored.group == "g2"


def test_artifact_new_file_add_table_save_and_log_model(start, store_dir: Path, tmp_path: Path, monkeypatch) -> None:
    # docs.wandb.ai/models/artifacts/construct-an-artifact: add_file(local_path=, name=), new_file(...),
    # artifact.add(table, name); run.log_model / use_model. Before: AttributeError at new_file.
    monkeypatch.chdir(tmp_path)
    Path("dataset.h5").write_bytes(b"x" * 100)
    Path("model").mkdir()
    Path("model/weights.bin").write_bytes(b"w" * 10)
    run = start(job_type="upload-dataset")
    art = wandb.Artifact(name="bicycle-dataset", type="dataset")
    art.add_file(local_path="dataset.h5", name="training_dataset")
    with art.new_file("notes.txt", mode="w") as f:
        f.write("collected 2026-12")
    with pytest.raises(ValueError, match="already has a file 'notes.txt'"):
        with art.new_file("notes.txt", mode="w"):
            pass
    table = wandb.Table(columns=["prompt", "answer"], data=[["1+2=", "3"]])
    art.add(table, "eval_table")
    with pytest.raises(TypeError, match="only a Table"):
        art.add({"not": "a table"}, "x")
    with pytest.raises(ValueError, match="only file:// references"):
        art.add_reference("s3://bucket/data")
    version = art.save()  # W&B's artifact.save(): logged on the current run
    assert version.wait() is version and art.wait() is art
    model = run.log_model(path="model", name="my-model")
    assert model.type == "model"
    used = run.use_artifact("bicycle-dataset:latest")
    root = used.download(root=tmp_path / "dl")
    assert sorted(p.name for p in root.iterdir()) == ["eval_table.table.json", "notes.txt", "training_dataset"]
    assert (root / "notes.txt").read_text() == "collected 2026-12"
    import json

    assert json.loads((root / "eval_table.table.json").read_text())["data"] == [["1+2=", "3"]]
    assert Path(run.use_model("my-model:latest"), "weights.bin").read_bytes() == b"w" * 10
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert [v.name for v in stored.logged_artifacts()] == ["bicycle-dataset", "my-model"]
    assert {v.name for v in stored.used_artifacts()} == {"bicycle-dataset", "my-model"}


def test_public_api_writes_back_summary_tags_name_config(start, store_dir: Path) -> None:
    # docs.wandb.ai/models/track/log/log-summary: api.run(path); run.summary["x"] = ...; run.summary.update().
    # docs.wandb.ai/guides/runs/tags: run.tags.append("tag1"); run.update(). Before: the summary change was
    # silently dropped, run.update() was an AttributeError.
    run = start(tags=["a"], config={"lr": 0.1})
    run.log({"acc": 0.5})
    api = rlcockpit.Api(store_dir)
    live = api.run(f"me/proj/{run.id}")
    live.summary["late"] = 1.0
    with pytest.raises(RuntimeError, match="is running"):
        live.summary.update()  # the run's own writer owns its summary while it runs
    run.finish()
    stored = api.run(f"me/proj/{run.id}")
    stored.summary["best_accuracy"] = 0.9
    stored.summary.update()
    stored.tags.append("tag1")
    stored.config["dataset"] = "gsm8k"
    stored.config["hf_token"] = "hf_abcdefghijklmnopqrstuvwxyz123456"  # masked on the way in, as at init
    stored.name = "renamed"
    stored.update()
    again = api.run(run.id)
    assert again.summary["best_accuracy"] == 0.9 and again.summary["acc"] == 0.5
    assert again.tags == ["a", "tag1"] and again.name == "renamed" == again.display_name
    assert again.config == {"lr": 0.1, "dataset": "gsm8k", "hf_token": "***"}
    # W&B's "export runs" snippet
    summary_list = [r.summary._json_dict for r in api.runs("me/proj")]
    assert summary_list == [{"acc": 0.5, "best_accuracy": 0.9}]
    assert again.summary_metrics == summary_list[0] and again.lastHistoryStep == 0


def test_plot_presets_keep_their_tables_with_wandbs_columns(start, store_dir: Path) -> None:
    # docs.wandb.ai custom charts: wandb.plot.line / scatter / bar / histogram / line_series / confusion_matrix
    # / roc_curve / pr_curve. Before: AttributeError: module 'rlcockpit' has no attribute 'plot'.
    run = start()
    table = wandb.Table(data=[[x, x * x] for x in range(4)], columns=["x", "y"])
    wandb.log({"my_line": wandb.plot.line(table, "x", "y", title="squares")})
    wandb.log({"scatter": wandb.plot.scatter(table, "x", "y"), "bar": wandb.plot.bar(table, "x", "y"),
               "hist": wandb.plot.histogram(table, "y")})
    cm = wandb.plot.confusion_matrix(y_true=[0, 1, 1, 2], preds=[0, 1, 2, 2], class_names=["a", "b", "c"])
    # the rows real wandb 0.31 builds for these arguments
    assert cm.columns == ["Actual", "Predicted", "nPredictions"]
    assert cm.data == [["a", "a", 1], ["a", "b", 0], ["a", "c", 0], ["b", "a", 0], ["b", "b", 1], ["b", "c", 1],
                       ["c", "a", 0], ["c", "b", 0], ["c", "c", 1]]
    series = wandb.plot.line_series(xs=[0, 1, 2], ys=[[1, 2, 3], [3, 2, 1]], keys=["up", "down"], xname="epoch")
    assert series.columns == ["step", "lineKey", "lineVal"] and series.data[:3] == [[0, "up", 1], [1, "up", 2],
                                                                                     [2, "up", 3]]
    probas = [[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.6, 0.4]]
    roc, pr = wandb.plot.roc_curve([0, 1, 1, 0], probas), wandb.plot.pr_curve([0, 1, 1, 0], probas)
    assert roc.columns == ["class", "fpr", "tpr"] and pr.columns == ["class", "precision", "recall"]
    wandb.log({"cm": cm, "series": series, "roc": roc})
    with pytest.raises(ValueError, match="column 'z' is not in"):
        wandb.plot.line(table, "x", "z")
    with pytest.raises(TypeError, match="must be a Table"):
        wandb.plot.scatter([[1, 2]], "x", "y")
    run.finish()
    rows = rlcockpit.Api(store_dir).run(run.id).samples(limit=1000)
    by_table: dict = {}
    for r in rows:
        by_table.setdefault(r["table"], []).append(r)
    assert {k: len(v) for k, v in by_table.items()} == {"my_line": 4, "scatter": 4, "bar": 4, "hist": 4, "cm": 9,
                                                        "series": 6, "roc": len(roc.data)}
    assert by_table["my_line"][3]["y"] == 9 and by_table["cm"][5]["nPredictions"] == 1


def test_alert_with_wandb_levels_and_wait_duration(start) -> None:
    # docs.wandb.ai/guides/runs/alert: wandb.alert(title=, text=, level=wandb.AlertLevel.WARN,
    # wait_duration=timedelta(minutes=5)). Before: AttributeError (AlertLevel), TypeError (wait_duration).
    run = start()
    sent = []
    run.on_alert(lambda title, text, level: sent.append((title, level)))
    wandb.alert(title="Low accuracy", text="acc 0.1 < 0.5", level=wandb.AlertLevel.WARN,
                wait_duration=datetime.timedelta(minutes=5))
    wandb.alert(title="Low accuracy", text="again", level=wandb.AlertLevel.WARN, wait_duration=300)
    wandb.alert(title="Diverged", text="loss nan", level="ERROR")
    wandb.alert(title="fyi", text="", level=wandb.AlertLevel.INFO)
    with pytest.raises(ValueError, match="alert level 'loud'"):
        wandb.alert(title="x", text="", level="loud")
    assert sent == [("Low accuracy", "warning"), ("Diverged", "critical"), ("fyi", "info")]
    run.flush()
    events = [e["payload"] for e in run.store.events(run.id, "alert")]
    assert [(e["title"], e.get("suppressed", False)) for e in events] == [
        ("Low accuracy", False), ("Low accuracy", True), ("Diverged", False), ("fyi", False)]


def test_settings_media_and_run_attributes_are_accepted(start, store_dir: Path, caplog) -> None:
    # wandb.init(settings=wandb.Settings(...)); wandb.Html / Video / Audio / Object3D in log(); run.start_time,
    # run.sweep_id, run.offline. Before: AttributeError for each.
    before = time.time()
    run = start(settings=wandb.Settings(start_method="thread", console="off"))
    assert before <= run.start_time <= time.time() and run.sweep_id is None and run.offline is True
    with caplog.at_level("WARNING", logger="rlcockpit"):
        wandb.log({"page": wandb.Html("<b>hi</b>"), "clip": wandb.Video(np.zeros((2, 3, 4, 4), np.uint8)),
                   "sound": wandb.Audio(np.zeros(100), sample_rate=16000), "acc": 0.5})
        run.flush()
    run.finish()
    assert rlcockpit.Api(store_dir).run(run.id).summary == {"acc": 0.5}
    text = caplog.text
    assert all(f"'{k}' rejected" in text for k in ("page", "clip", "sound")), text


def test_table_rows_are_read_when_logged_and_incremental_tables_log_new_rows(start, store_dir: Path) -> None:
    # a W&B script that keeps one table and logs it as it grows (W&B: log_mode="INCREMENTAL" logs only the new
    # rows; otherwise the table as it is at that log). Before: rows were read later, on the writer thread, so
    # step 1 held rows added after it was logged; an Image cell was stored as "<...Image object at 0x...>"
    run = start()
    grow = wandb.Table(columns=["epoch", "pred"])
    inc = wandb.Table(columns=["epoch", "img", "arr"], log_mode="INCREMENTAL")
    for epoch in range(3):
        grow.add_data(epoch, f"p{epoch}")
        inc.add_data(epoch, wandb.Image(np.zeros((2, 2, 3), np.uint8), caption=f"c{epoch}"), np.arange(epoch + 1))
        run.log({"grow": grow, "inc": inc, "loss": 1.0 / (epoch + 1)})
        grow.add_data(99, "added after the log")  # must not show up at this step
        grow.data.pop()
    with pytest.raises(ValueError, match="log_mode='SOMETIMES'"):
        wandb.Table(columns=["a"], log_mode="SOMETIMES")
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    for step in range(3):
        rows = stored.samples(step=step)
        assert [r["pred"] for r in rows if r["table"] == "grow"] == [f"p{e}" for e in range(step + 1)]
        inc_rows = [r for r in rows if r["table"] == "inc"]
        assert [(r["epoch"], r["img"]["caption"], r["arr"]) for r in inc_rows] == [(step, f"c{step}",
                                                                                    list(range(step + 1)))]
        assert inc_rows[0]["img"]["_type"] == "image-file"  # the image itself is stored (issue 28)


def test_a_table_without_model_outputs_raises_no_sample_findings(start, store_dir: Path) -> None:
    # a W&B user's predictions table (no response/completion column), with the detectors on. Before: its empty
    # "responses" were analysed: a CRITICAL sample_degeneration finding ("empty (100% of responses)") with
    # KL advice, for a table of ids and scores
    run = start(health=True)
    for _ in range(4):
        table = wandb.Table(columns=["id", "label", "score"], data=[[i, i % 3, 0.5] for i in range(16)])
        run.log({"preds": table, "acc": 0.5})
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert len(stored.samples(limit=100)) == 64
    assert [f["detector"] for f in stored.findings()] == []
    assert not [k for k in stored.keys() if k.startswith("samples/")]


def test_arrays_of_more_than_32_values_are_logged_as_histograms(start, store_dir: Path, caplog) -> None:
    # W&B logs a numpy array / torch tensor of more than 32 values as a histogram (wandb/util.py
    # maybe_compress_history); before, rlcockpit rejected the key. 32 values or fewer: a list, as W&B logs them.
    import torch

    grads = np.linspace(-1.0, 3.0, 101)
    run = start()
    with caplog.at_level("WARNING", logger="rlcockpit"):
        run.log({"grads": grads, "weights": torch.ones(8, 8), "few": np.arange(5), "acc": 0.5})
        run.flush()
    run.finish()
    summary = rlcockpit.Api(store_dir).run(run.id).summary
    assert summary["grads/mean"] == pytest.approx(1.0) and summary["grads/min"] == -1.0 and summary["grads/max"] == 3.0
    assert summary["weights/mean"] == 1.0 and summary["weights/std"] == 0.0
    assert summary["few"] == [0, 1, 2, 3, 4] and "rejected" not in caplog.text


def test_wandb_environment_variables_give_init_defaults(start, store_dir: Path, monkeypatch) -> None:
    # a W&B launch script: `export WANDB_PROJECT=... WANDB_RUN_GROUP=... WANDB_TAGS=a,b` then `wandb.init()`
    # (docs.wandb.ai "Environment variables"). Before: the run landed in project "default", untagged.
    for k, v in {"WANDB_PROJECT": "from-env", "WANDB_NAME": "env-run", "WANDB_RUN_GROUP": "ddp",
                 "WANDB_TAGS": "a, b", "WANDB_NOTES": "note", "WANDB_JOB_TYPE": "train", "WANDB_ENTITY": "me"
                 }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("RLCOCKPIT_PROJECT", raising=False)
    run = start(project=None)
    assert (run.project, run.name, run.group, run.tags, run.notes) == ("from-env", "env-run", "ddp", ("a", "b"), "note")
    assert run.job_type == "train" and run.entity == "me"
    run.finish()
    explicit = start(project="mine", name="n", tags=["t"])  # arguments win over the environment
    assert (explicit.project, explicit.name, explicit.tags) == ("mine", "n", ("t",))
    explicit.finish()
    monkeypatch.setenv("RLCOCKPIT_PROJECT", "ours")  # and rlcockpit's own variable over W&B's
    assert start(project=None).project == "ours"


def test_config_file_and_config_defaults_yaml_as_wandb_reads_them(start, store_dir: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    # docs.wandb.ai "Configure experiments": ./config-defaults.yaml (`key: {desc: ..., value: ...}`) is loaded
    # into every run's config; `wandb.init(config="params.yaml")` reads that file. Before: the defaults were
    # ignored (wandb.config.batch_size an AttributeError) and a str config a TypeError from vars().
    monkeypatch.chdir(tmp_path)
    Path("config-defaults.yaml").write_text("wandb_version: 1\nepochs:\n  desc: passes\n  value: 100\n"
                                            "batch_size:\n  value: 32\n")
    Path("params.yaml").write_text("lr:\n  desc: learning rate\n  value: 0.001\n")
    run = start(config={"batch_size": 64})
    assert (wandb.config.epochs, wandb.config.batch_size) == (100, 64)  # init's config wins over the defaults
    from_file = start(config="params.yaml", reinit="create_new")
    assert dict(from_file.config) == {"epochs": 100, "batch_size": 32, "lr": 0.001}
    Path("plain.yaml").write_text("lr: 0.1\n")
    with pytest.raises(ValueError, match=r"plain.yaml: key 'lr' must be \{value: ..., desc: ...\}"):
        start(config="plain.yaml")
    with pytest.raises(FileNotFoundError, match="missing.yaml does not exist"):
        start(config="missing.yaml")
    run.finish()
    assert rlcockpit.Api(store_dir).run(run.id).config == {"epochs": 100, "batch_size": 64}


def test_public_api_time_filters_and_wandb_history_columns(start, store_dir: Path) -> None:
    # W&B's public-API guide: runs created in a window, `{"$and": [{"created_at": {"$lt": "YYYY-MM-DDT##",
    # "$gt": "YYYY-MM-DDT##"}}]}` (ISO text); `scan_history(keys=["_step", "loss"])`, `_timestamp`/`_runtime`.
    # Before: the ISO filter silently matched nothing, and keys naming W&B's own columns gave no rows at all.
    run = start()
    for i in range(3):
        run.log({"loss": 1.0 / (i + 1), "acc": i / 3})
    run.finish()
    api = rlcockpit.Api(store_dir)
    created = api.run(run.id).created_at
    day = time.strftime("%Y-%m-%d", time.gmtime(created))
    window = {"$and": [{"created_at": {"$gt": f"{day}T00", "$lt": f"{day}T99"}}]}
    assert [r.id for r in api.runs("me/proj", window)] == [run.id]
    assert api.runs("me/proj", {"created_at": {"$lt": "2020-01-01T00:00:00"}}) == []
    assert [r.id for r in api.runs("me/proj", {"created_at": {"$gt": created - 1}})] == [run.id]  # numbers still work
    stored = api.run(run.id)
    assert list(stored.scan_history(keys=["_step", "loss"])) == [{"_step": 0, "loss": 1.0}, {"_step": 1, "loss": 0.5},
                                                                 {"_step": 2, "loss": 1 / 3}]
    rows = list(stored.scan_history(keys=["_timestamp", "_runtime", "acc"]))
    assert [r["_step"] for r in rows] == [0, 1, 2] and all(r["_timestamp"] >= created for r in rows)
    assert all(r["_runtime"] == pytest.approx(r["_timestamp"] - created) for r in rows)
    assert list(stored.scan_history(keys=["_step"])) == [{"_step": 0}, {"_step": 1}, {"_step": 2}]
    assert rlcockpit.Api(store_dir).default_entity is None and api.flush() is None


def test_rest_of_wandbs_module_namespace(start, store_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    # W&B's resuming guide: `id = wandb.util.generate_id()`, `wandb.init(id=id, resume="allow")`; multiprocessing
    # scripts: `wandb.require("service")`, `wandb.setup()`; `except wandb.errors.CommError`; `wandb.termlog`;
    # module-level `wandb.log_model` / `use_model`, `wandb.mark_preempting()`, `wandb.unwatch()`, `wandb.teardown()`.
    # Before: AttributeError at each.
    wandb.require("service")
    wandb.setup()
    run_id = wandb.util.generate_id()
    assert len(run_id) == 8 and run_id.isalnum() and run_id == run_id.lower()
    first = start(id=run_id, resume="allow")
    first.log({"loss": 1.0})
    wandb.mark_preempting()
    wandb.unwatch()
    monkeypatch.chdir(tmp_path)
    Path("ckpt").mkdir()
    Path("ckpt/w.bin").write_bytes(b"1")
    wandb.log_model("ckpt", name="policy")
    assert Path(wandb.use_model("policy:latest"), "w.bin").read_bytes() == b"1"
    wandb.termlog("saved")
    assert "saved" in capsys.readouterr().err
    wandb.teardown()  # finishes the current run
    assert wandb.run is None
    again = start(id=run_id, resume="allow")
    assert again.resumed and again.step == 0
    with pytest.raises(wandb.errors.UsageError, match="no W&B cloud"):
        wandb.restore("model.h5")
    assert issubclass(wandb.errors.CommError, wandb.Error)


def test_filters_on_nested_config_in_wandbs_value_form(start, store_dir: Path) -> None:
    # W&B keeps each config key as {"value": ...}: nested filters read config.optimizer.value.name.
    # Before: only a trailing ".value" was understood, so this filter matched nothing (silently).
    run = start(config={"optimizer": {"name": "adam", "betas": [0.9, 0.99]}, "lr": 0.01})
    run.finish()
    other = start(config={"optimizer": {"name": "sgd"}, "sched": {"value": {"kind": "cos"}}})
    other.finish()
    api = rlcockpit.Api(store_dir)
    for flt, want in (({"config.optimizer.value.name": "adam"}, [run.id]), ({"config.optimizer.name": "sgd"},
                      [other.id]), ({"config.lr.value": 0.01}, [run.id]), ({"config.sched.value.kind": "cos"}, [other.id])):
        assert [r.id for r in api.runs("proj", filters=flt)] == want, flt


def test_sync_tensorboard_says_the_scalars_are_not_copied(start, caplog) -> None:
    # `wandb.init(sync_tensorboard=True)` (W&B's TensorBoard guide) copies SummaryWriter scalars into the run.
    # Before: accepted silently, so the scalars were missing from the run with no word; now one warning says
    # so and names the import command.
    with caplog.at_level("WARNING", logger="rlcockpit"):
        start(sync_tensorboard=True)
    assert "rlcockpit import <tensorboard log dir>" in caplog.text


def test_arrays_and_tensors_in_the_summary_as_wandb_stores_them(start, store_dir: Path) -> None:
    # docs.wandb.ai/models/track/log/log-summary: `run.summary["tensor"] = np.random.random(1000)` (W&B keeps
    # statistics); a 0-d torch tensor. Before: the array's str() (15 kB of text) and "tensor(0.2500)" were stored.
    import torch

    run = start()
    run.summary["tensor"] = np.arange(1000.0)
    run.summary["t"] = torch.tensor(0.25)
    run.summary["small"] = np.arange(3)
    run.summary["weights"] = torch.ones(50)
    run.finish()
    summary = rlcockpit.Api(store_dir).run(run.id).summary
    # what real wandb 0.31 offline holds in run.summary for the same values
    assert summary["tensor"] == {"_type": "numpy.ndarray", "var": 83333.25, "mean": 499.5, "min": 0.0, "max": 999.0,
                                 "10%": pytest.approx(99.9), "25%": 249.75, "75%": 749.25, "90%": pytest.approx(899.1),
                                 "size": 1000}
    assert summary["t"] == 0.25 and summary["small"] == [0, 1, 2]
    assert summary["weights"]["mean"] == 1.0 and summary["weights"]["size"] == 50


def test_live_summary_reads_logged_keys_and_del_removes_a_key(start, store_dir: Path) -> None:
    # W&B: `run.summary["loss"]` after `run.log({"loss": ...})` is the last value; `del run.summary["k"]`
    # removes k. Before: KeyError for every logged key mid-run, and a deleted key stayed in the stored summary.
    run = start()
    run.define_metric("acc", summary="max")
    run.log({"loss": 1.0, "acc": 0.9})
    run.log({"loss": 0.5, "acc": 0.4})
    run.summary["best_acc"] = 0.9
    run.summary["scratch"] = 1
    run.flush()
    assert run.summary["loss"] == 0.5 and run.summary["acc"] == {"max": 0.9} and "loss" in run.summary
    assert run.summary.get("missing", "dflt") == "dflt" and run.summary.get("best_acc") == 0.9
    with pytest.raises(KeyError):
        _ = run.summary["missing"]
    del run.summary["scratch"]
    del run.summary["loss"]
    run.flush()
    assert "scratch" not in run.summary and "loss" not in run.summary
    run.log({"acc": 0.95})
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id).summary
    assert stored == {"acc": {"max": 0.95}, "best_acc": 0.9}
