"""Defects 4, 8, 9, 10: imports and ``watch`` on hostile files — out-of-range values, a 17 MiB line,
corrupt TensorBoard event files, JSON nested 200k levels deep. What is readable is stored; every problem
is reported with its file and line/offset and recorded in the run."""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path

import pytest

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.importer import import_run
from rlcockpit.integrations.watch import VerlWatcher
from rlcockpit.store import open_store


def _line(step, data):  # noqa: ANN001, ANN202
    return json.dumps({"step": step, "data": data}) + "\n"


def test_import_of_out_of_range_rows_keeps_the_rest_and_reports_them(tmp_path, capsys) -> None:
    """Defect 4: a value of 10**400, a step >= 2**63 and a NaN step each lose one unit, and the import says so."""
    log = tmp_path / "job.jsonl"
    with open(log, "w") as f:
        for step in range(10):
            f.write(_line(step, {"critic/score/mean": step / 10}))
        f.write('{"step": 10, "data": {"critic/score/mean": 0.5, "huge": ' + "9" * 400 + "}}\n")
        f.write('{"step": 99999999999999999999, "data": {"critic/score/mean": 0.5}}\n')
        f.write('{"step": NaN, "data": {"critic/score/mean": 0.5}}\n')
        for step in range(11, 20):
            f.write(_line(step, {"critic/score/mean": step / 10}))
    rc = cli_main(["import", str(log), "--dir", str(tmp_path / "s"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["steps"] == 20 and out["skipped"] == 2, out
    store = open_store(tmp_path / "s")
    assert store.series(out["run_id"], "critic/score/mean")[0].tolist() == list(range(20))
    assert "huge" not in store.keys(out["run_id"])
    problems = store.get_run(out["run_id"])["meta"]["import_problems"]
    assert any(":12" in p and "step" in p for p in problems) and any(":13" in p for p in problems), problems


def test_watch_follows_past_a_line_longer_than_its_read_window(tmp_path) -> None:
    """Defect 8: a 17 MiB line is read whole (or reported), never re-read forever."""
    log = tmp_path / "job.jsonl"
    with open(log, "w") as f:
        f.write(_line(0, {"critic/score/mean": 0.1}))
        f.write(_line(1, {"critic/score/mean": 0.2, "blob": 0.0, "pad": "x" * (17 * 1024 * 1024)}))
        f.write(_line(2, {"critic/score/mean": 0.3}))
    w = VerlWatcher(file_log=log, dir=tmp_path / "s", project="p", health=False)
    for _ in range(4):
        w.poll_once()
    w.close()
    store = open_store(tmp_path / "s")
    assert store.series(w.run.id, "critic/score/mean")[0].tolist() == [0, 1, 2]


def _tb_file(tmp_path: Path, steps: int = 200) -> Path:
    from torch.utils.tensorboard import SummaryWriter

    d = tmp_path / "tb"
    w = SummaryWriter(log_dir=str(d))
    for s in range(steps):
        w.add_scalar("loss", 1.0 / (s + 1), s)
    w.close()
    return next(d.glob("events.out.tfevents*"))


def _records(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of every TFRecord in ``data``."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[pos : pos + 8])
        out.append((pos, n))
        pos += 12 + n + 4
    return out


@pytest.mark.parametrize("damage", ["flipped byte", "bad length", "truncated tail"])
def test_tensorboard_import_of_a_damaged_file_reports_file_and_offset(tmp_path, capsys, damage) -> None:
    """Defect 9: what is readable is imported; the error names file and offset; the run records it."""
    path = _tb_file(tmp_path)
    data = bytearray(path.read_bytes())
    recs = _records(bytes(data))
    off, n = recs[len(recs) // 2]
    if damage == "flipped byte":
        data[off + 12 + n // 2] ^= 0x40
    elif damage == "bad length":
        data[off : off + 8] = struct.pack("<Q", 10**9)
    else:
        del data[off + 12 + n // 2 :]
    path.write_bytes(bytes(data))
    rc = cli_main(["import", str(path.parent), "--kind", "tensorboard", "--dir", str(tmp_path / "s"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1, "a damaged source is not a success"
    assert out["error"] and path.name in out["error"] and f"offset {off}" in out["error"], out
    store = open_store(tmp_path / "s")
    steps = store.series(out["run_id"], "loss")[0].tolist()
    assert steps[: len(steps)] == sorted(steps) and 90 <= len(steps) < 200
    if damage == "flipped byte":
        assert steps[-1] == 199, "records after a damaged one are still read"
    run = store.get_run(out["run_id"])
    assert path.name in run["meta"]["import_error"]
    assert store.events(out["run_id"], "data_lost"), "the unreadable part is a recorded loss"


def _deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_deep_json_is_a_clear_error_for_import_and_a_skipped_line_for_watch(tmp_path, capsys, caplog) -> None:
    """Defect 10: 200k levels of nesting: a clear error naming file and line, never a RecursionError."""
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    log = tmp_path / "deep.jsonl"
    log.write_text('{"step": 0, "data": {"x": ' + _deep_json(200_000) + "}}\n")
    rc = cli_main(["import", str(log), "--kind", "verl", "--dir", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert rc == 2 and "RecursionError" not in err and "deep.jsonl:1" in err and "nested" in err, err

    log2 = tmp_path / "job.jsonl"
    with open(log2, "w") as f:
        f.write(_line(0, {"critic/score/mean": 0.1}))
        f.write('{"step": 1, "data": {"x": ' + _deep_json(200_000) + "}}\n")
        f.write(_line(2, {"critic/score/mean": 0.3}))
    w = VerlWatcher(file_log=log2, dir=tmp_path / "w", project="p", health=False)
    w.poll_once()
    w.close()
    assert open_store(tmp_path / "w").series(w.run.id, "critic/score/mean")[0].tolist() == [0, 2]
    assert any("job.jsonl:2" in r.getMessage() and "nested" in r.getMessage() for r in caplog.records)

    trl = tmp_path / "trainer_state.json"
    trl.write_text('{"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "x": ' + _deep_json(200_000) + "}]}")
    res = import_run(str(trl), kind="trl", dir=tmp_path / "t", health=False)  # the readable entry is kept
    assert res.steps == 1 and "nested" in res.error and str(trl) in res.error
