"""A real filesystem that fills up under the store (tmpfs; see faults_support for the fallback)."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import numpy as np
import pytest
from faults_support import child_env, log_then_fill_the_disk

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.store import open_store

pytestmark = pytest.mark.faults


def _pts(steps, value):  # noqa: ANN001, ANN202
    s = np.asarray(steps, dtype=np.int64)
    return s, np.full(len(s), float(value)), np.full(len(s), 1.7e9)


def test_failed_write_never_moves_points_to_another_key(small_disk) -> None:
    """Defect 1: a rolled-back key id must not be reused from the cache for a later, different key."""
    store = small_disk.attach(open_store(small_disk.path / "store"))
    store.create_run({"id": "r", "project": "p", "name": "n"})
    store.append_points("r", {"train/loss": _pts(range(100), 0.5)})
    small_disk.fill()
    with pytest.raises(OSError) as info:
        for _ in range(50):  # a first small write may still fit in pages SQLite already owns
            store.append_points("r", {"val/acc": _pts([100], 0.25), "pad/" + "x" * 50: _pts(range(2000), 1.0)})
    message = str(info.value)
    assert "full" in message and "no transaction is active" not in message  # the real error, not a 2nd ROLLBACK
    small_disk.free()
    store.append_points("r", {"val/reward": _pts([150], 0.99)})
    store.append_points("r", {"val/acc": _pts([200], 0.5)})
    assert "val/acc" in store.keys("r")
    assert store.series("r", "val/reward")[0].tolist() == [150]
    assert store.series("r", "val/reward")[1].tolist() == [0.99]
    assert store.series("r", "val/acc")[0].tolist() == [200]
    fresh = open_store(small_disk.path / "store")  # what another process reads
    assert fresh.series("r", "val/acc")[1].tolist() == [0.5]
    assert fresh.series("r", "train/loss")[0].tolist() == list(range(100))


def _loss_ranges(events):  # noqa: ANN001, ANN202
    out = []
    for e in events:
        out += [tuple(r) for r in e["payload"]["ranges"]]
    return sorted(out)


def test_full_disk_keeps_retrying_writes_what_it_holds_and_records_losses(small_disk, capsys) -> None:
    """Defect 2: the store logger is never disabled for good; after space returns, what was held is written,
    what could not be held is a recorded ``data_lost`` range, and the run is ``finished`` honestly."""
    store_dir = small_disk.path / "store"
    run = rlcockpit.init(project="p", name="full", dir=store_dir, system_interval=None, capture_meta=False,
                         health=False, max_queue_bytes=256 * 1024)
    small_disk.attach(run.store)
    keys = [f"k{i}" for i in range(20)]
    step = log_then_fill_the_disk(run, small_disk, keys)
    small_disk.free()
    time.sleep(0.5)  # the writer catches up (its retry backoff is at most 5 s; finish() forces one now)
    for _ in range(100):
        run.log({k: float(step) for k in keys}, step=step)
        step += 1
        time.sleep(0.001)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    got = stored.series("k0")[0]
    assert np.array_equal(stored.series("k0")[1], got.astype(float))  # every stored value is right
    lost = _loss_ranges(stored.events("data_lost"))
    assert lost, "the disk was full for 3 s at a rate above the buffer: a loss must be recorded"
    covered = set(got.tolist())
    for lo, hi in lost:
        assert not covered & set(range(lo, hi + 1)), "a step is both stored and reported lost"
        covered |= set(range(lo, hi + 1))
    assert covered == set(range(step)), "every step is either stored or inside a recorded data_lost range"
    assert got[-1] == step - 1  # writing resumed after space came back
    assert main(["show", run.id, "--dir", str(store_dir)]) == 0
    out = capsys.readouterr().out
    assert "data lost" in out.lower() and f"{lost[0][0]}" in out


def test_init_on_a_full_disk_is_one_clear_error(small_disk) -> None:
    store_dir = small_disk.path / "store"
    open_store(store_dir).close()
    small_disk.fill()
    if small_disk.kind != "tmpfs":
        pytest.skip("the page-count fallback cannot reach a store that init() opens itself")
    with pytest.raises(OSError) as info:
        for i in range(200):  # the first runs may fit in free pages of the database file
            rlcockpit.init(project="p", name=f"r{i}", dir=store_dir, system_interval=None, health=False,
                           config={"blob": "x" * 20000})
    text = str(info.value)
    assert "full" in text and str(store_dir) in text


def test_full_disk_warning_is_reported_once_not_per_batch(small_disk, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rlcockpit")
    store_dir = small_disk.path / "store"
    run = rlcockpit.init(project="p", dir=store_dir, system_interval=None, capture_meta=False, health=False)
    small_disk.attach(run.store)
    run.log({"x": 0.0}, step=0)
    run.flush()
    small_disk.fill()
    for step in range(1, 2000):
        run.log({"x": float(step)}, step=step)
        if step % 100 == 0:
            time.sleep(0.02)
    time.sleep(1.0)
    small_disk.free()
    run.finish()
    full = [r for r in caplog.records if "full" in r.getMessage()]
    assert 1 <= len(full) <= 3, [r.getMessage() for r in full]
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.status == "finished"
    assert stored.series("x")[0].tolist() == list(range(2000))  # the buffer held it all: nothing lost
    assert stored.events("data_lost") == []


def test_a_run_that_cannot_be_completed_says_so_once_with_what_was_not_written(small_disk) -> None:
    """A child process with no logging set up (a plain training script): the closing error came twice on stderr,
    once printed and once from logging's last resort (found by hand on a 2 MiB tmpfs, session of 2026-12-07)."""
    if small_disk.kind != "tmpfs":
        pytest.skip("needs a real filesystem filling up under a store init() opens itself")
    code = (
        "import sys, rlcockpit\n"
        "run = rlcockpit.init(project='p', dir=sys.argv[1], system_interval=None, capture_meta=False, health=False)\n"
        "run.log({'x': 0.0}, step=0); run.flush()\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "for s in range(1, 3000): run.log({f'k{i}': float(s) for i in range(20)}, step=s)\n"
        "run.finish(timeout=3)\n")
    child = subprocess.Popen([sys.executable, "-u", "-c", code, str(small_disk.path / "store")],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=child_env())
    assert child.stdout.readline().strip() == "ready"
    small_disk.fill()
    _out, err = child.communicate("go\n", timeout=120)
    assert child.returncode == 0, err
    closing = [line for line in err.splitlines() if "could not be completed in the store" in line]
    assert len(closing) == 1, err
    assert "not written: metrics of steps" in closing[0] and "-2999" in closing[0]
