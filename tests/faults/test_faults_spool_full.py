"""The remote store's spool on a real filesystem that fills up (tmpfs) while the team server is down: logging
goes on, the spool holds only rows that were logged, what could not be held is a recorded ``data_lost`` range,
spooling resumes when space returns, and the uploader survives (it sends the spool once the server is back)."""

from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest
from faults_support import log_then_fill_the_disk

import rlcockpit
from rlcockpit.store.remote.spool import Spool
from rlcockpit.store.remote.wire import decode_batch

pytestmark = pytest.mark.faults


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: every upload is refused at once
    return port


def _spooled(path) -> tuple[list[int], list[tuple[int, int]]]:  # noqa: ANN001
    """(steps of k0 in the spool, lost ranges recorded in the spool), checking every spooled value. A loss that
    goes on is re-sent under its id (the server keeps the last version), so the last version of each counts."""
    spool = Spool(path, own=False)
    steps, losses = [], {}
    try:
        for _, _, body in spool.pending(max_bytes=1 << 30):
            op = json.loads(body)
            if "batch" not in op:
                continue
            batch = decode_batch(op["batch"])
            for key, (s, v, _) in batch.points.items():
                if key.startswith("k"):
                    assert np.array_equal(v, s.astype(float)), f"{key}: a spooled value is not the logged one"
            if "k0" in batch.points:
                steps += batch.points["k0"][0].tolist()
            losses.update({loss.id or id(loss): loss for loss in batch.losses})
    finally:
        spool.close()
    return steps, [tuple(r) for loss in losses.values() for r in loss.ranges]


def test_full_disk_under_the_spool_loses_nothing_silently_and_the_uploader_survives(small_disk, monkeypatch) -> None:
    """Before the fix the uploader thread died on the full disk (its error bookkeeping wrote to the spool and
    raised from the handler): nothing was uploaded again while the process lived."""
    monkeypatch.setenv("RLCOCKPIT_SERVER_FINISH_S", "1")
    run = rlcockpit.init(project="p", dir=small_disk.path / "store", server=f"http://127.0.0.1:{_dead_port()}",
                         system_interval=None, capture_meta=False, health=False, max_queue_bytes=256 * 1024)
    uploader = run.store.uploader
    uploader.interval_s = 0.05
    keys = [f"k{i}" for i in range(20)]
    step = log_then_fill_the_disk(run, small_disk, keys)
    assert uploader.is_alive(), "the uploader thread died on the full disk"
    small_disk.free()
    time.sleep(1.0)
    for _ in range(100):
        run.log({k: float(step) for k in keys}, step=step)
        step += 1
        time.sleep(0.001)
    assert run.flush(20)
    assert uploader.is_alive(), "the uploader thread died on the full disk"
    path = run.store.spool.path
    run.finish()
    steps, lost = _spooled(path)
    assert len(set(steps)) == len(steps), "a step was spooled twice"
    assert lost, "the disk was full for 3 s at a rate above the backlog: a loss must be recorded"
    covered = set(steps)
    for lo, hi in lost:
        both = sorted(covered & set(range(lo, hi + 1)))
        assert not both, f"steps {both[:5]}..{both[-5:]} ({len(both)}) are both spooled and reported lost in {lo}-{hi}"
        covered |= set(range(lo, hi + 1))
    assert covered == set(range(step)), "every step is either spooled or inside a recorded data_lost range"
    assert max(steps) == step - 1  # spooling resumed after space came back
