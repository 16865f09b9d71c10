"""The SQLite store on its own: chunked appends, ranges, downsampling that keeps spikes, status."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from rlcockpit.store import effective_status, open_store
from rlcockpit.store.downsample import minmax_downsample
from rlcockpit.store.sqlite import CHUNK_POINTS


def _series(n: int, start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    steps = np.arange(start, start + n, dtype=np.int64)
    return steps, steps.astype(np.float64) * 0.5, np.full(n, 1.7e9)


@pytest.fixture
def store(tmp_path: Path):
    s = open_store(tmp_path)
    s.create_run({"id": "r1", "project": "p", "name": "n"})
    yield s
    s.close()


def test_many_small_appends_across_chunk_boundaries(store, tmp_path: Path) -> None:
    sizes = [1, 7, CHUNK_POINTS - 8, 1, 3 * CHUNK_POINTS + 5, 2]
    start = 0
    for n in sizes:
        store.append_points("r1", {"a": _series(n, start)})
        start += n
    steps, vals, ts = store.series("r1", "a")
    assert np.array_equal(steps, np.arange(start)) and np.array_equal(vals, np.arange(start) * 0.5)
    reopened = open_store(tmp_path)  # a fresh process-level view (no writer caches) reads the same
    assert np.array_equal(reopened.series("r1", "a")[0], steps)
    reopened.append_points("r1", {"a": _series(3, start)})  # and can continue the partial tail chunk
    assert np.array_equal(reopened.series("r1", "a")[0], np.arange(start + 3))
    assert reopened.get_run("r1")["last_step"] == start + 2


def test_step_range_reads(store) -> None:
    store.append_points("r1", {"a": _series(10_000)})
    steps, _, _ = store.series("r1", "a", start_step=4000, end_step=4100)
    assert steps[0] == 4000 and steps[-1] == 4100 and len(steps) == 101


def test_downsampling_keeps_a_one_step_spike_in_a_million_points(store) -> None:
    n = 1_000_000
    rng = np.random.default_rng(0)
    vals = rng.normal(0, 1, n)
    vals[777_777] = 1e6  # a one-step spike
    vals[123_457] = -1e6  # and a dip
    vals[500_001] = np.nan  # NaN is evidence too
    store.append_points("r1", {"loss": (np.arange(n, dtype=np.int64), vals, np.zeros(n))})
    t0 = time.perf_counter()
    steps, got, _ = store.series("r1", "loss", max_points=2000)
    elapsed = time.perf_counter() - t0
    assert len(steps) <= 2000
    assert 777_777 in steps and 123_457 in steps and 500_001 in steps
    assert np.nanmax(got) == 1e6 and np.nanmin(got) == -1e6
    assert np.all(np.diff(steps) > 0)
    assert elapsed < 2.0  # the benchmark asserts the real target (≤100 ms); this only catches blowups


def test_minmax_downsample_small_inputs_untouched() -> None:
    s = _series(10)
    assert minmax_downsample(*s, 100)[0] is s[0]


def test_staleness_threshold_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    run = {"status": "running", "heartbeat_at": 100.0}
    assert effective_status(run, now=130.0) == "running"  # default: 60 s
    monkeypatch.setenv("RLCOCKPIT_STALE_S", "10")
    assert effective_status(run, now=130.0) == "crashed"
    assert effective_status({**run, "status": "finished"}, now=1e9) == "finished"
    monkeypatch.setenv("RLCOCKPIT_STALE_S", "soon")
    with pytest.raises(ValueError, match="RLCOCKPIT_STALE_S"):
        effective_status(run, now=130.0)


def test_unknown_and_ambiguous_runs(store) -> None:
    store.create_run({"id": "r2", "project": "p", "name": "n", "created_at": 2e9})
    assert store.get_run("n")["id"] == "r2"  # a repeated name means the newest run
    with pytest.raises(KeyError, match="ambiguous"):
        store.get_run("r")  # an id prefix must be unique
    with pytest.raises(KeyError, match="no run"):
        store.series("zzz", "a")
    with pytest.raises(ValueError, match="unknown run field"):
        store.update_run("r1", colour="red")
