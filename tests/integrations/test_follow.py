"""LineFollower and the verl line parsers: partial lines, missing files, truncation, replacement."""

from __future__ import annotations

import math
import os

import pytest

from rlcockpit.integrations.follow import FollowState, LineFollower
from rlcockpit.integrations.verl_files import (
    SourceError,
    parse_console_line,
    parse_file_logger_line,
    read_rollout_file,
    rollout_files,
)


def test_follower_waits_for_file_and_newline(tmp_path):
    path = tmp_path / "log.jsonl"
    f = LineFollower(path)
    assert f.poll() == []  # does not exist yet
    path.write_bytes(b'{"a": 1}\n{"b": ')
    assert f.poll() == [(1, '{"a": 1}')]
    assert f.poll() == []  # the half-written second line is held back
    with open(path, "ab") as fh:
        fh.write(b'2}\n')
    assert f.poll() == [(2, '{"b": 2}')]
    assert f.state.offset == path.stat().st_size and f.state.line == 2


def test_follower_resumes_from_saved_state_and_detects_truncation_and_replacement(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("one\ntwo\n")
    f = LineFollower(path)
    assert [t for _, t in f.poll()] == ["one", "two"]
    saved = f.state.to_dict()
    with open(path, "a") as fh:
        fh.write("three\n")
    g = LineFollower(path, FollowState.from_dict(saved))  # a restarted follower: only what is new
    assert g.poll() == [(3, "three")] and not g.reset
    # truncate and rewrite ("wb" reopen by a restarted job), even longer than before
    path.write_text("ONE restarted job\nTWO\nTHREE\nFOUR\n")
    assert [t for _, t in g.poll()] == ["ONE restarted job", "TWO", "THREE", "FOUR"] and g.reset
    # replaced by a new file (new inode)
    new = tmp_path / "new.jsonl"
    new.write_text("fresh\n")
    os.replace(new, path)
    assert g.poll() == [(1, "fresh")] and g.reset and g.state.generation == 2


def test_file_logger_line_parsing():
    assert parse_file_logger_line('{"step": 3, "data": {"actor/pg_loss": null, "x": 1.5}}') == (
        3, {"actor/pg_loss": pytest.approx(math.nan, nan_ok=True), "x": 1.5})
    assert parse_file_logger_line("   ") is None
    with pytest.raises(SourceError, match=r"f.jsonl:7: not valid JSON"):
        parse_file_logger_line('{"step": 3, "data"', "f.jsonl", 7)
    with pytest.raises(SourceError, match="file-logger shape"):
        parse_file_logger_line('{"x": 1}', "f.jsonl", 2)


def test_console_line_parsing():
    line = ("(TaskRunner pid=4242) step:12 - actor/pg_loss:np.float64(-0.25) - critic/score/mean:0.5 - "
            "val-core/gsm8k/reward/mean@1:1e-05 - actor/kl_loss:nan")
    step, m = parse_console_line(line)
    assert step == 12 and m["actor/pg_loss"] == -0.25 and m["critic/score/mean"] == 0.5
    assert m["val-core/gsm8k/reward/mean@1"] == 1e-05 and math.isnan(m["actor/kl_loss"])
    assert parse_console_line("Training Progress: 10%|###") is None
    assert parse_console_line("step:3") == (3, {})


def test_rollout_dump_rows(tmp_path):
    d = tmp_path / "rollouts"
    d.mkdir()
    (d / "10.jsonl").write_text('{"input": "q", "output": "a", "gts": "4", "score": 1.0, "step": 10, "acc": true}\n')
    (d / "2.jsonl").write_text('{"input": "q2", "output": "b", "gts": "5", "score": 0, "step": 2}\nnot json\n')
    (d / "notes.txt").write_text("x")
    assert [s for s, _ in rollout_files(d)] == [2, 10]
    rows = read_rollout_file(d / "10.jsonl")
    assert rows == [{"prompt": "q", "response": "a", "reward": 1.0, "gts": "4", "acc": True}]
    with pytest.raises(SourceError, match=r"2.jsonl:2: bad rollout dump line"):
        read_rollout_file(d / "2.jsonl")
    assert len(read_rollout_file(d / "2.jsonl", strict=False)) == 1
