"""Evidence in the run's own words (issue 29): a TRL run was told about ``critic/score/mean``, ``actor/kl_loss`` and
``perf/throughput``, keys it never logged. Every metric name a diagnosis shows must be one the run logged."""

from __future__ import annotations

import json
import random
import re

from rlcockpit.health import HealthMonitor
from rlcockpit.health.diagnosis.diagnose import diagnose_findings

TRL_CONFIG = {"learning_rate": 1e-5, "num_generations": 6, "per_device_train_batch_size": 6, "beta": 0.04}


def test_a_trl_collapse_is_diagnosed_in_trl_names_only():
    rng = random.Random(0)
    mon = HealthMonitor(None, TRL_CONFIG)
    logged: set[str] = set()
    findings = []
    for s in range(1, 120):
        bad = s >= 60
        m = {"reward": (0.05 if bad else 0.5) + rng.gauss(0, 0.03), "reward_std": 0.3 + rng.gauss(0, 0.02),
             "kl": (0.5 * (s - 59) if bad else 0.02) + rng.gauss(0, 0.002),
             "entropy": (3.0 if bad else 0.5) + rng.gauss(0, 0.02), "loss": rng.gauss(0, 0.01),
             "grad_norm": (8.0 if bad else 0.5) * rng.lognormvariate(0, 0.2),
             "completions/mean_length": (10 if bad else 200) + rng.gauss(0, 5), "step_time": 1.0 + rng.gauss(0, 0.05)}
        logged |= set(m)
        findings += mon.observe(s, m)
    findings += mon.close()
    d = diagnose_findings(findings, TRL_CONFIG)
    assert d["root_cause"] is not None
    assert {f.metric for f in findings} <= logged
    text = json.dumps(d)
    named = set(re.findall(r"\b[a-z_]+/[a-z_]+(?:/[a-z_@0-9]+)*", text))
    assert named <= logged, sorted(named - logged)


def test_update_size_cites_trls_clip_ratio_under_its_own_name():
    mon = HealthMonitor(None, TRL_CONFIG)
    found = []
    for s in range(40):
        found += mon.observe(s, {"clip_ratio/region_mean": 0.02 if s < 20 else 0.4, "reward": 0.5})
    upd = [f for f in found if f.detector == "update_size"]
    assert upd and "clip_ratio/region_mean=0.273" in upd[0].title  # smoothed over 3 steps
    assert set(upd[0].evidence["values"]) <= {"clip_ratio/region_mean", "clip_ratio/region_mean_baseline"}
    assert upd[0].metric == "clip_ratio/region_mean"
