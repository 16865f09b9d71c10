"""The system sampler on a CPU-only machine: psutil keys under ``system/``, NVML fails soft."""

from __future__ import annotations

import time
from pathlib import Path

import rlcockpit
from rlcockpit.tracking.system import NvmlReader, SystemSampler


def test_system_metrics_are_sampled_into_the_store(start, store_dir: Path) -> None:
    run = start(system_interval=0.2)
    for step in range(5):
        run.log({"x": float(step)}, step=step)
        time.sleep(0.15)
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    sysdf = stored.system()
    assert len(sysdf) >= 2
    for key in ("system/cpu_percent", "system/proc_rss_gb", "system/memory_percent", "system/disk_read_mb_s"):
        assert key in sysdf.columns, sysdf.columns
    assert (sysdf["system/proc_rss_gb"] > 0).all()
    assert sysdf.index.is_monotonic_increasing and sysdf.index.min() > 1e9  # wall-clock timestamps
    assert "step" in sysdf.columns
    assert not any(k.startswith("system/") for k in stored.history().columns)  # history is training metrics
    assert stored.last_step == 4  # system samples don't move the training step


def test_nvml_without_gpu_fails_soft(start) -> None:
    reader = NvmlReader()
    if not reader.available:
        assert reader.read() == {}
        assert reader.reason
    run = start()
    sample = SystemSampler(run, interval=60).sample()
    assert all(k.startswith("system/") for k in sample)
    if not reader.available:
        assert not any(k.startswith("system/gpu/") for k in sample)
