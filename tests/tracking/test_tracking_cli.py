"""``rlcockpit runs / show / export``: output parsed back, exports read back with pandas."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from tracking_support import PYTHON, child_env

from rlcockpit.cli import main


@pytest.fixture
def two_runs(start, store_dir: Path) -> list[str]:
    ids = []
    for project, name in (("alpha", "first"), ("beta", "second")):
        run = start(project=project, name=name, config={"lr": 0.1})
        for step in range(4):
            run.log({"critic/score/mean": step / 4, "actor/pg_loss": float("nan") if step == 2 else 1.0}, step=step)
        run.log_samples([{"prompt": "q", "response": "a", "reward": 1.0}], step=3)
        run.finish()
        ids.append(run.id)
    return ids


def test_runs_json_and_project_filter(two_runs: list[str], store_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["runs", "--dir", str(store_dir), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["id"] for r in rows) == sorted(two_runs)
    assert main(["runs", "--dir", str(store_dir), "--project", "beta", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["name"] == "second" and row["status"] == "finished" and row["last_step"] == 3
    assert row["summary"]["critic/score/mean"] == 0.75


def test_runs_table_and_show(two_runs: list[str], store_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["runs", "--dir", str(store_dir)]) == 0
    out = capsys.readouterr().out
    assert "first" in out and "second" in out
    assert main(["show", "first", "--dir", str(store_dir), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == two_runs[0] and shown["config"] == {"lr": 0.1}
    assert sorted(shown["keys"]) == ["actor/pg_loss", "critic/score/mean"] and shown["sample_steps"] == [3]
    assert main(["show", two_runs[1][:5], "--dir", str(store_dir)]) == 0
    assert "critic/score/mean" in capsys.readouterr().out
    assert main(["show", "nope", "--dir", str(store_dir)]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_export_reads_back(two_runs: list[str], store_dir: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"export.{fmt}"
    assert main(["export", two_runs[0], "--dir", str(store_dir), "--format", fmt, "-o", str(out)]) == 0
    if fmt == "csv":
        df = pd.read_csv(out, index_col="step")
    elif fmt == "jsonl":
        df = pd.read_json(out, lines=True).set_index("step")
    else:
        df = pd.read_parquet(out)
    assert list(df.index) == [0, 1, 2, 3]
    assert df["critic/score/mean"].tolist() == [0.0, 0.25, 0.5, 0.75]
    assert pd.isna(df.loc[2, "actor/pg_loss"]) and df.loc[3, "actor/pg_loss"] == 1.0


def test_cli_entry_point_runs_as_a_process(two_runs: list[str], store_dir: Path) -> None:
    proc = subprocess.run([PYTHON, "-m", "rlcockpit.cli", "runs", "--json", "--project", "alpha"],
                          capture_output=True, text=True, env=child_env(RLCOCKPIT_DIR=str(store_dir)), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in json.loads(proc.stdout)] == [two_runs[0]]


def test_runs_and_show_never_print_terminal_control_characters(start, store_dir: Path, capsys) -> None:
    """Defect 14: a run name carrying ANSI escapes (or rich markup) is shown escaped, not interpreted."""
    name = "evil\x1b[2J\x1b[31mred\x07\x9b[m [bold]b[/bold]"
    run = start(name=name, config={"note": "\x1b]0;title\x07"})
    run.log({"x": 1.0}, step=0)
    run.finish()
    for argv in (["runs", "--dir", str(store_dir)], ["show", run.id, "--dir", str(store_dir)]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) < 0xA0 for c in out), repr(out)
        if argv[0] == "show":  # (the runs table may cut the name to the terminal's width)
            assert "\\x1b[2J" in out and "[bold]b[/bold]" in out
