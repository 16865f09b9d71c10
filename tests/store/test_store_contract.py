"""One store test-suite, run against both implementations: the embedded SQLite store and PostgreSQL.

Ported from tests/tracking/test_store_sqlite.py (chunked appends, ranges, spikes, ambiguity) and extended
with everything the interface promises: atomic batches, samples/findings/events round trips, loss
records (upserts), finding counts, list_runs(fields=), delete, meta patches, reopening from another
connection, and URL selection.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from rlcockpit.store import open_store
from rlcockpit.store.base import StoreUnavailable
from rlcockpit.store.batch import DataLoss, WriteBatch

CHUNK = 2048


def _series(n: int, start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    steps = np.arange(start, start + n, dtype=np.int64)
    return steps, steps.astype(np.float64) * 0.5, np.full(n, 1.7e9)


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path: Path) -> str:
    """What ``open_store`` is given: a SQLite URL or a PostgreSQL URL (a fresh schema)."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path / 'store'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(target: str):
    s = open_store(target)
    s.create_run({"id": "r1", "project": "p", "name": "n"})
    yield s
    s.close()


def test_url_selects_the_implementation(target: str, store) -> None:
    kind = type(store).__name__
    assert kind == ("SQLiteStore" if target.startswith("sqlite") else "PostgresStore")


def test_many_small_appends_across_chunk_boundaries(store, target: str) -> None:
    sizes = [1, 7, CHUNK - 8, 1, 3 * CHUNK + 5, 2] + [3] * 40  # 40 small writes: the PG tail is compacted
    start = 0
    for n in sizes:
        store.append_points("r1", {"a": _series(n, start)})
        start += n
    steps, vals, _ = store.series("r1", "a")
    assert np.array_equal(steps, np.arange(start)) and np.array_equal(vals, np.arange(start) * 0.5)
    reopened = open_store(target)  # another connection, no writer caches, reads the same
    assert np.array_equal(reopened.series("r1", "a")[0], steps)
    reopened.append_points("r1", {"a": _series(3, start)})  # and can continue
    assert np.array_equal(reopened.series("r1", "a")[0], np.arange(start + 3))
    assert reopened.get_run("r1")["last_step"] == start + 2
    reopened.close()


def test_step_range_reads(store) -> None:
    store.append_points("r1", {"a": _series(10_000)})
    steps, _, _ = store.series("r1", "a", start_step=4000, end_step=4100)
    assert steps[0] == 4000 and steps[-1] == 4100 and len(steps) == 101
    steps, vals, ts = store.series("r1", "a", with_ts=False)
    assert len(ts) == len(steps) == 10_000


def test_downsampling_keeps_a_spike_and_nan(store) -> None:
    n = 200_000
    vals = np.random.default_rng(0).normal(0, 1, n)
    vals[77_777], vals[12_345], vals[50_001] = 1e6, -1e6, np.nan
    store.append_points("r1", {"loss": (np.arange(n, dtype=np.int64), vals, np.zeros(n))})
    steps, got, _ = store.series("r1", "loss", max_points=2000)
    assert len(steps) <= 2000 and {77_777, 12_345, 50_001} <= set(steps.tolist())
    assert np.nanmax(got) == 1e6 and np.nanmin(got) == -1e6 and np.all(np.diff(steps) > 0)


def test_non_finite_values_round_trip_exactly(store) -> None:
    vals = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])
    store.append_points("r1", {"x": (np.arange(5, dtype=np.int64), vals, np.arange(5.0))})
    got = store.series("r1", "x")[1]
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == -np.inf and got[3] == 1.5


def test_unknown_and_ambiguous_runs(store) -> None:
    store.create_run({"id": "r2", "project": "p", "name": "n", "created_at": 2e9})
    assert store.get_run("n")["id"] == "r2"  # a repeated name means the newest run
    with pytest.raises(KeyError, match="ambiguous"):
        store.get_run("r")
    with pytest.raises(KeyError, match="no run"):
        store.series("zzz", "a")
    with pytest.raises(ValueError, match="unknown run field"):
        store.update_run("r1", colour="red")


def test_run_rows_fields_and_listing(store) -> None:
    store.create_run({"id": "r2", "project": "q", "name": "other", "tags": ["a"], "config": {"lr": 1e-6},
                      "group": "g", "created_at": time.time() + 5})
    store.update_run("r2", summary={"acc": 0.5}, status="finished", group="g2")
    rows = store.list_runs()
    assert [r["id"] for r in rows] == ["r2", "r1"]  # newest first
    r2 = store.get_run("r2")
    assert r2["tags"] == ["a"] and r2["config"] == {"lr": 1e-6} and r2["summary"] == {"acc": 0.5}
    assert r2["group"] == "g2" and r2["status"] == "finished"
    slim = store.list_runs("q", fields=("summary",))
    assert len(slim) == 1 and slim[0]["summary"] == {"acc": 0.5} and slim[0]["config"] == {}


