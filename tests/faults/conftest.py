"""Fixtures of the fault-injection suite (``pytest -m faults``)."""

from __future__ import annotations

import os

import pytest
from faults_support import SmallDisk

from rlcockpit.tracking import run as run_module


@pytest.fixture
def small_disk():
    disk = SmallDisk()
    yield disk
    for run in list(run_module._live_runs):
        run.finish(timeout=5)
    run_module._live_runs.clear()
    disk.close()
    assert not os.path.ismount(disk.path), f"the small disk {disk.path} is still mounted"
