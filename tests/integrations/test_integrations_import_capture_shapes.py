"""``rlcockpit import`` of console logs in the shapes capture tools and users leave them (issue 29: every step of a
real log kept, with its values). Each log here is built from real verl / TRL line shapes.

* tqdm's ``Training Progress`` bar redrawn with ``\\r`` on the same line as verl's metrics line (a log captured
  with ``script``/``tee`` keeps the ``\\r`` frames): every step used to be lost, silently (0 steps, exit 0);
* a UTF-8 BOM (a log saved by a Windows editor): the first step used to be lost, silently;
* a timestamp before Ray's prefix, or an ISO-8601 one with a zone: the log was not recognised at all;
* ``tensor(0.5)``, ``tensor(0.5, device='cuda:0')``, ``'0.0123'`` values in verl's console: the first two were
  dropped silently, the last took its whole line (and step) with it.
"""

from __future__ import annotations

import gzip
import json
import math

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.integrations.verl_files import parse_console_line, parse_file_logger_line

LINE = ("(TaskRunner pid=154645) step:{s} - global_seqlen/mean:85803.000 - actor/pg_loss:np.float64({v}) "
        "- actor/grad_norm:2.286 - critic/score/mean:0.016")


def _import(tmp_path, capsys, name: str, data: bytes, *extra: str):
    log = tmp_path / name
    log.write_bytes(data)
    store = tmp_path / (name + ".store")
    assert main(["import", str(log), "--dir", str(store), "--json", "--no-health", *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    (run,) = rlcockpit.Api(str(store)).runs()
    return out, run.history()


def test_verl_steps_with_tqdm_frames_on_the_same_line_are_kept(tmp_path, capsys):
    lines = []
    for s in range(1, 11):
        bar = f"Training Progress:  {s * 10}%|###   | {s}/10 [00:0{s}<00:10,  1.02s/it]"
        colored = "\x1b[36m(TaskRunner pid=154645)\x1b[0m " + LINE.format(s=s, v=0.01 * s).split(") ", 1)[1]
        lines.append(bar + "\r" + colored if s % 2 else colored + "\r" + bar)
    out, hist = _import(tmp_path, capsys, "job.out", ("\r\n".join(lines) + "\r\n").encode())
    assert out["steps"] == 10 and out["skipped"] == 0
    assert hist.index.tolist() == list(range(1, 11))
    assert hist.loc[7, "actor/pg_loss"] == 0.07


def test_a_bom_does_not_cost_the_first_step(tmp_path, capsys):
    text = "\n".join(LINE.format(s=s, v=0.5) for s in range(1, 6)) + "\n"
    out, hist = _import(tmp_path, capsys, "bom.log", b"\xef\xbb\xbf" + text.encode())
    assert out["steps"] == 5 and hist.index.tolist() == [1, 2, 3, 4, 5]
    trl = "\n".join(f"{{'loss': '0.0{s}', 'grad_norm': '1.5', 'learning_rate': '5e-07', 'epoch': '0.{s}'}}"
                    for s in range(1, 6)) + "\n"
    out, hist = _import(tmp_path, capsys, "trl_bom.log", b"\xef\xbb\xbf" + trl.encode(), "--kind", "trl-console")
    assert out["steps"] == 5 and hist.loc[1, "loss"] == 0.01
    record = '\ufeff{"step": 3, "data": {"actor/pg_loss": 0.5}}\n'
    assert parse_file_logger_line(record) == (3, {"actor/pg_loss": 0.5})


def test_timestamps_before_the_ray_prefix(tmp_path, capsys):
    for stamp in ("2026-12-06T10:00:01.123456Z ", "[2026-12-06 10:00:01] ", "2026-12-06 10:00:01,123 | ",
                  "2026-12-06T10:00:01+08:00 "):
        assert parse_console_line(stamp + LINE.format(s=4, v=0.5)) == (
            4, {"global_seqlen/mean": 85803.0, "actor/pg_loss": 0.5, "actor/grad_norm": 2.286,
                "critic/score/mean": 0.016}), stamp
    text = "\n".join("2026-12-06T10:00:01.5Z " + LINE.format(s=s, v=0.5) for s in range(1, 4)) + "\n"
    out, hist = _import(tmp_path, capsys, "ts.log", text.encode())
    assert out["steps"] == 3


def test_value_shapes_in_a_verl_line():
    line = ("step:2 - a:nan - b:-inf - c:1e+30 - d:tensor(0.5) - e:tensor(0.25, device='cuda:0') - f:'0.0123' "
            "- g:np.float32(nan) - h:np.int64(3)")
    step, m = parse_console_line(line)
    assert step == 2 and math.isnan(m["a"]) and m["b"] == -math.inf and m["c"] == 1e30
    assert (m["d"], m["e"], m["f"], m["h"]) == (0.5, 0.25, 0.0123, 3.0) and math.isnan(m["g"])
    # cut by a capture tool inside the tensor's arguments: the complete pairs are kept, the cut one dropped
    cut = ("step:2 - a:1 - b:0.5 - e:tensor(0.25, devi" + "x" * 4096)[:4096]
    assert parse_console_line(cut) == (2, {"a": 1.0, "b": 0.5})


def test_a_gzipped_log_is_read_and_a_cut_gzip_keeps_what_came_before(tmp_path, capsys):
    """Logs are archived and shared gzip'd (``job.log.gz``): the import said "cannot tell what it is"."""
    text = "\n".join(LINE.format(s=s, v=0.5) for s in range(1, 2001)) + "\n"
    data = gzip.compress(text.encode())
    out, hist = _import(tmp_path, capsys, "job.log.gz", data)
    assert out["steps"] == 2000 and hist.index.tolist() == list(range(1, 2001))
    trl = "\n".join(f"{{'loss': '0.0{s}', 'grad_norm': '1.5', 'learning_rate': '5e-07', 'epoch': '0.{s}'}}"
                    for s in range(1, 10)) + "\n"
    out, hist = _import(tmp_path, capsys, "train.log.gz", gzip.compress(trl.encode()), "--kind", "trl-console")
    assert out["steps"] == 9 and hist.loc[9, "loss"] == 0.09
    # a download cut off half-way: the steps before the cut are stored, the error names where it stopped
    log = tmp_path / "half.log.gz"
    log.write_bytes(data[:len(data) // 2])
    assert main(["import", str(log), "--dir", str(tmp_path / "half"), "--json", "--no-health"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["steps"] < 2000 and "gzip'd log is damaged or cut off" in out["error"]
    (run,) = rlcockpit.Api(str(tmp_path / "half")).runs()
    assert run.history().index.tolist() == list(range(1, out["steps"] + 1))


def test_the_last_line_without_its_newline_loses_its_last_pair_not_digits(tmp_path, capsys):
    """A log copied while the job wrote it (or a job killed mid-print) ends in a line without its newline: its last
    number may be ``0.12`` of ``0.1234``. It used to be stored as 0.12 — wrong data; now the pair is left out and the
    problem names the line."""
    text = "\n".join(LINE.format(s=s, v=0.5) for s in range(1, 4)) + "\n" + LINE.format(s=4, v=0.5)[:-1]
    assert text.endswith("critic/score/mean:0.01")
    out, hist = _import(tmp_path, capsys, "partial.log", text.encode())
    assert out["steps"] == 4 and hist.loc[4, "actor/grad_norm"] == 2.286
    assert math.isnan(hist.loc[4, "critic/score/mean"]) and hist.loc[3, "critic/score/mean"] == 0.016
    assert out["skipped"] == 0 and out["values_lost"] == 1
    assert "partial.log:4: the last line has no newline" in out["problems"][0]


def test_a_line_cut_at_4096_characters_counts_the_pair_it_lost(tmp_path, capsys):
    """W&B's ``output.log`` keeps 4096 characters of a line: a verl validation step's long line ends mid-pair. Its
    step and complete pairs were kept, but the cut pair went without a word (``skipped`` 0, no problem): a loss the
    user could not see. Now each cut line is counted in ``values_lost`` (not ``skipped``: the record was kept) and its
    problem names the line and the pair."""
    pad = " - ".join(f"val-aux/task{i}/reward/mean@1:0.{i:04d}" for i in range(200))
    long_line = (LINE.format(s=2, v=0.5) + " - " + pad)[:4096]
    assert len(long_line) == 4096 and not long_line.endswith("0.0199")
    lines = [LINE.format(s=1, v=0.5), long_line, LINE.format(s=3, v=0.5)]
    out, hist = _import(tmp_path, capsys, "cut.log", ("\n".join(lines) + "\n").encode())
    assert out["steps"] == 3 and out["skipped"] == 0 and out["values_lost"] == 1
    assert hist.loc[2, "critic/score/mean"] == 0.016 and hist.loc[2, "val-aux/task1/reward/mean@1"] == 0.0001
    (problem,) = out["problems"]
    assert problem.startswith(f"{tmp_path / 'cut.log'}:2: the line is 4096 characters long")
    assert "an unfinished pair ('val-'...) left out" in problem


def test_a_trl_dict_cut_at_4096_characters_counts_the_pair_it_lost(tmp_path, capsys):
    """The same cut in a TRL console dict: the complete pairs were kept and the cut one dropped silently."""
    head = "{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'reward': 0.25, 'kl': 0.001, "
    pad = ", ".join(f"'rewards/fn{i}/mean': 0.{i:04d}" for i in range(200))
    cut = (head + pad + ", 'epoch': 0.02}")[:4096]
    lines = ["{'loss': 0.0, 'grad_norm': 0.4, 'learning_rate': 1e-06, 'reward': 0.2, 'kl': 0.0, 'epoch': 0.01}", cut,
             "{'loss': 0.02, 'grad_norm': 0.6, 'learning_rate': 1e-06, 'reward': 0.3, 'kl': 0.002, 'epoch': 0.03}"]
    out, hist = _import(tmp_path, capsys, "cut_trl.log", ("\n".join(lines) + "\n").encode(), "--kind", "trl-console")
    assert out["steps"] == 3 and out["skipped"] == 0 and out["values_lost"] == 1
    assert hist.loc[2, "reward"] == 0.25
    assert any(":2: the dict is cut off" in p for p in out["problems"])


def test_a_restart_is_named_and_keeps_the_first_values(tmp_path, capsys):
    """A restarted job (steps 1..50, then 1..30 again) had its 30 records skipped with no word of why; a resume from
    40 overwrote step 50's values with the second run's. (A line printed twice is stored once: ``steps`` counts the
    records read, as it does for an eval entry at a training step.)"""
    steps = [1, 2, 2, 3, 3, 4]
    out, hist = _import(tmp_path, capsys, "dup.log", ("\n".join(LINE.format(s=s, v=0.5) for s in steps) + "\n").encode())
    assert len(hist) == 4 and out["skipped"] == 0
    lines = [LINE.format(s=s, v=0.01 * s) for s in range(1, 51)] + [LINE.format(s=s, v=-1.0) for s in range(40, 61)]
    out, hist = _import(tmp_path, capsys, "resume.log", ("\n".join(lines) + "\n").encode())
    assert out["steps"] == 60 == len(hist) and out["skipped"] == 11
    assert hist.loc[50, "actor/pg_loss"] == 0.5 and hist.loc[51, "actor/pg_loss"] == -1.0
    assert "the steps go back from 50 to 40" in out["problems"][0] and "11 record(s)" in out["problems"][0]


def test_a_trl_dict_wrapped_over_lines_keeps_all_its_pairs(tmp_path, capsys):
    """A TRL dict copied from a terminal comes hard-wrapped at the screen's width: the import kept the pairs of the
    first piece and lost the rest (``learning_rate``, the rewards, ``epoch``) without a word."""
    d = ("{{'loss': '0.0{s}', 'grad_norm': '0.004815', 'learning_rate': '5e-07', 'rewards/r1_correctness': "
         "'0.2146', 'rewards/r2_format': '0.2', 'epoch': '0.0{s}'}}")
    lines = []
    for s in range(1, 6):
        text = d.format(s=s)
        lines += [text[i:i + 80] for i in range(0, len(text), 80)]
    lines += ["{'learning_rate': 1e-06,", " 'output_dir': 'out'}"]  # a pprinted config: not a Trainer log
    out, hist = _import(tmp_path, capsys, "wrapped.log", ("\n".join(lines) + "\n").encode(), "--kind", "trl-console")
    assert out["steps"] == 5 and out["skipped"] == 0
    assert hist.index.tolist() == [1, 2, 3, 4, 5]
    assert hist.loc[3, "epoch"] == 0.03 and hist.loc[5, "rewards/r2_format"] == 0.2 and "output_dir" not in hist


def test_a_trainer_state_json_with_a_bom_is_no_error(tmp_path, capsys):
    """A trainer_state.json re-saved by a Windows editor starts with a BOM: the import stopped with "not valid JSON"
    (exit 1) and lost the state's fields, though every entry was readable."""
    state = {"global_step": 3, "max_steps": 3, "logging_steps": 1,
             "log_history": [{"loss": 0.5 - 0.1 * s, "grad_norm": 1.0, "epoch": 0.1 * s, "step": s} for s in (1, 2, 3)]}
    run_dir = tmp_path / "out"
    run_dir.mkdir()
    (run_dir / "trainer_state.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(state).encode())
    assert main(["import", str(run_dir), "--dir", str(tmp_path / "store"), "--json", "--no-health"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == 3 and out["error"] is None


def test_watch_follows_a_console_log_with_tqdm_frames(tmp_path):
    """``rlcockpit watch --console-log`` on the same capture: it stored nothing (stopped at step -1)."""
    from rlcockpit.integrations.watch import VerlWatcher

    log = tmp_path / "job.out"
    bars = [f"Training Progress:  {s * 10}%|###   | {s}/10 [00:0{s}<00:10,  1.02s/it]" for s in range(1, 7)]
    log.write_text("".join(f"{bars[s - 1]}\r{LINE.format(s=s, v=0.5)}\n" for s in range(1, 7)))
    w = VerlWatcher(console_log=log, dir=tmp_path / "store")
    assert w.poll_once() == 6
    w.close("test stop")
    (run,) = rlcockpit.Api(str(tmp_path / "store")).runs()
    assert run.history().index.tolist() == [1, 2, 3, 4, 5, 6]


def test_an_empty_log_says_it_is_empty(tmp_path, capsys):
    log = tmp_path / "job.out"
    log.write_bytes(b"")
    assert main(["import", str(log), "--dir", str(tmp_path / "store")]) == 2
    assert "job.out is empty: nothing to import" in capsys.readouterr().err
    assert not (tmp_path / "store").exists() or not rlcockpit.Api(str(tmp_path / "store")).runs()
