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
