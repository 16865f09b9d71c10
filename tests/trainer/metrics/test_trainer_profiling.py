"""trainer.profile_steps: torch.profiler traces stored with the run, top ops in the diagnosis."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
import torch

import rlcockpit
from rlcockpit.store import open_store
from rlcockpit.trainer.loop import train
from rlcockpit.trainer.observe.profiling import StepProfiler


@pytest.mark.slow
def test_profiled_steps_store_an_openable_trace_and_a_top_ops_table(tiny_cfg, tmp_path):
    result = train(tiny_cfg("trainer.total_training_steps=3", "trainer.profile_steps=[2,3]", "trainer.test_freq=0"))
    assert result.status == "finished"
    store_dir = tmp_path / "store"
    prof_dir = store_dir / "profiles" / result.run_id
    assert sorted(p.name for p in prof_dir.iterdir()) == ["step_2.pt.trace.json.gz", "step_3.pt.trace.json.gz"]
    trace = json.loads(gzip.decompress((prof_dir / "step_2.pt.trace.json.gz").read_bytes()))
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"rlcockpit/step_2", "timing_s/gen", "timing_s/update_actor"} <= names  # the loop's phases as ranges
    assert any(str(n).startswith("aten::") for n in names)  # and the ops inside them
    assert all("ts" in e for e in trace["traceEvents"] if e.get("ph") == "X")  # complete events, Chrome format
    store = open_store(store_dir)
    events = store.events(result.run_id, kind="profile")
    assert [e["step"] for e in events] == [2, 3]
    rows = events[0]["payload"]["top_ops"]
    assert rows and [r["self_cpu_ms"] for r in rows] == sorted((r["self_cpu_ms"] for r in rows), reverse=True)
    assert not any(r["name"].startswith(("timing_s/", "rlcockpit/")) for r in rows)
    # the timing metrics stay as they are, for profiled steps too
    hist = rlcockpit.Api(str(store_dir)).run(result.run_id).history()
    assert hist["timing_s/step"].dropna().index.tolist() == [1, 2, 3]
    out = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "diagnose", result.run_id, "--dir", str(store_dir)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Profile of step 2" in out.stdout and "Profile of step 3" in out.stdout
    assert rows[0]["name"][:44] in out.stdout
    js = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "diagnose", result.run_id, "--dir", str(store_dir),
                         "--json"], capture_output=True, text=True, timeout=120)
    assert [p["step"] for p in json.loads(js.stdout)["profiles"]] == [2, 3]


def test_unlisted_steps_are_not_profiled(tmp_path):
    prof = StepProfiler([5], tmp_path / "p")
    with prof.step(4):
        torch.ones(3).sum()
    assert not (tmp_path / "p").exists() and prof.saved == []
    with prof.step(5):
        torch.ones(3).sum()
    assert (tmp_path / "p" / "step_5.pt.trace.json.gz").is_file() and prof.saved[0]["step"] == 5


def test_a_trace_that_cannot_be_written_does_not_stop_training(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    lines: list[str] = []
    prof = StepProfiler([1], blocker / "p", log=lines.append)
    with prof.step(1):
        torch.ones(3).sum()
    assert prof.saved == [] and "could not store the profiler trace" in lines[-1]


def test_profile_steps_parses_as_verl_writes_it(tiny_cfg):
    assert tiny_cfg("trainer.profile_steps=[5,6]").trainer.profile_steps == [5, 6]
    assert tiny_cfg().trainer.profile_steps == []
