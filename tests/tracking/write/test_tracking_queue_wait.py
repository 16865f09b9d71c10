"""Backpressure on a full log queue (``$RLCOCKPIT_QUEUE_WAIT_S``): a producer faster than the writer waits for
room instead of losing steps (the default waits 5 s: test_faults_locked); 0 drops at once and records each gap."""

from __future__ import annotations

import time

import rlcockpit


def _run(tmp_path, monkeypatch, wait):
    monkeypatch.setenv("RLCOCKPIT_QUEUE_WAIT_S", str(wait))
    return rlcockpit.init(project="p", dir=tmp_path, system_interval=None, capture_meta=False, health=False,
                          max_queue_bytes=8_000)  # about two entries: the writer cannot keep up


def test_backpressure_keeps_every_step_of_a_full_speed_producer(tmp_path, monkeypatch) -> None:
    run = _run(tmp_path, monkeypatch, 2.0)
    keys = [f"k{i}" for i in range(50)]
    for step in range(3000):
        run.log({k: float(step) for k in keys}, step=step)
    run.finish()
    assert run.dropped == 0
    assert run.store.series(run.id, "k49")[0].tolist() == list(range(3000))
    assert not run.store.events(run.id, "data_lost")


def test_a_stuck_writer_costs_one_wait_then_drops_are_recorded(tmp_path, monkeypatch) -> None:
    run = _run(tmp_path, monkeypatch, 0.3)
    keys = [f"k{i}" for i in range(50)]
    run.log({k: 0.0 for k in keys}, step=0)
    assert run.flush(10)
    stall = run._budget.released  # the writer "stops": nothing it takes off the queue from now on
    real_release = run._budget.__class__.release
    run._budget.__class__.release = lambda self, n: None
    try:
        t0 = time.monotonic()
        for step in range(1, 400):
            run.log({k: float(step) for k in keys}, step=step)
        took = time.monotonic() - t0
    finally:
        run._budget.__class__.release = real_release
    assert run._budget.released == stall and run.dropped > 300
    assert 0.25 <= took < 1.5  # one wait of 0.3 s, not one per dropped call (which would be 100+ s)
    run.finish()
    lost = run.store.events(run.id, "data_lost")
    assert sum(e["payload"]["entries"] for e in lost) == run.dropped
