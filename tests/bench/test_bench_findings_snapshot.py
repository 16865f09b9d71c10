"""bench/findings_snapshot.py is the check that a performance change leaves every finding as it was: a replay gives
the full finding (evidence, causes, actions) and the same JSON every time, the wall-clock time left out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "detection_corpus" / "gen"))

from corpus_schema import load_corpus  # noqa: E402

import findings_snapshot  # noqa: E402


def test_a_replay_gives_full_findings_and_the_same_json_twice():
    trace = next(t for t in load_corpus(["heldout"]) if t["class"] != "healthy" and len(t["metrics"]) > 100)
    first, second = findings_snapshot.findings(trace), findings_snapshot.findings(trace)
    assert first, "a failure trace raises findings, or this compares nothing"
    assert json.dumps(first, sort_keys=True, default=str) == json.dumps(second, sort_keys=True, default=str)
    assert all("created_at" not in f for f in first)
    assert {"detector", "severity", "title", "step_start", "step", "evidence", "causes", "actions"} <= set(first[0])
