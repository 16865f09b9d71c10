"""``rlcockpit import --kind csv``: metric histories saved as CSV — TRL's ``log_history`` through pandas, W&B's
chart export of several runs, a hand-written loop's log cut off or full of NaN — written to real files, imported
through the CLI into a real store and read back with the store's own reader."""

from __future__ import annotations

import csv
import json
import math

import pandas as pd
import pytest

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.readers import detect_kind
from rlcockpit.store import open_store

# a TRL GRPO log_history as trainer.state.log_history holds it: training logs every 2 steps, an evaluation at
# step 4 (its own entry, same step), the end-of-training summary at the last step
LOG_HISTORY = [
    {"loss": 0.01, "grad_norm": 0.5, "learning_rate": 1e-6, "reward": 0.10, "kl": 0.0, "completions/mean_length": 31.0,
     "epoch": 0.05, "step": 2},
    {"loss": 0.02, "grad_norm": 0.6, "learning_rate": 9e-7, "reward": 0.25, "kl": 0.002,
     "completions/mean_length": 35.5, "epoch": 0.1, "step": 4},
    {"eval_loss": 0.03, "eval_reward": 0.3, "eval_runtime": 1.5, "epoch": 0.1, "step": 4},
    {"loss": 0.03, "grad_norm": 0.7, "learning_rate": 8e-7, "reward": 0.40, "kl": 0.004,
     "completions/mean_length": 40.0, "epoch": 0.15, "step": 6},
    {"train_runtime": 12.5, "train_loss": 0.02, "total_flos": 0.0, "epoch": 0.15, "step": 6},
]


def _import(tmp_path, source, *args, capsys=None):
    rc = cli_main(["import", str(source), "--dir", str(tmp_path / "store"), "--json", *args])
    out = capsys.readouterr() if capsys else None
    return rc, out


def _series(store, run_id, key):
    steps, values = store.series(run_id, key)[:2]
    return list(steps), list(values)


def _write(path, header, rows):
    """A training loop's own log: the csv module, one row per step, as a script writes it."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def test_trl_log_history_saved_by_pandas_imports_one_step_per_logged_step(tmp_path, capsys):
    source = tmp_path / "log_history.csv"
    pd.DataFrame(LOG_HISTORY).to_csv(source)  # the user's line, index column included
    assert detect_kind(str(source)) == "csv"
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    assert rc == 0, out.err
    res = json.loads(out.out)
    assert res["kind"] == "csv" and res["error"] is None and res["problems"] == [] and res["notes"] == []
    assert res["steps"] == 3  # the distinct steps: the eval row and the summary merge into 4 and 6
    store = open_store(tmp_path / "store")
    run = store.get_run(res["run_id"])
    assert run["name"] == "log_history" and run["meta"]["step_column"] == "step"
    assert _series(store, run["id"], "reward") == ([2, 4, 6], [0.10, 0.25, 0.40])
    assert _series(store, run["id"], "eval_loss") == ([4], [0.03])  # empty cells elsewhere: not logged, not 0/NaN
    assert _series(store, run["id"], "train_runtime") == ([6], [12.5])
    assert _series(store, run["id"], "kl") == ([2, 4, 6], [0.0, 0.002, 0.004])  # TRL's key, stored as logged
    assert _series(store, run["id"], "completions/mean_length")[1] == [31.0, 35.5, 40.0]
    keys = set(store.keys(run["id"]))
    assert "step" not in keys and "" not in keys and "Unnamed: 0" not in keys  # neither the step nor pandas' index


def test_nan_and_inf_losses_are_kept_and_the_detectors_see_them(tmp_path, capsys):
    """A loop's log with ``nan``/``inf`` cells (``csv.writer`` writes Python's ``float('nan')`` as ``nan``): they
    are values, the empty cell beside them is not; TRL's ``loss`` reaches the non-finite detector via the alias."""
    rows = [[s, 0.5 - 0.01 * s, 1.0, 0.1 * s % 1] for s in range(1, 21)]
    rows += [[21, float("nan"), float("inf"), ""], [22, float("nan"), float("-inf"), 0.3]]
    source = tmp_path / "train_log.csv"
    _write(source, ["step", "loss", "grad_norm", "reward"], rows)
    assert "nan,inf," in source.read_text()
    rc, out = _import(tmp_path, source, capsys=capsys)
    assert rc == 0, out.err
    res = json.loads(out.out)
    assert res["steps"] == 22
    store = open_store(tmp_path / "store")
    steps, loss = _series(store, res["run_id"], "loss")
    assert steps[-2:] == [21, 22] and math.isnan(loss[-1]) and math.isnan(loss[-2])
    assert _series(store, res["run_id"], "grad_norm")[1][-2:] == [math.inf, -math.inf]
    assert 21 not in _series(store, res["run_id"], "reward")[0]  # the empty cell: not logged at 21
    assert "nonfinite" in {f["detector"] for f in store.findings(res["run_id"])}


