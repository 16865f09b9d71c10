"""The trainer logs its own process's resident memory (``perf/proc_rss_gb``, an alias of the system sampler's
``system/proc_rss_gb``) at every step, beside verl's
``perf/cpu_memory_used_gb`` (the whole machine's used memory, ``psutil.virtual_memory().used``).

Found before: only the system sampler logged the RSS, every 10 s, so a 300-step CPU run held 2 to 12 readings
(rlcockpit_trainer_cpu18). memory_growth then judged the machine's used memory, which other jobs on a shared host
move by gigabytes, and warned on 5 of 13 healthy runs whose own RSS stayed at 0.49 GB."""

from __future__ import annotations

import psutil
import torch

from rlcockpit.trainer.observe.metrics import perf_metrics

MiB = 1 << 20


def test_perf_metrics_give_this_processs_rss_beside_the_machines_used_memory():
    cpu = torch.device("cpu")
    before = perf_metrics(10, 1.0, cpu)
    held = bytearray(b"\x01" * (128 * MiB))  # touched: resident
    after = perf_metrics(10, 1.0, cpu)
    grown = (after["perf/proc_rss_gb"] - before["perf/proc_rss_gb"]) * 1024
    assert 120 <= grown <= 136, grown  # this process's 128 MiB, not another's
    assert abs(after["perf/proc_rss_gb"] - psutil.Process().memory_info().rss / 2**30) < 0.05
    # verl's key stays the machine's used memory (within 1 GB: other processes move it meanwhile)
    assert abs(after["perf/cpu_memory_used_gb"] - psutil.virtual_memory().used / 2**30) < 1.0
    del held


def test_every_training_step_logs_the_process_rss(tiny_cfg):
    from rlcockpit.store import open_store
    from rlcockpit.trainer.loop import train

    cfg = tiny_cfg("trainer.total_training_steps=3", "trainer.test_freq=0", "trainer.val_before_train=false")
    result = train(cfg, log=lambda *_: None)
    store = open_store(cfg.trainer.rlcockpit_dir)
    steps, values, _ = store.series(result.run_id, "perf/proc_rss_gb", with_ts=False)
    assert sorted(int(s) for s in steps) == [1, 2, 3]  # once a step: the sampler keeps its own key
    assert all(0.05 < v < psutil.virtual_memory().total / 2**30 for v in values)
    machine, _, _ = store.series(result.run_id, "perf/cpu_memory_used_gb", with_ts=False)
    assert {int(s) for s in machine} == {1, 2, 3}  # verl's key is kept as it was
