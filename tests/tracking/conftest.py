"""Shared helpers for tracking/store tests: a fresh store per test and a quiet, fast ``init``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rlcockpit
from rlcockpit.tracking import run as run_module

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


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


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    env.update(extra)
    return env


def spawn(code: str, **env: str) -> subprocess.Popen:
    """A real child Python process running ``code`` (stdout piped, line-buffered text)."""
    return subprocess.Popen([PYTHON, "-u", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=child_env(**env))
