"""``rlcockpit import --kind jsonl``: a metrics JSONL (one object a line with its ``step``), as Tinker's cookbook and
hand-written GRPO loops write ``metrics.jsonl``: detected, imported through the CLI into a real store and read back
with the store's own reader; a bad line loses only itself, a cut last line stops the import there, a real public
file from the corpus keeps every step."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.readers import detect_kind
from rlcockpit.store import open_store

CORPUS = Path(__file__).parents[2] / "bench" / "detection_corpus" / "real"


def _import(tmp_path, source, capsys, *args):
    rc = cli_main(["import", str(source), "--dir", str(tmp_path / "store"), "--json", "--no-health", *args])
    out = capsys.readouterr()
    return rc, json.loads(out.out) if out.out.strip() else None, out.err


def _lines(records):
    return "".join(json.dumps(r) + "\n" for r in records)


def _tinker_records(n):
    return [{"step": s, "progress/done_frac": s / n, "optim/lr": 1e-5, "env/all/reward/total": 0.1 * s,
             "env/all/ac_tokens_per_turn": 200.0 + s, "time/total": 3.5, "phase": "train", "tags": ["a"],
             "done": False, "kl": None if s == 2 else 0.01 * s} for s in range(n)]


def test_a_tinker_metrics_jsonl_is_detected_and_keeps_every_step_and_number(tmp_path, capsys):
    source = tmp_path / "metrics.jsonl"
    source.write_text(_lines(_tinker_records(6)))
    assert detect_kind(str(source)) == "jsonl"
    rc, res, err = _import(tmp_path, source, capsys)
    assert rc == 0, err
    assert res["kind"] == "jsonl" and res["steps"] == 6 and res["skipped"] == 0 and res["error"] is None
    assert any("not numbers" in n and "phase (6)" in n and "tags (6)" in n and "done (6)" in n for n in res["notes"])
    store = open_store(tmp_path / "store")
    steps, values = store.series(res["run_id"], "env/all/reward/total")[:2]
    assert list(steps) == list(range(6)) and [round(v, 6) for v in values] == [round(0.1 * s, 6) for s in range(6)]
    kl_steps, kl = store.series(res["run_id"], "kl")[:2]
    assert list(kl_steps) == list(range(6)) and math.isnan(kl[2]) and kl[3] == 0.03  # null is NaN, as verl's


def test_a_bad_line_loses_only_itself_and_a_cut_last_line_stops_there(tmp_path, capsys):
    recs = _tinker_records(5)
    text = (_lines(recs[:2]) + "not json at all\n" + json.dumps({"step": True, "x": 1}) + "\n"
            + _lines(recs[2:4]) + json.dumps(recs[4])[:30])  # the writer killed mid-line
    source = tmp_path / "metrics.jsonl"
    source.write_text(text)
    rc, res, err = _import(tmp_path, source, capsys, "--kind", "jsonl")
    assert rc == 1 and res["steps"] == 4 and res["skipped"] == 2
    assert any(":3: record skipped: not valid JSON" in p for p in res["problems"])
    assert any(":4: record skipped" in p and "bool" in p for p in res["problems"])
    assert ":7" in res["error"] and "cut off" in res["error"]


def test_verl_file_logger_lines_stay_verl(tmp_path):
    source = tmp_path / "log.jsonl"
    source.write_text(_lines([{"step": 1, "data": {"actor/entropy": 0.5}}]))
    assert detect_kind(str(source)) == "verl"


def test_a_real_public_tinker_run_imports_with_the_step_count_of_a_clean_parse(tmp_path, capsys):
    manifest = json.loads((CORPUS / "manifest.json").read_text())["runs"]
    entry = next(e for e in manifest if e["source"] == "tinker_jsonl_public18")
    source = tmp_path / "metrics.jsonl"
    source.write_bytes(gzip.decompress((CORPUS / entry["file"]).read_bytes()))
    clean = {json.loads(line)["step"] for line in source.read_text().splitlines() if line.strip()}
    rc, res, err = _import(tmp_path, source, capsys)
    assert rc == 0, err
    assert res["kind"] == "jsonl" and res["steps"] == len(clean) == 45 and res["skipped"] == 0
