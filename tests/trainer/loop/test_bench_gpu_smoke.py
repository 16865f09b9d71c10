"""bench/gpu_vs_trl.py --smoke: the GPU benchmark's code path end to end on CPU at a toy size (not a timing test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_gpu_benchmark_smoke_runs_both_trainers_and_reports_every_figure():
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "gpu_vs_trl.py"), "--smoke", "--json"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    res = json.loads(proc.stdout)
    s = res["settings"]
    for side in ("ours", "trl"):
        r = res[side]
        assert r["sec_per_step"] > 0 and r["tokens_per_s"] > 0, r
        assert 0 < r["response_tokens_per_step"] <= s["prompts"] * s["n"] * s["response"], r
        assert r["peak_rss_gib"] > 0 and r["phases"], r
    assert {"gen", "update_actor", "update_weights"} <= set(res["ours"]["phases"])
    assert any("generate" in k for k in res["trl"]["phases"])  # TRL's own phase timer, recorded by the bench
    assert res["ours"]["memory_estimate"]["peak_gib"] > 0
    assert res["tokens_per_s_ratio"] == pytest.approx(res["ours"]["tokens_per_s"] / res["trl"]["tokens_per_s"])
    assert res["n_params"] > 0
