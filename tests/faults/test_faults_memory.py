"""Bounded memory at full speed while the store cannot be written: the queue and the store's backlog
stay within ``max_queue_bytes`` each (measured with tracemalloc), what is stored is a prefix with
recorded gaps, and every step is either stored or inside a recorded ``data_lost`` range."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from faults_support import DatabaseLocker

import rlcockpit
from rlcockpit.store.batch import merge_ranges

pytestmark = [pytest.mark.faults, pytest.mark.slow]

BOUND = 4 * 1024 * 1024


def test_full_speed_into_a_locked_store_stays_within_its_byte_bounds(tmp_path: Path) -> None:
    store_dir = tmp_path / "s"
    run = rlcockpit.init(project="p", dir=store_dir, system_interval=None, capture_meta=False, health=False,
                         max_queue_bytes=BOUND)
    keys = [f"actor/metric_{i}" for i in range(50)]
    run.log({k: 0.0 for k in keys}, step=0)
    assert run.flush(10)
    locker = DatabaseLocker(store_dir / "rlcockpit.db")
    tracemalloc.start()
    step = 1
    try:
        t_end = time.monotonic() + 3.0
        while time.monotonic() < t_end:
            run.log({k: step + i * 1e-3 for i, k in enumerate(keys)}, step=step)
            step += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        locker.release()
        locker.close()
    run.finish()
    # the queue (4 MiB) and the backlog (4 MiB) by estimate; the estimate must not undercount reality
    assert peak < 3 * BOUND, f"peak {peak / 2**20:.1f} MiB for two 4 MiB bounds"
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    steps, vals, _ = stored.series(keys[7])
    assert np.allclose(vals, steps + 7e-3) or steps[0] == 0
    assert np.array_equal(stored.series(keys[0])[0], steps)
    lost = merge_ranges([r for e in stored.events("data_lost") for r in e["payload"]["ranges"]])
    assert lost, f"{step} steps into a locked store with an 8 MiB budget: something must be lost"
    got = set(steps.tolist())
    covered = set(got)
    for lo, hi in lost:
        span = set(range(lo, hi + 1))
        assert not span & got, "a step is both stored and recorded as lost"
        covered |= span
    assert covered == set(range(step))
    first_gap = lost[0][0]
    assert set(range(first_gap)) <= got, "what is stored before the first gap is a prefix"
