"""Several processes write different runs to one store while a reader reads."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from tracking_support import spawn

import rlcockpit

WRITER = """
import rlcockpit, time
run = rlcockpit.init(project="multi", name="w{i}", dir={dir!r}, system_interval=None, capture_meta=False, health=False)
for step in range({steps}):
    run.log({{f"k{{j}}": float(step * j) for j in range(10)}}, step=step)
    if step % 50 == 0:
        run.log_samples([{{"prompt": "p", "response": str(step), "reward": 1.0}}], step=step)
    time.sleep(0.001)
run.finish()
"""


@pytest.mark.slow
def test_concurrent_writers_and_a_reader(store_dir: Path) -> None:
    n_procs, steps = 3, 1500
    rlcockpit.Api(store_dir)  # create the store up front so writers don't race on the schema
    procs = [spawn(WRITER.format(i=i, dir=str(store_dir), steps=steps)) for i in range(n_procs)]
    api = rlcockpit.Api(store_dir)
    reads, seen_running = 0, False
    try:
        while any(p.poll() is None for p in procs):
            for run in api.runs("multi"):
                df = run.history(["k1"])
                if len(df):  # always a consistent prefix, never a torn chunk
                    assert np.array_equal(df.index.to_numpy(), np.arange(len(df)))
                    assert np.array_equal(df["k1"].to_numpy(), np.arange(len(df), dtype=float))
                seen_running |= run.status == "running"
                reads += 1
            time.sleep(0.05)
        errors = [p.stderr.read() for p in procs if p.returncode != 0]
        assert not errors, errors
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert reads > 0 and seen_running
    runs = {r.name: r for r in api.runs("multi")}
    assert sorted(runs) == [f"w{i}" for i in range(n_procs)]
    for run in runs.values():
        assert run.status == "finished"
        df = run.history()
        assert len(df) == steps and len(df.columns.drop(["_step", "_runtime", "_timestamp"])) == 10
        assert df["k9"].iloc[-1] == (steps - 1) * 9
        assert len(run.samples()) == steps // 50