def test_wandb_chart_export_of_two_runs_imports_the_first_or_the_one_asked_for(tmp_path, capsys):
    source = tmp_path / "wandb_export_2026-12-06.csv"
    header = ["Step"]
    for run in ("grpo-a", "grpo-b"):
        header += [f"{run} - train/reward", f"{run} - train/reward__MIN", f"{run} - train/reward__MAX"]
    _write(source, header, [[1, 0.1, 0.05, 0.15, 0.3, 0.3, 0.3],
                            [2, "", "", "", 0.4, 0.35, 0.45],
                            [3, 0.2, 0.2, 0.2, "", "", ""]])
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    assert rc == 0, out.err
    first = json.loads(out.out)
    assert first["steps"] == 2 and first["name"] == "grpo-a"
    assert len(first["notes"]) == 1 and "'grpo-a'" in first["notes"][0] and "--source-run" in first["notes"][0]
    store = open_store(tmp_path / "store")
    assert store.keys(first["run_id"]) == ["train/reward"]  # no __MIN/__MAX, no run prefix
    assert _series(store, first["run_id"], "train/reward") == ([1, 3], [0.1, 0.2])
    assert store.get_run(first["run_id"])["meta"]["import_notes"] == first["notes"]

    rc, out = _import(tmp_path, source, "--no-health", "--source-run", "grpo-b", capsys=capsys)
    second = json.loads(out.out)
    assert rc == 0 and second["name"] == "grpo-b" and "as asked" in second["notes"][0]
    assert _series(store, second["run_id"], "train/reward") == ([1, 2], [0.3, 0.4])

    before = len(store.list_runs())
    rc, out = _import(tmp_path, source, "--source-run", "grpo-c", capsys=capsys)
    assert rc == 2 and "no run 'grpo-c'" in out.err and "grpo-a, grpo-b" in out.err and str(source) in out.err
    assert len(store.list_runs()) == before  # nothing created


def test_a_last_line_cut_mid_number_keeps_its_complete_cells(tmp_path, capsys):
    source = tmp_path / "killed.csv"
    _write(source, ["iteration", "loss", "reward"], [[i, 0.5, 0.1 * i] for i in range(1, 6)])
    text = source.read_text()
    source.write_text(text + "6,0.4,0.6")  # the job was killed while writing "6,0.4,0.612\r\n"
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    assert rc == 0, out.err
    res = json.loads(out.out)
    assert res["steps"] == 6 and any("killed.csv:7" in n and "'0.6'" in n for n in res["notes"])
    store = open_store(tmp_path / "store")
    assert _series(store, res["run_id"], "loss")[0] == [1, 2, 3, 4, 5, 6]  # the cut row's complete cell kept
    assert _series(store, res["run_id"], "reward")[0] == [1, 2, 3, 4, 5]  # its cut cell dropped, not stored as 0.6
    assert store.get_run(res["run_id"])["meta"]["step_column"] == "iteration"


def test_bad_cells_wide_rows_and_conflicts_lose_only_their_cell(tmp_path, capsys):
    source = tmp_path / "messy.csv"
    source.write_text("step,loss,reward,model,phase\n"
                      "1,0.5,0.1,qwen,warmup\n"
                      "2,oops,0.2,qwen,train\n"        # a non-numeric value in a numeric column
                      "3,0.4,0.3,qwen,train,99,98\n"   # wider than the header
                      "3,0.45,0.3,qwen,train\n"        # step 3 again: loss differs (conflict), reward agrees
                      ",0.1,0.1,qwen,train\n"          # no step: the row is skipped, named by line and column
                      "4,0.3,0.4,qwen,train\n")
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    assert rc == 0, out.err
    res = json.loads(out.out)
    assert res["steps"] == 4 and res["skipped"] == 1
    assert res["problems"] == [f"{source}:6: column 'step': step empty; row skipped"]
    notes = " | ".join(res["notes"])
    assert "1 non-numeric cell(s)" in notes and f"{source}:3 column 'loss' = 'oops'" in notes
    assert "1 row(s) wider than the 5-column header (first: line 4)" in notes
    assert "1 cell(s) logged twice at one step" in notes and "'loss' at step 3 (0.4 then 0.45)" in notes
    assert "'phase' (text, 2 values)" in notes
    store = open_store(tmp_path / "store")
    run = store.get_run(res["run_id"])
    assert _series(store, run["id"], "loss") == ([1, 3, 4], [0.5, 0.45, 0.3])  # the last value at step 3
    assert _series(store, run["id"], "reward") == ([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4])
    assert run["config"]["model"] == "qwen" and "phase" not in store.keys(run["id"])


