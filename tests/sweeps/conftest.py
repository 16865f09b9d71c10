"""Fixtures shared by the sweep tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sweeps_support import env

from rlcockpit.tracking import run as run_module


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A sweep workspace: the store under ``tmp_path/store`` through the environment a trial sees, ``tmp_path``
    as the working directory, and no current run left behind."""
    for k, v in env(tmp_path / "store").items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    run_module._current = None
