"""verl console logs as they are captured (docs/qa/verl-inputs.md): verl's reward manager prints sampled
``[prompt]`` / ``[response]`` / ``[score]`` lines (``num_examine``) between the metrics lines. A response that
happened to contain ``step:99 - fake:1`` was read as a metrics line, and every real step after it was then
skipped as "going backwards": the import kept one bogus step out of six."""

from __future__ import annotations

import json

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.integrations.verl_files import parse_console_line

REAL = "step:{s} - critic/score/mean:np.float32({v}) - actor/pg_loss:-0.01 - response_length/mean:np.int64(101)"


def test_only_whole_metrics_lines_count():
    assert parse_console_line("(TaskRunner pid=2873) [response] #### 2 step:99 - fake:1") is None
    assert parse_console_line("[score] 1.0 step:3 - x:1") is None
    assert parse_console_line("(TaskRunner pid=7) " + REAL.format(s=4, v=0.5))[0] == 4
    colored = "\x1b[36m(TaskRunner pid=7, ip=10.0.0.2)\x1b[0m " + REAL.format(s=5, v=0.5)  # Ray, to a terminal
    assert parse_console_line(colored) == (5, {"critic/score/mean": 0.5, "actor/pg_loss": -0.01,
                                               "response_length/mean": 101.0})
    assert parse_console_line("0: " + REAL.format(s=6, v=0.1))[0] == 6  # srun --label
    assert parse_console_line("2026-12-01 12:00:01,123 " + REAL.format(s=7, v=0.1))[0] == 7


def test_import_keeps_every_step_of_a_log_with_reward_manager_prints(tmp_path, capsys):
    log = tmp_path / "job.out"
    with log.open("w") as f:
        for s in range(1, 6):
            f.write("(TaskRunner pid=2873) [prompt] user\nQ: 1+1?\nassistant\n")
            f.write("(TaskRunner pid=2873) [response] #### 2 step:99 - fake:1\n")
            f.write("(TaskRunner pid=2873) [score] 1.0\n")
            f.write(f"(TaskRunner pid=2873) {REAL.format(s=s, v=0.1 * s)}\n")
    assert main(["import", str(log), "--dir", str(tmp_path / "store"), "--json", "--no-health"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 5 and out["skipped"] == 0
    (run,) = rlcockpit.Api(str(tmp_path / "store")).runs()
    hist = run.history()
    assert hist.index.tolist() == [1, 2, 3, 4, 5] and "fake" not in hist.columns


def _validation_line(step: int, grad_norm: float) -> str:
    """A verl validation step as LocalLogger prints it: the training metrics, then one accuracy per data source
    and sampling variant, which runs past 4096 characters on a multi-task run."""
    head = (f"(TaskRunner pid=2873) step:{step} - global_seqlen/mean:np.float64(18432.5) - actor/pg_loss:np.float64(-0.0123) "
            f"- actor/grad_norm:np.float64({grad_norm}) - critic/score/mean:np.float32(0.41)")
    val = " - ".join(f"val-core/openai/gsm8k_{i}/acc/mean@{n}:np.float64(0.{i:02d}{n}57)" for i in range(40)
                     for n in (1, 4, 8, 16))
    return f"{head} - {val} - timing_s/testing:np.float64(31.2)"


def test_a_line_cut_at_4096_characters_keeps_its_complete_pairs(tmp_path, capsys):
    """W&B's output.log cuts long lines at 4096 characters: the validation steps' lines end mid-pair, and the
    import used to drop each such step whole (among them a step with a grad-norm spike)."""
    full = _validation_line(10, 17.4)
    assert len(full) > 4096
    cut = full[:4096]  # ends inside a pair
    step, metrics = parse_console_line(cut + "\n")
    assert step == 10 and metrics["actor/grad_norm"] == 17.4 and metrics["critic/score/mean"] == 0.41
    whole = {p.rpartition(":")[0] for p in full.split(" - ")[1:]}
    assert set(metrics) < whole and "timing_s/testing" not in metrics
    last = list(metrics)[-1]  # complete pairs only: the value of the last one kept is the full value
    assert metrics[last] == parse_console_line(full)[1][last]
    # cut right after a plain value's first digits: that pair is dropped, not kept with a wrong value
    head = "step:11 - actor/grad_norm:0.5 - "
    pad = "x" * (4096 - len(head) - len(" - val-core/last:0.12") - len("val-core/pad:"))
    line = f"{head}val-core/pad:{pad} - val-core/last:0.123456789"[:4096]
    assert line.endswith(" - val-core/last:0.12")
    assert parse_console_line(line) == (11, {"actor/grad_norm": 0.5})
    log = tmp_path / "output.log"
    with log.open("w") as f:
        for s in range(1, 21):
            text = _validation_line(s, 17.4 if s == 10 else 0.3)[:4096] if s % 5 == 0 else REAL.format(s=s, v=0.02 * s)
            f.write(text + "\n")
    assert main(["import", str(log), "--dir", str(tmp_path / "store"), "--json", "--no-health"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 20 and out["skipped"] == 0
    (run,) = rlcockpit.Api(str(tmp_path / "store")).runs()
    hist = run.history()
    assert hist.index.tolist() == list(range(1, 21))
    assert hist.loc[10, "actor/grad_norm"] == 17.4


def test_a_line_cut_after_a_separator_and_trimmed_keeps_its_pairs(tmp_path, capsys):
    """W&B trims the blank a 4096-character cut leaves: a validation line cut right after `` - `` ends in `` -`` at
    4095 characters. A real W&B output.log (jianghoucheng/Agent_On_Policy_Distillation, run 8g5bqf9b) has such a
    step 0; the import dropped it."""
    full = _validation_line(0, 0.12)
    at = full.rindex(" - ", 0, 4094) + 3  # a cut just after a separator
    line = full[:at].rstrip()
    assert line.endswith(" -")
    step, metrics = parse_console_line(line + "\n")
    last = full[:at].split(" - ")[-2].rpartition(":")[0]
    assert step == 0 and metrics["actor/grad_norm"] == 0.12 and last in metrics
    log = tmp_path / "output.log"
    log.write_text("\n".join([line] + [REAL.format(s=s, v=0.1) for s in range(1, 4)]) + "\n")
    assert main(["import", str(log), "--dir", str(tmp_path / "store"), "--json", "--no-health"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 4 and out["skipped"] == 0
