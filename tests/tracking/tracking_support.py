"""Helpers shared by tracking tests (a uniquely named module: every test folder has its own conftest)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


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


def finish_current_run() -> None:
    """After a test of W&B's module-level calls (``wandb.init`` sets a current run): finish a run the test left
    current, so the next test starts with none."""
    from rlcockpit.tracking import run as run_module

    if run_module._current is not None:
        run_module._current.finish()
    run_module._current = None
