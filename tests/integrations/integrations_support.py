"""Helpers shared by the integration tests (imported as a plain module: pytest puts this folder on
sys.path): the health-engine gate and a verl-keyed failure pattern."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERL_PY = REPO / ".venv-verl" / "bin" / "python"


def health_available() -> bool:
    return importlib.util.find_spec("rlcockpit.health.monitor") is not None


def require_findings(findings: list, *detectors: str) -> None:
    """Assert on findings once the health engine exists; xfail before it lands."""
    if not health_available():
        pytest.xfail("health engine not available")
    names = {f.get("detector") for f in findings}
    assert findings, "expected findings from the health engine, got none"
    if detectors:
        assert names & set(detectors), f"expected one of {detectors} among findings {sorted(names)}"


def failure_rows(n: int = 60, cliff: int = 40, seed: int = 0):
    """verl-keyed metrics: a healthy climb, then at ``cliff`` the reward falls off and KL spikes."""
    import random

    rng = random.Random(seed)
    for s in range(1, n + 1):
        if s < cliff:
            r, kl, ent = 0.3 + 0.3 * s / cliff + rng.gauss(0, 0.01), 0.01 + rng.gauss(0, 0.001), 1.2 - 0.005 * s
        else:
            r, kl, ent = 0.05 + rng.gauss(0, 0.01), 0.6 + rng.gauss(0, 0.05), 0.2
        yield s, {"critic/score/mean": r, "critic/rewards/mean": r, "actor/kl_loss": kl, "actor/entropy": ent,
                  "actor/pg_loss": rng.gauss(0, 0.05), "actor/grad_norm": 0.5 + rng.random() * 0.1,
                  "response_length/mean": 200 + rng.gauss(0, 5)}
