"""``rlcockpit import --kind trl-console``: the metrics dicts a real TRL ``GRPOTrainer`` printed to its console,
read back step by step against the same run's own ``trainer_state.json``; then the same log made hostile."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from integrations_support import tiny_qwen2_dir

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.importer import import_run
from rlcockpit.integrations.readers import IMPORTERS, ImportOptions, RowProblem, detect_kind
from rlcockpit.integrations.trl_console import read_console, trl_metrics
from rlcockpit.store import open_store

# a user's GRPO script, run as `python train.py > train.log 2>&1`; stdout is also kept alone (as
# `python train.py > train.log` keeps it while the progress bar goes to the terminal)
SCRIPT = """
import sys
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

model, out, stdout_only = sys.argv[1:4]

class Tee:
    def __init__(self, *streams):
        self.streams = streams
    def write(self, s):
        for f in self.streams:
            f.write(s)
            f.flush()
        return len(s)
    def flush(self):
        for f in self.streams:
            f.flush()
    def isatty(self):
        return False
    encoding = "utf-8"

sys.stdout = Tee(sys.stdout, open(stdout_only, "w", encoding="utf-8"))
data = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"how many apples {i}"}] for i in range(32)]})

def reward_len(completions, **kwargs):
    return [-abs(20 - len(c[0]["content"])) / 20 for c in completions]

args = GRPOConfig(output_dir=out, max_steps=6, per_device_train_batch_size=4, per_device_eval_batch_size=4,
                  num_generations=4, max_completion_length=8, logging_steps=2, eval_strategy="steps", eval_steps=4,
                  save_strategy="steps", save_steps=6, save_only_model=True, report_to=[], use_cpu=True, bf16=False,
                  log_completions=True, seed=3, disable_tqdm=False)
trainer = GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=data,
                      eval_dataset=data.select(range(8)))