@pytest.mark.parametrize("text, expected", [
    ("", "empty file"),
    ("step,loss,reward\n", "a header (step,loss,reward) and no data rows"),
    ("1,0.5,0.1\n2,0.4,0.2\n", "no header row: the first row is numbers"),
    ("step,model,note\n1,qwen,a\n2,qwen,b\n", "no numeric metric value in any row"),
])
def test_files_with_nothing_to_import_are_a_clear_error_and_create_no_run(tmp_path, capsys, text, expected):
    source = tmp_path / "history.csv"
    source.write_text(text)
    rc, out = _import(tmp_path, source, capsys=capsys)
    assert rc == 2 and expected in out.err and str(source) in out.err
    assert open_store(tmp_path / "store").list_runs() == []


def test_without_a_step_column_rows_or_epochs_become_steps_with_a_note(tmp_path, capsys):
    rows_only = tmp_path / "rows.csv"
    _write(rows_only, ["loss", "reward"], [[0.5, 0.1], [0.4, 0.2], [0.3, 0.3]])
    rc, out = _import(tmp_path, rows_only, "--no-health", capsys=capsys)
    res = json.loads(out.out)
    assert rc == 0 and res["steps"] == 3 and "numbered 1, 2, 3" in res["notes"][0]
    store = open_store(tmp_path / "store")
    assert _series(store, res["run_id"], "reward") == ([1, 2, 3], [0.1, 0.2, 0.3])

    by_epoch = tmp_path / "epochs.csv"
    _write(by_epoch, ["epoch", "loss", "eval_loss"], [[0.5, 0.9, ""], [0.5, "", 1.1], [1.0, 0.7, ""]])
    rc, out = _import(tmp_path, by_epoch, "--no-health", capsys=capsys)
    res = json.loads(out.out)
    assert rc == 0 and res["steps"] == 2 and "'epoch' (last resort)" in res["notes"][0]
    assert _series(store, res["run_id"], "eval_loss") == ([1], [1.1])  # the two epoch-0.5 rows merged at step 1
    assert _series(store, res["run_id"], "epoch") == ([1, 2], [0.5, 1.0])


def test_wandb_run_history_export_uses_trls_step_and_drops_wandb_bookkeeping(tmp_path, capsys):
    """W&B's run history "Export CSV" of a TRL run: ``_step`` counts log() calls, ``train/global_step`` is the
    trainer's step (the run's declared x axis), non-finite values spelled ``NaN``/``Infinity``."""
    source = tmp_path / "run-history.csv"
    _write(source, ["_step", "_runtime", "_timestamp", "train/global_step", "train/loss", "train/reward"],
           [[0, 10.5, 1765000000.1, 2, "NaN", 0.1], [1, 11.5, 1765000001.1, 4, "Infinity", 0.2],
            [2, 12.0, 1765000002.0, 6, "", 0.3]])
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    res = json.loads(out.out)
    assert rc == 0 and res["steps"] == 3 and res["notes"] == []
    store = open_store(tmp_path / "store")
    assert sorted(store.keys(res["run_id"])) == ["train/loss", "train/reward"]
    steps, loss = _series(store, res["run_id"], "train/loss")
    assert steps == [2, 4] and math.isnan(loss[0]) and loss[1] == math.inf


def test_a_row_the_csv_module_cannot_read_is_skipped_alone(tmp_path, capsys):
    source = tmp_path / "huge_cell.csv"
    source.write_text('step,loss,sample\n1,0.5,a\n2,0.4,"' + "x" * 200_000 + '"\n3,0.3,c\n')
    rc, out = _import(tmp_path, source, "--no-health", capsys=capsys)
    res = json.loads(out.out)
    assert rc == 0 and res["steps"] == 2 and res["skipped"] == 1
    assert res["problems"][0].startswith(f"{source}:3: not readable as CSV (field larger than field limit")
    store = open_store(tmp_path / "store")
    assert _series(store, res["run_id"], "loss") == ([1, 3], [0.5, 0.3])
    assert "non-numeric column(s) not imported" in res["notes"][0] and "'sample'" in res["notes"][0]
