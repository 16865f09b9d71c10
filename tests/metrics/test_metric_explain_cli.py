"""``rlcockpit explain``: text, Chinese, JSON, --list and unknown keys, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rlcockpit.cli import main


def test_explain_known_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "actor/entropy"]) == 0
    out = capsys.readouterr().out
    assert "Policy entropy" in out and "[actor/entropy]" in out and "actor.entropy_coeff" in out


def test_explain_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "train/kl_div", "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert "相对参考策略的 KL 散度" in out and "train/kl_div 是 actor/kl_loss 的别名" in out


def test_explain_unknown_key_suggests_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "actor/entropi"]) == 1
    out = capsys.readouterr().out
    assert "not in the metric guide" in out and "actor/entropy" in out


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "system/gpu/3/utilization", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["canonical"] == "system/gpu/3/utilization" and doc["matched_via"] == "pattern"
    assert doc["parts"] == {"i": "3"} and doc["entry"]["healthy"][0] == 70
    assert main(["explain", "nope/nothing", "kl", "--json"]) == 1
    docs = json.loads(capsys.readouterr().out)
    assert docs[0]["known"] is False and docs[1]["canonical"] == "actor/kl_loss"


def test_explain_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--list"]) == 0
    out = capsys.readouterr().out
    for key in (
        "actor/kl_loss",
        "critic/score/mean",
        "val-core/<source>/<metric>/mean@<N>",
        "samples/distinct_2",
    ):
        assert key in out
    assert main(["explain", "--list", "--lang", "zh", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    assert {"key": "actor/entropy", "title": "策略熵", "category": "actor"} in items


def test_explain_without_key_is_misuse(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 2


@pytest.mark.parametrize("lang,expected", [("en", "Policy entropy"), ("zh", "策略熵")])
def test_explain_subprocess(lang: str, expected: str) -> None:
    env = dict(os.environ, PYTHONIOENCODING="utf-8", HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "rlcockpit.cli", "explain", "actor/entropy", "--lang", lang],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "rlcockpit.cli", "explain", "grad_nrom"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
    )
    assert unknown.returncode == 1 and "grad_norm" in unknown.stdout