def test_write_batch_round_trip(store) -> None:
    batch = WriteBatch(points={"a": _series(5), "system/cpu": _series(5, 100)},
                       samples=[(3, [{"prompt": "p", "response": "r<script>", "reward": 1.0, "split": "val"}])],
                       findings=[{"id": "f1", "detector": "kl", "severity": "warning", "step": 4, "title": "KL"}],
                       events=[("checkpoint", {"path": "/x"}, 4)],
                       run_fields={"summary": {"a": 2.0}}, meta_patch={"host": "h"})
    store.write_batch("r1", batch, timeout_s=5)
    run = store.get_run("r1")
    assert run["last_step"] == 4  # system/* steps do not move last_step
    assert run["summary"] == {"a": 2.0} and run["meta"]["host"] == "h"
    assert store.samples("r1") == [{"step": 3, "idx": 0, "prompt": "p", "response": "r<script>", "reward": 1.0,
                                    "split": "val"}]
    assert store.samples("r1", query="SCRIPT")[0]["step"] == 3  # case-insensitive search
    assert store.sample_steps("r1") == [3]
    assert store.findings("r1")[0]["title"] == "KL"
    assert [e["kind"] for e in store.events("r1")] == ["checkpoint"]
    assert store.keys("r1") == ["a", "system/cpu"]


def test_write_batch_is_atomic(store) -> None:
    bad = WriteBatch(points={"a": _series(3)}, run_fields={"no_such_column": 1})
    with pytest.raises(ValueError):
        store.write_batch("r1", bad)
    assert len(store.series("r1", "a")[0]) == 0  # nothing of the failed batch was stored
    store.write_batch("r1", WriteBatch(points={"a": _series(3)}))
    assert len(store.series("r1", "a")[0]) == 3


def test_findings_counts_and_upsert(store) -> None:
    store.add_finding("r1", {"id": "f1", "detector": "d", "severity": "critical", "step": 1, "title": "t"})
    store.add_finding("r1", {"id": "f2", "detector": "d", "severity": "warning", "step": 2, "title": "t"})
    store.add_finding("r1", {"id": "f2", "detector": "d", "severity": "warning", "step": 2, "title": "t",
                             "resolved": True})
    assert len(store.findings("r1")) == 2
    assert store.finding_counts(["r1"]) == {"r1": {"critical": 1, "warning": 0, "info": 0}}


def test_data_loss_records_count_entries(store) -> None:
    store.add_data_loss("r1", DataLoss("metrics", "queue_full", [[5, 9]], entries=5, points=50))
    assert store.get_run("r1")["data_lost"] == 5
    ev = store.events("r1", "data_lost")
    assert ev[0]["step"] == 5 and ev[0]["payload"]["ranges"] == [[5, 9]]


def test_delete_run_removes_everything(store, target: str) -> None:
    store.write_batch("r1", WriteBatch(points={"a": _series(3)}, samples=[(1, [{"prompt": "x"}])],
                                       events=[("e", {}, 1)]))
    store.delete_run("r1")
    with pytest.raises(KeyError):
        store.get_run("r1")
    store.create_run({"id": "r1", "project": "p", "name": "n"})  # the id can be used again, empty
    assert store.keys("r1") == [] and store.samples("r1") == [] and store.events("r1") == []


def test_history_dataframe(store) -> None:
    store.append_points("r1", {"a": _series(4), "b": _series(2, 2)})
    df = store.history("r1")
    assert list(df.index) == [0, 1, 2, 3] and df.loc[3, "b"] == 1.5


def test_environment_selects_the_store(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCOCKPIT_STORE", target)
    s = open_store()
    s.create_run({"id": "env", "project": "p", "name": "e"})
    assert open_store(target).get_run("env")["name"] == "e"
    s.close()


def test_bad_urls_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown store URL scheme"):
        open_store("mysql://x/y")
    with pytest.raises(ValueError, match="RLCOCKPIT_SERVER"):
        open_store("https://team.example")
    with pytest.raises(ValueError, match="rlcockpit.db"):
        open_store(f"sqlite://{tmp_path}/other.db")


def test_unreachable_postgres_is_store_unavailable_without_password() -> None:
    from rlcockpit.server.pgcluster import free_port

    with pytest.raises(StoreUnavailable) as info:
        open_store(f"postgresql://u:hunter2@127.0.0.1:{free_port()}/db")
    assert info.value.reason == "io" and "hunter2" not in str(info.value) and "***" in str(info.value)
