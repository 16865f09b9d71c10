"""W&B tables in offline runs (``files/media/table/*.table.json``), imported as samples.

QA: TRL's GRPOTrainer with ``report_to="wandb"``, ``log_completions=True`` logs its completions table as a W&B
table file; ``rlcockpit import`` of that run imported the metrics and no samples (and the table reference's
``completions/size``/``nrows``/``ncols`` as metrics)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from integrations_support import tiny_qwen2_dir

from rlcockpit.integrations.importer import import_run
from rlcockpit.store import open_store


@pytest.fixture(scope="module")
def user_tables_run(tmp_path_factory) -> Path:
    """A W&B user's run, written by real wandb 0.31 offline: a text table, an incremental table (one file per
    increment), a table under a nested key, an image, and metrics."""
    import numpy as np
    import wandb

    root = tmp_path_factory.mktemp("wb")
    run = wandb.init(mode="offline", project="evals", dir=str(root), settings=wandb.Settings(console="off"))
    run.log({"loss": 1.0, "evals": wandb.Table(columns=["question", "answer", "score"],
                                                data=[["q1", "a1", 0.5], ["q2", "a2", None]])}, step=1)
    inc = wandb.Table(columns=["prompt", "completion"], log_mode="INCREMENTAL")
    inc.add_data("p1", "r1")
    run.log({"gen": inc, "loss": 0.9}, step=2)
    inc.add_data("p2", "r2")
    run.log({"gen": inc, "loss": 0.8}, step=3)
    run.log({"img": wandb.Image(np.zeros((4, 4, 3), dtype=np.uint8)), "loss": 0.5}, step=4)
    run.log({"val": {"tab": wandb.Table(columns=["a"], data=[["x"]])}, "loss": 0.4}, step=5)
    run.finish()
    wandb.teardown()
    return root / "wandb"


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "wandb"
    shutil.copytree(src, dst, symlinks=True)
    return dst


def test_user_tables_become_samples_and_media_keys_are_no_metrics(user_tables_run: Path, tmp_path: Path) -> None:
    res = import_run(str(user_tables_run), dir=tmp_path / "s", health=False)
    assert res.ok and not res.problems, res
    store = open_store(tmp_path / "s")
    assert store.keys(res.run_id) == ["loss"]  # not img/width, gen/nrows, evals/size...
    assert store.sample_steps(res.run_id) == [1, 2, 3, 5]
    evals = store.samples(res.run_id, step=1)
    assert [(r["question"], r["answer"], r["score"], r["table"]) for r in evals] == [
        ("q1", "a1", 0.5, "evals"), ("q2", "a2", None, "evals")]
    # an incremental table's file holds only that step's new rows: each step gets its own
    assert [(r["prompt"], r["response"]) for s in (2, 3) for r in store.samples(res.run_id, step=s)] == [
        ("p1", "r1"), ("p2", "r2")]
    assert store.samples(res.run_id, step=5)[0]["table"] == "val/tab"
    assert res.sample_rows == 5


@pytest.mark.parametrize("damage", ["truncate", "delete", "not-a-table"])
def test_a_damaged_table_file_is_named_and_loses_nothing_else(user_tables_run: Path, tmp_path: Path,
                                                             damage: str) -> None:
    src = _copy(user_tables_run, tmp_path)
    (bad,) = src.glob("offline-run-*/files/media/table/evals_*.table.json")
    if damage == "truncate":
        bad.write_bytes(bad.read_bytes()[:30])
    elif damage == "delete":
        bad.unlink()
    else:
        bad.write_text('{"rows": []}')
    res = import_run(str(src), dir=tmp_path / "s", health=False)
    assert res.ok and res.steps == 5
    (problem,) = res.problems
    assert str(bad) in problem and "'evals'" in problem and "step 1" in problem
    assert {"truncate": "cut off", "delete": "missing", "not-a-table": "not a W&B table"}[damage] in problem
    store = open_store(tmp_path / "s")
    assert store.sample_steps(res.run_id) == [2, 3, 5]  # the other tables
    assert len(store.series(res.run_id, "loss")[0]) == 5  # every metric
    (lost,) = store.events(res.run_id, "data_lost")
    assert lost["payload"]["what"] == "samples" and lost["payload"]["reason"] == "source_damaged"
    assert lost["payload"]["ranges"] == [[1, 1]] and str(bad) in lost["payload"]["message"]
    assert store.get_run(res.run_id)["meta"]["import_problems"] == [problem]


def test_a_table_row_that_does_not_fit_its_columns_loses_only_that_row(user_tables_run: Path, tmp_path: Path) -> None:
    src = _copy(user_tables_run, tmp_path)
    (path,) = src.glob("offline-run-*/files/media/table/evals_*.table.json")
    table = json.loads(path.read_text())
    table["data"].insert(1, ["only one cell"])
    path.write_text(json.dumps(table))
    res = import_run(str(src), dir=tmp_path / "s", health=False)
    assert res.ok and len(res.problems) == 1 and "row 1" in res.problems[0] and str(path) in res.problems[0]
    assert [r["question"] for r in open_store(tmp_path / "s").samples(res.run_id, step=1)] == ["q1", "q2"]


@pytest.mark.slow
def test_trl_grpo_completions_table_imports_as_the_callback_stores_it(tmp_path: Path, monkeypatch) -> None:
    """The real input: TRL 1.16 GRPOTrainer, ``report_to="wandb"`` offline, ``log_completions=True``, two
    reward functions with ``reward_weights``; the same run also through ``CockpitCallback``. The imported
    samples are the callback's rows, step by step."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlcockpit.integrations.trl import CockpitCallback

    model = tiny_qwen2_dir(tmp_path / "tiny-qwen2")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")  # no stdout/stderr hooks left behind for later tests' runs
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"how many apples {i}"}] for i in range(16)]})

    def reward_len(completions, **kwargs):
        return [-abs(20 - len(c[0]["content"])) for c in completions]

    def reward_digits(completions, **kwargs):
        return [float(sum(ch.isdigit() for ch in c[0]["content"])) for c in completions]

    args = GRPOConfig(output_dir="out", max_steps=3, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, logging_steps=1, report_to="wandb", use_cpu=True, bf16=False,
                      log_completions=True, reward_weights=[1.0, 0.5])
    trainer = GRPOTrainer(model=model, reward_funcs=[reward_len, reward_digits], args=args, train_dataset=dataset)
    cb = CockpitCallback(dir=tmp_path / "live")
    trainer.add_callback(cb)
    trainer.train()
    import wandb

    wandb.finish()  # transformers leaves wandb.run open: a later test's trainer would reuse the torn-down run
    wandb.teardown()
    assert list(tmp_path.glob("wandb/offline-run-*/files/media/table/completions_*.table.json"))

    res = import_run(str(tmp_path / "wandb"), dir=tmp_path / "imported", health=False)
    assert res.ok and not res.problems, res
    imported, live = open_store(tmp_path / "imported"), open_store(tmp_path / "live")
    assert imported.sample_steps(res.run_id) == live.sample_steps(cb.run.id) == [1, 2, 3]
    for step in (1, 2, 3):
        ours = imported.samples(res.run_id, step=step)
        theirs = live.samples(cb.run.id, step=step)
        assert len(ours) == len(theirs) == 4
        for a, b in zip(ours, theirs):
            assert set(a) == set(b), (sorted(a), sorted(b))
            assert a["prompt"] == b["prompt"] and a["response"] == b["response"]
            assert a["prompt"].startswith("user: how many apples") and a["response"].startswith("assistant: ")
            for k in ("reward", "rewards/reward_len", "rewards/reward_digits", "advantage"):
                assert a[k] == pytest.approx(b[k]), k
            assert a["reward"] == pytest.approx(a["rewards/reward_len"] + 0.5 * a["rewards/reward_digits"])
    assert not [k for k in imported.keys(res.run_id) if k.startswith("completions/")]


