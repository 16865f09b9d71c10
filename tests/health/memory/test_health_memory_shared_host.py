"""The machine's memory percent (``system/memory_percent``) on a shared host, judged against the run's own RSS
(issue 29: "``make demo`` on a shared machine prints no warning").

rlcockpit's sampler logs ``system/proc_rss_gb`` beside ``system/memory_percent`` and ``system/memory_used_gb``.
``make demo`` beside a test suite saw the machine go 14% -> 19% while the demo's own RSS was flat, and
``host_memory`` warned "Host memory creeping up". A climb the run's RSS does not share is another process's; a leak
in the run grows its RSS with the machine's.
"""

from __future__ import annotations

import numpy as np

from rlcockpit.health import HealthMonitor

TOTAL_GB = 24.0


def shared_host(own_leak_gb: float, others_gb: float, seed: int = 0):
    """160 steps: the machine at 14% (3.36 GB of 24) plus ``others_gb`` spread over steps 60-160 by other processes,
    plus the run's own leak of ``own_leak_gb`` a step from step 60 (in its RSS too); ±0.1 GB sampling noise."""
    rng = np.random.default_rng(seed)
    for step in range(1, 161):
        ramp = max(step - 60, 0)
        own = 0.45 + own_leak_gb * ramp
        used = 3.36 + others_gb * ramp / 100 + own_leak_gb * ramp + 0.1 * rng.standard_normal()
        yield step, {"system/proc_rss_gb": own, "system/memory_used_gb": used,
                     "system/memory_percent": 100 * used / TOTAL_GB, "system/memory_total_gb": TOTAL_GB}


def host_warnings(run) -> list[int]:
    mon = HealthMonitor()
    return [f.step for step, m in run for f in mon.observe(step, m) if f.detector == "host_memory"]


def test_other_processes_filling_the_machine_are_not_the_runs_leak():
    """The machine +1.5 GB (14% -> 20%) from other jobs, the run's RSS flat: no warning."""
    assert host_warnings(shared_host(own_leak_gb=0.0, others_gb=1.5)) == []


def test_a_leak_in_the_run_itself_is_still_found():
    """The run's RSS +15 MB a step (+1.5 GB over 100 steps), the machine's with it: warned."""
    hits = host_warnings(shared_host(own_leak_gb=0.015, others_gb=0.0))
    assert hits and hits[0] < 160, hits


def test_machine_percent_alone_is_still_judged():
    """A run (e.g. a W&B export) that logs only the machine's percent keeps the percent rule."""
    run = ((s, {"system/memory_percent": m["system/memory_percent"]}) for s, m in shared_host(0.0, 1.5))
    assert host_warnings(run)
