"""Observers — what reads a run as it is logged (the health monitor) — and the guardrail link.

Tracking knows an observer only through :class:`Observer`; it never imports one. The observer a run gets
is found by name in :data:`OBSERVERS` (``"health"`` is registered by :mod:`rlcockpit.defaults`), and made
by the composition in :mod:`rlcockpit.tracking.parts`.

Observers run on their own thread (:class:`ObserverThread`), fed by the writer after each drain, so the
store is never slowed by them. Their queue is bounded in steps: when observers fall behind (a run
logging tens of thousands of steps a second with the detectors on), steps beyond the bound are not
observed — counted, reported once, and recorded as a ``health_skipped`` event — but always stored.

Findings go back to the writer (stored, and handed to the loggers) and to the run's ``on_finding``
listeners (alerts, the console, the :class:`GuardrailLink`).

An observer may also follow the wall clock (``tick``): about once a second the thread hands it the steps observed
since the last tick with the time each was logged, so it can tell a run that stopped making progress while its
process lives (the health monitor's stall finding). A tick is skipped while the observer is behind the run's
logging: steps the run logged and the thread has not seen yet are progress, not a stall.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from rlcockpit.registry import Registry
from rlcockpit.store.batch import merge_ranges
from rlcockpit.tracking.write.entries import Barrier, ConfigChange, Derived, Event, FindingIn, Stop

logger = logging.getLogger("rlcockpit")

MAX_PENDING_STEPS = 20_000
TICK_S = 1.0  # seconds between an observer's wall-clock ticks


class Observer(Protocol):
    """What observes a run: pure consumers of ``(step, metrics)`` and ``(step, sample rows)``.

    ``observe`` returns the findings a step triggered; ``observe_samples`` returns ``(derived metrics,
    findings)`` — derived metrics (``samples/*`` statistics) are stored with the run at that step; ``close``
    returns the findings only the end of the run reveals. ``describe(finding)`` (optional) is the
    finding's console text.
    """

    def observe(self, step: int, metrics: Mapping[str, float]) -> Sequence[Any]: ...

    def observe_samples(self, step: int, rows: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, float],
                                                                                     Sequence[Any]]: ...

    def close(self) -> Sequence[Any]: ...

    # optional: ``tick(now, arrivals)`` -> findings; ``now`` the unix time, ``arrivals`` the ``(step, unix time
    # logged)`` of the steps observed since the last tick (a live run's wall clock: see the module docstring)


# name -> factory(settings: Mapping | None, run_config: dict) -> Observer
OBSERVERS: Registry[Callable[[Mapping[str, Any] | None, dict[str, Any]], Observer]] = Registry("observer", wired=True)


class ObserveRows(NamedTuple):
    rows: list[tuple[int, float, Mapping[str, float]]]


class ObserveSamples(NamedTuple):
    step: int
    rows: list[dict[str, Any]]


class GuardrailAction(Protocol):
    """What guardrails read of a finding's recommended action (a health ``Action``)."""

    title: str
    overrides: Sequence[str]  # ``key=value`` texts in the run's config vocabulary


class GuardrailFinding(Protocol):
    """What guardrails read of a finding that crossed the link (a health ``Finding``): the link's contract, so
    the trainer decides on findings without importing health."""

    id: Any
    detector: str
    title: str
    severity: str
    step: int
    step_start: int | None
    step_end: int | None
    actions: Sequence[GuardrailAction]


class GuardrailLink:
    """The one channel from a run's observers to a trainer's guardrails.

    The observer thread :meth:`deliver`-s warning/critical findings into a thread-safe inbox and marks
    the steps it has seen; the trainer, between steps, calls :meth:`sync` (wait until every step logged
    so far was observed — deterministic decisions on every rerun) and :meth:`take` (the findings).
    """

    def __init__(self) -> None:
        self._inbox: deque[Any] = deque()
        self.observed_step = -1
        self._request: Callable[[], Barrier] | None = None  # set by the run: queues an observers-only barrier

    def deliver(self, finding: Any) -> None:
        if getattr(finding, "severity", None) in ("warning", "critical"):
            self._inbox.append(finding)

    def mark(self, step: int) -> None:
        if step > self.observed_step:
            self.observed_step = step

    def take(self) -> list[Any]:
        out = []
        while self._inbox:
            out.append(self._inbox.popleft())
        return out

    def sync(self, timeout: float = 10.0) -> bool:
        """Block until the observers have processed everything logged before this call (bounded)."""
        if self._request is None:
            return True
        return self._request().done.wait(timeout)


class ObserverThread(threading.Thread):
    """Runs one observer over the validated stream the writer hands it."""

    def __init__(self, make: Callable[[dict[str, Any]], Observer | None], config: dict[str, Any], *,
                 emit: Callable[[Any], None], listeners: list[Callable[[Any], None]],
                 link: GuardrailLink | None = None, max_pending_steps: int = MAX_PENDING_STEPS,
                 current_step: Callable[[], int] | None = None) -> None:
        super().__init__(name="rlcockpit-observers", daemon=True)
        self._make = make
        self.observer = make(config)
        self.emit, self.listeners, self.link = emit, listeners, link
        self.max_pending = max_pending_steps
        self.queue: deque[Any] = deque()
        self.pending_steps = 0
        self.skipped: list[list[int]] = []
        self.skipped_steps = 0
        self._wake = threading.Event()
        self.done = threading.Event()
        self.current_step = current_step  # the run's last logged step: a tick is skipped while we are behind it
        self._arrivals: deque[tuple[int, float]] = deque(maxlen=64)  # more than any stall watch's window
        self._observed = -1
        self._next_tick = time.monotonic() + TICK_S

    # ---- writer side -------------------------------------------------------------------------
    def submit_rows(self, rows: list[tuple[int, float, Mapping[str, float]]]) -> None:
        if self.pending_steps + len(rows) > self.max_pending:
            self._skip([[r[0], r[0]] for r in rows])
            return
        self.pending_steps += len(rows)
        self.queue.append(ObserveRows(rows))
        self._wake.set()

    def submit_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        if self.pending_steps + 1 > self.max_pending:
            self._skip([[step, step]])
            return
        self.pending_steps += 1
        self.queue.append(ObserveSamples(step, rows))
        self._wake.set()

    def submit(self, item: ConfigChange | Barrier | Stop | FindingIn) -> None:  # never skipped
        self.queue.append(item)
        self._wake.set()

    def _skip(self, ranges: list[list[int]]) -> None:
        if not self.skipped_steps:
            logger.warning("rlcockpit: the health checks are behind the logging rate; steps are stored but some "
                           "are not checked (recorded as a health_skipped event)")
        self.skipped_steps += len(ranges)
        self.skipped = merge_ranges([*self.skipped, *ranges])

    # ---- thread ------------------------------------------------------------------------------
    def run(self) -> None:
        while True:
            self._wake.wait(0.5)
            self._wake.clear()
            while self.queue:
                item = self.queue.popleft()
                if isinstance(item, Stop):
                    self._close()
                    return
                self._process(item)
            self._tick()

    def _tick(self) -> None:
        """Hand the observer the wall clock, at most every :data:`TICK_S` seconds and only when it is caught up."""
        tick = getattr(self.observer, "tick", None)
        if tick is None or time.monotonic() < self._next_tick:
            return
        self._next_tick = time.monotonic() + TICK_S
        if self.current_step is not None and self._guard(self.current_step) != self._observed:
            return  # behind the run (or the run logged nothing yet): progress we have not seen is no stall
        arrivals = list(self._arrivals)
        self._arrivals.clear()
        self._findings(self._guard(tick, time.time(), arrivals))

    def _process(self, item: Any) -> None:
        if isinstance(item, FindingIn):  # logged with run.log_finding: only the listeners are left to call
            for cb in list(self.listeners):
                self._guard(cb, item.finding)
        elif isinstance(item, Barrier):
            item.passed("observers")
        elif isinstance(item, ConfigChange):
            self._guard(lambda: setattr(self, "observer", self._make(item.config)))
        elif isinstance(item, ObserveRows):
            self.pending_steps -= len(item.rows)
            for step, ts, data in item.rows:
                self._findings(self._guard(self.observer.observe, step, data) if self.observer else None)
                if self.link is not None:
                    self.link.mark(step)
                self._arrivals.append((step, ts))
                self._observed = max(self._observed, step)
        else:
            step, rows = item.step, item.rows
            self.pending_steps -= 1
            out = self._guard(self.observer.observe_samples, step, rows) if self.observer else None
            if out:
                derived, found = out
                if derived:
                    self.emit(Derived(step, time.time(), dict(derived)))
                self._findings(found)
            if self.link is not None:
                self.link.mark(step)

    def _findings(self, found: Sequence[Any] | None) -> None:
        for f in found or ():
            self.emit(FindingIn(f))
            for cb in list(self.listeners):
                self._guard(cb, f)

    def _close(self) -> None:
        if self.observer is not None and hasattr(self.observer, "close"):
            self._findings(self._guard(self.observer.close))
        if self.skipped:
            self.emit(Event("health_skipped", {"ranges": self.skipped, "steps": self.skipped_steps}, None))
        self.done.set()

    def _guard(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001 - an observer never takes the run down
            logger.warning("rlcockpit: observer %s failed:\n%s", getattr(fn, "__qualname__", fn),
                           traceback.format_exc())
            return None