def test_verl_val_generations_table_imports_each_sample_once(tmp_path: Path) -> None:
    """verl's ValidationGenerationsLogger (verl/utils/tracking.py) logs ``val/generations`` as a new
    ``wandb.Table(columns=["step", "input_1", "output_1", "score_1", ...], data=old.data)`` plus one row per
    validation step, so each file repeats every earlier row; each validation sample is imported once, at its
    step, as a prompt/response/reward row."""
    import wandb

    run = wandb.init(mode="offline", project="verl", dir=str(tmp_path), settings=wandb.Settings(console="off"))
    columns = ["step"] + sum([[f"input_{i + 1}", f"output_{i + 1}", f"score_{i + 1}"] for i in range(2)], [])
    table = wandb.Table(columns=columns)
    for step in (5, 10, 15):  # the same calls as verl's _log_generations_to_wandb
        new_table = wandb.Table(columns=columns, data=table.data)
        new_table.add_data(step, f"q{step}a", f"r{step}a", 1.0, f"q{step}b", f"r{step}b", 0.0)
        run.log({"val-core/openai/gsm8k/reward/mean@1": step / 20, "val/generations": new_table}, step=step)
        table = new_table
    run.finish()
    wandb.teardown()
    res = import_run(str(tmp_path / "wandb"), dir=tmp_path / "s", health=False)
    assert res.ok and not res.problems, res
    store = open_store(tmp_path / "s")
    assert store.sample_steps(res.run_id) == [5, 10, 15] and res.sample_rows == 6
    got = [(r["step"], r["prompt"], r["response"], r["reward"], r["split"]) for r in store.samples(res.run_id)]
    assert sorted(got) == sorted([(s, f"q{s}{x}", f"r{s}{x}", sc, "val") for s in (5, 10, 15)
                                  for x, sc in (("a", 1.0), ("b", 0.0))])


def test_a_table_of_ids_and_scores_is_no_evidence_of_empty_generations(tmp_path: Path) -> None:
    """A W&B user's evaluation table (ids, scores, labels: no model output) imported with health on: it was
    stored as samples without responses, and the sample check warned "empty (100% of responses)"."""
    import wandb

    run = wandb.init(mode="offline", project="evals", dir=str(tmp_path), settings=wandb.Settings(console="off"))
    for step in range(30):
        run.log({"train/reward": 0.1 * (step % 5), "actor/entropy": 1.0}, step=step)
        if step % 10 == 0:
            run.log({"eval": wandb.Table(columns=["id", "score", "label"],
                                         data=[[i, 0.1 * i + step, "a"] for i in range(8)])}, step=step)
    run.finish()
    wandb.teardown()
    res = import_run(str(tmp_path / "wandb"), dir=tmp_path / "s", health=True)
    assert res.ok and res.sample_rows == 24, res
    findings = open_store(tmp_path / "s").findings(res.run_id)
    assert not [f for f in findings if f["detector"] == "sample_degeneration"], findings
