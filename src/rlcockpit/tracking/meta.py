"""What is saved with a run so it can be reproduced: command, git state, packages, host."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from typing import Any

from rlcockpit.redact import redact_argv

PACKAGES = ("rlcockpit", "torch", "transformers", "peft", "trl", "verl", "vllm", "numpy", "pandas",
            "wandb", "mlflow", "tensorboard", "swanlab", "accelerate", "deepspeed", "ray")
MAX_DIFF_BYTES = 1_000_000


def _git(args: list[str], cwd: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_state(cwd: str | None = None) -> dict[str, Any] | None:
    """Commit, branch, dirty flag and uncommitted diff of the working directory's repository."""
    cwd = cwd or os.getcwd()
    commit = _git(["rev-parse", "HEAD"], cwd)
    if not commit:
        return None
    diff = _git(["diff", "HEAD"], cwd) or ""
    truncated = len(diff.encode()) > MAX_DIFF_BYTES
    if truncated:
        diff = diff.encode()[:MAX_DIFF_BYTES].decode(errors="ignore")
    status = _git(["status", "--porcelain"], cwd) or ""
    return {
        "commit": commit.strip(),
        "branch": (_git(["rev-parse", "--abbrev-ref", "HEAD"], cwd) or "").strip(),
        "dirty": bool(status.strip()),
        "diff": diff,
        "diff_truncated": truncated,
        "root": (_git(["rev-parse", "--show-toplevel"], cwd) or "").strip(),
    }


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def collect_meta(capture_git: bool = True) -> dict[str, Any]:
    return {
        "command": redact_argv(sys.argv),
        "cwd": os.getcwd(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "git": git_state() if capture_git else None,
    }
