"""Several dashboard worker processes on one listening socket (``rlcockpit ui --workers N``).

Why processes: one Python process serves requests on one core at a time (the GIL), and its one SQLite
connection is shared under a lock, so 200 concurrent clients queued behind each other (p99 ~8 s on two
cores). Forked workers each open their own connection to the store (a fresh one: no SQLite handle crosses
the fork; the parent closes its own first) and accept from the socket the parent bound, so the port is
known before serving. The parent only supervises: SIGINT/SIGTERM are passed on to the workers, a worker
that dies is replaced, and one that dies right after starting, twice, stops the server with an error
instead of restarting forever. Needs ``os.fork`` (Linux, macOS); elsewhere one process serves.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Callable

MAX_DEFAULT_WORKERS = 4
QUICK_DEATH_S = 2.0
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}  # a worker gone this soon after starting failed to start: do not restart it again


def default_workers() -> int:
    """One worker per CPU core, at most :data:`MAX_DEFAULT_WORKERS` (a local dashboard; each costs memory)."""
    if not hasattr(os, "fork"):
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1)))


def supervise(n: int, serve_one: Callable[[], None]) -> None:
    """Fork ``n`` workers that each call ``serve_one()`` (which returns when asked to stop) and wait for them.

    Raises ``RuntimeError`` when workers keep dying as they start (a bad store, a port problem)."""
    if not hasattr(os, "fork"):
        raise ValueError("several workers need os.fork (Linux, macOS): use --workers 1")
    children: dict[int, float] = {}
    state = {"stopping": False, "quick_deaths": 0}

    def spawn() -> None:
        # signals wait until the child has its own handlers and the parent has recorded the child
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            if state["stopping"]:  # a stop that came while starting: no more workers (none would be told)
                return
            pid = os.fork()
            if pid == 0:
                _worker_main(serve_one)
            children[pid] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def stop(signum: int, _frame: object) -> None:
        state["stopping"] = True
        for pid in list(children):
            _kill(pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    try:
        for _ in range(n):
            spawn()
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            started = children.pop(pid, None)
            if started is None or state["stopping"]:
                continue
            if time.monotonic() - started < QUICK_DEATH_S:
                state["quick_deaths"] += 1
                if state["quick_deaths"] >= 2:
                    stop(signal.SIGTERM, None)
                    raise RuntimeError(f"dashboard workers exit as they start (last status {status}); see the "
                                       "messages above")
            print(f"rlcockpit ui: worker {pid} exited (status {status}); starting another", file=sys.stderr)
            spawn()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for pid in list(children):
            _kill(pid, signal.SIGKILL)


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _worker_main(serve_one: Callable[[], None]) -> None:
    """The forked child: default signal handling (uvicorn installs its own), serve, and leave without running
    the parent's exit handlers or finalizers (``os._exit``)."""
    code = 0
    try:
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        serve_one()
    except KeyboardInterrupt:
        pass
    except BaseException:  # noqa: BLE001 - reported, then the supervisor decides
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
