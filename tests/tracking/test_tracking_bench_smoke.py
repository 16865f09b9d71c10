"""The logging benchmark still runs and reports what BENCHMARKS.md quotes (tiny sizes: not a timing test)."""

from __future__ import annotations

import json
import subprocess

import pytest
from tracking_support import PYTHON, REPO, child_env


@pytest.mark.slow
def test_logging_benchmark_json_shape() -> None:
    proc = subprocess.run(
        [PYTHON, str(REPO / "bench" / "logging_overhead.py"), "--json", "--tools", "rlcockpit", "rlcockpit_health",
         "rlwatch",
         "--steps", "300", "--warmup", "20", "--store-points", "20000"],
        capture_output=True, text=True, timeout=300, env=child_env(),
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for tool in ("rlcockpit", "rlcockpit_health", "rlwatch"):
        assert {"p50_us", "p99_us", "points_per_s", "steps"} <= out[tool].keys(), out[tool]
        assert out[tool]["steps"] == 300
    store = out["store"]
    assert store["run_log_dropped"] == 0 and store["read_spike_kept"] is True
    assert store["read_downsampled_to"] <= 2000 and store["store_ingest_points_per_s"] > 0
    assert store["writer_points"] == 20000 and store["writer_points_per_s_cpu"] > 0


@pytest.mark.slow
def test_fault_benchmark_json_shape() -> None:
    proc = subprocess.run([PYTHON, str(REPO / "bench" / "tracking_faults.py"), "--json", "--rates", "200",
                           "--kills", "1", "--full-s", "1"], capture_output=True, text=True, timeout=300,
                          env=child_env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    kill = out["kill"]["200"]
    assert kill["kills"] == 1 and kill["trials"][0]["stored"] > 0 and kill["lost_steps_max"] >= 0
    d = out["disk_full"]
    assert "skipped" in d or (d["status"] == "finished" and d["held_and_written"] + d["recorded_lost"]
                              == d["steps_while_full"])
