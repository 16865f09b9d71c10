"""Finishing live runs when the process ends: interpreter exit, an uncaught exception, SIGTERM/SIGINT.

A run killed by SIGKILL (or the OOM killer) runs no code at all: its stored status stays ``running`` and
readers report it ``crashed`` once its heartbeat is stale (``rlcockpit.store.heartbeat_age_s``).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
from typing import Any

logger = logging.getLogger("rlcockpit")

_hooks_installed = False
live_runs: list[Any] = []


def install_exit_hooks(run: Any) -> None:
    """Finish ``run`` (and every other live run) at exit, on an uncaught exception and on SIGTERM/SIGINT."""
    global _hooks_installed
    live_runs.append(run)
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(finish_all, 0, None)
    prev_hook = sys.excepthook

    def excepthook(tp, value, tb):  # noqa: ANN001
        finish_all(1, f"{tp.__name__}: {value}")
        prev_hook(tp, value, tb)

    sys.excepthook = excepthook
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            _install_signal(sig)


def _install_signal(sig: signal.Signals) -> None:
    prev = signal.getsignal(sig)

    def handler(signum, frame, _prev=prev):  # noqa: ANN001
        name = signal.Signals(signum).name
        finish_all(128 + signum, f"killed by {name}", status="failed")
        if callable(_prev) and _prev not in (signal.SIG_IGN, signal.SIG_DFL):
            _prev(signum, frame)
        elif signum == signal.SIGINT:
            raise KeyboardInterrupt
        else:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    try:
        signal.signal(sig, handler)
    except (ValueError, OSError):
        pass


def finish_all(exit_code: int, reason: str | None, status: str | None = None) -> None:
    for run in list(live_runs):
        if not run.finished:
            try:
                run.finish(exit_code, status=status, reason=reason, timeout=10.0)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: finishing run %s failed: %s", run.id, exc)
    live_runs.clear()
