"""Shared helpers for tracking/store tests: a fresh store per test and a quiet, fast ``init``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tracking_support import PYTHON, REPO, child_env, spawn  # noqa: F401 - re-exported for fixtures

import rlcockpit
from rlcockpit.tracking import run as run_module


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def start(store_dir: Path):
    """``rlcockpit.init`` with test-friendly defaults; every run is finished at teardown."""
    runs: list[rlcockpit.Run] = []

    def _start(**kw: Any) -> rlcockpit.Run:
        kw.setdefault("dir", store_dir)
        kw.setdefault("project", "proj")
        kw.setdefault("system_interval", None)
        kw.setdefault("capture_meta", False)
        kw.setdefault("health", False)
        run = rlcockpit.init(**kw)
        runs.append(run)
        return run

    yield _start
    for run in runs:
        run.finish()
    run_module._live_runs.clear()
