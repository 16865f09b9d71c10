"""Shared helpers for the health tests: feed a synthetic trace through a monitor."""

from __future__ import annotations

import pytest

from rlcockpit.health import HealthMonitor
from rlcockpit.health.findings import Finding
from rlcockpit.health.synthetic import Trace, make_trace


def run_trace(trace: Trace, settings: dict | None = None) -> list[Finding]:
    monitor = HealthMonitor(settings, trace.config)
    for step, metrics in trace.metrics:
        if step in trace.samples:
            monitor.observe_samples(step, trace.samples[step])
        monitor.observe(step, metrics)
    monitor.close()
    return monitor.findings


@pytest.fixture
def trace_findings():
    def go(kind: str, seed: int = 0, settings: dict | None = None) -> tuple[Trace, list[Finding]]:
        trace = make_trace(kind, seed)
        return trace, run_trace(trace, settings)

    return go