trainer.train()
trainer.save_state()  # out/trainer_state.json: every log_history entry, the end-of-training summary included
"""


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory):
    """One real run: (combined log, stdout-only log, the run's log_history)."""
    tmp = tmp_path_factory.mktemp("trl-console")
    model = tiny_qwen2_dir(tmp / "model")
    (tmp / "train.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    with open(tmp / "train.log", "wb") as log:
        proc = subprocess.run([sys.executable, str(tmp / "train.py"), model, str(tmp / "out"), str(tmp / "stdout.log")],
                              stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp, timeout=600)
    assert proc.returncode == 0, (tmp / "train.log").read_text()[-3000:]
    history = json.loads((tmp / "out" / "trainer_state.json").read_text())["log_history"]
    return tmp / "train.log", tmp / "stdout.log", history


def _rows(path: Path, **opts):
    imported = IMPORTERS.get("trl-console").read(str(path), ImportOptions(**opts))
    rows = list(imported.rows)
    return [r for r in rows if not isinstance(r, RowProblem)], [str(r) for r in rows if isinstance(r, RowProblem)], \
        imported


def _printed(value: float) -> float:
    """What transformers' ProgressCallback prints for a float (``f"{v:.4g}"``), read back."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


def _same_as_history(rows, history) -> None:
    """Step by step: the same count, the same steps, the same keys (less total_flos, which the console callback pops)
    and the same values as printed."""
    assert [s for s, _m in rows] == [e["step"] for e in history]
    for (step, metrics), entry in zip(rows, history):
        expected = {k: _printed(v) for k, v in trl_metrics(entry).items() if k != "total_flos"}
        assert metrics.keys() == expected.keys(), step
        for k, v in expected.items():
            assert metrics[k] == v or (math.isnan(v) and math.isnan(metrics[k])), (step, k, metrics[k], v)


@pytest.mark.slow
def test_console_log_imports_like_the_runs_trainer_state(trl_run, tmp_path, capsys):
    log, _stdout, history = trl_run
    text = log.read_text()
    assert "'reward'" in text and "%|" in text and "eval_loss" in text and "train_runtime" in text  # a real capture
    assert detect_kind(str(log)) == "trl-console"
    rows, problems, imported = _rows(log)
    assert problems == [] and imported.meta["steps_from"] == "progress bar" and imported.notes == []
    assert len(history) == 6  # training logs at 2, 4, 6, evaluations at 4 and 6, the summary at 6
    _same_as_history(rows, history)

    assert cli_main(["import", str(log), "--dir", str(tmp_path), "--no-health", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "trl-console" and out["problems"] == [] and out["notes"] == []
    store = open_store(tmp_path)
    assert list(store.series(out["run_id"], "reward")[0]) == [2, 4, 6]
    assert list(store.series(out["run_id"], "eval_loss")[0]) == [4, 6]


@pytest.mark.slow
def test_stdout_only_log_steps_from_logging_steps_or_logging_points(trl_run, tmp_path):
    _log, stdout_only, history = trl_run
    assert "%|" not in stdout_only.read_text()  # no progress bar: it went to stderr
    rows, problems, imported = _rows(stdout_only, logging_steps=2)
    assert problems == [] and imported.meta["steps_from"] == "logging_steps"
    _same_as_history(rows, history)

    res = import_run(str(stdout_only), dir=tmp_path, health=False)
    assert res.ok and res.kind == "trl-console" and res.steps == 6
    assert len(res.notes) == 1 and "--logging-steps" in res.notes[0]
    store = open_store(tmp_path)
    assert list(store.series(res.run_id, "reward")[0]) == [1, 2, 3]  # the logging points
    assert store.get_run(res.run_id)["meta"]["import_notes"] == res.notes


@pytest.mark.slow
def test_cut_garbage_and_bad_values_lose_only_their_part(trl_run, tmp_path):
    log, _stdout, history = trl_run
    lines = log.read_text().split("\n")
    first = next(i for i, line in enumerate(lines) if "{'loss'" in line)
    dict_at = lines[first].index("{'loss'")
    cut_at = lines[first].index(", 'learning_rate'", dict_at) + len(", 'learning_ra")
    lines[first] = lines[first][:cut_at]  # cut mid-key, as a capture that keeps 4096 characters of a line
    lines.insert(first + 1, "{'loss': 0.5,, 'epoch': 1.0}")  # a garbage dict line
    lines.insert(first + 2, "{'loss': nan, 'grad_norm': [0.3, 0.4], 'reward': '0.25', 'learning_rate': -1e-06, "
                            "'kl': tensor(0.3), 'epoch': 0.5}")  # bare nan, a list, a string value, a tensor repr
    bad = log.parent / "hostile.log"
    bad.write_text("\n".join(lines))

    rows, problems, _imp = _rows(bad, logging_steps=2)
    assert len(problems) == 3, problems  # the cut dict's lost pair is named too (it used to go without a word)
    assert f"hostile.log:{first + 1}: the dict is cut off before its '}}'" in problems[0]
    assert f"hostile.log:{first + 2}: not a Python dict literal" in problems[1]
    assert f"hostile.log:{first + 3}: " in problems[2] and "'grad_norm' = [0.3, 0.4]" in problems[2]
    cut = rows[0][1]
    assert set(cut) == {"loss", "grad_norm"} and cut["grad_norm"] == _printed(history[0]["grad_norm"])
    extra = rows[1][1]
    assert math.isnan(extra["loss"]) and extra["reward"] == 0.25 and extra["learning_rate"] == -1e-06
    assert extra["kl"] == 0.3
    assert "grad_norm" not in extra
    assert len(rows) == len(history) + 1  # every real dict kept, the extra one too; only the garbage line lost

    res = import_run(str(bad), dir=tmp_path, health=False, logging_steps=2)
    # one record skipped (the garbage line); two kept records lost values (the cut pair, the list value)
    assert res.ok and res.skipped == 1 and res.values_lost == 2 and len(res.problems) == 3


@pytest.mark.slow
def test_detection_keeps_other_kinds(trl_run, tmp_path):
    log, _stdout, _history = trl_run
    verl = tmp_path / "verl.log"
    verl.write_text("(TaskRunner pid=1) step:1 - actor/pg_loss:0.1 - critic/score/mean:0.5\n"
                    "{'loss': 0.1, 'epoch': 0.1}\n")
    assert detect_kind(str(verl)) == "verl"
    assert not IMPORTERS.get("verl").detect(str(log))
    other = tmp_path / "other.log"
    other.write_text("config: {'model': 'qwen', 'epochs': 3}\n{'model': 'qwen', 'epochs': 3}\n")
    with pytest.raises(ValueError, match="cannot tell what"):
        detect_kind(str(other))
    with pytest.raises(ValueError, match="not a TRL/transformers console log"):
        import_run(str(other), kind="trl-console", dir=tmp_path)


def test_printouts_that_are_not_trainer_logs_are_left_alone():
    """A script's own dicts (a pprinted config over several lines, a config dict) are neither records nor problems;
    a Trainer dict that is garbage, or a 4096-character capture cut inside its first pair, is a problem; a dict after
    tqdm's leftovers on the same line is read, with the bar's count."""
    lines = ["{'learning_rate': 1e-06,\n", " 'output_dir': 'out'}\n", "{'model': 'qwen', 'epochs': 3}\n",
             "{'loss': 0.5,, 'epoch': 1.0}\n", "{'loss': 0.1" + "1" * 4100 + "\n",
             "\r  30%|###  | 3/10 [00:01<00:02, 2.0it/s]          \r{'loss': '0.3', 'epoch': '0.1'}\n"]
    log = read_console(lines)
    assert log.problems == [(4, "not a Python dict literal; line skipped"),
                            (5, "cut off before its first complete pair; nothing kept")]
    assert [(r.line, r.entry, r.bar_before) for r in log.records] == [(6, {"loss": 0.3, "epoch": 0.1}, (3, 10))]
