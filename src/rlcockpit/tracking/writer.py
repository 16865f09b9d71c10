"""The writer thread: everything a run does besides putting entries on a queue.

``Run.log()`` appends ``(kind, ...)`` tuples to a deque and returns. This thread drains the
deque every ``poll_s`` seconds, converts and validates values, fans rows out to the sinks,
feeds the health monitor, keeps the summary and heartbeat, and makes data durable at least
every ``flush_s`` seconds. Nothing here can raise into training: each sink and listener call
is guarded, failures are counted and reported once.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from rlcockpit.tracking.sinks.base import MAX_CONSECUTIVE_FAILURES, Sink
from rlcockpit.tracking.values import _FAST_TYPES, flatten

logger = logging.getLogger("rlcockpit")

METRICS, SAMPLES, EVENT, FINDING, SYSTEM, SUMMARY, CALL = range(7)


class SinkSlot:
    """A sink plus its failure bookkeeping."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.failures = 0
        self.consecutive = 0
        self.disabled = False
        self.reported: set[str] = set()

    def call(self, method: str, *args: Any) -> None:
        if self.disabled:
            return
        try:
            getattr(self.sink, method)(*args)
            self.consecutive = 0
        except Exception as exc:  # noqa: BLE001 - a sink never takes the run down
            self.failures += 1
            self.consecutive += 1
            if method not in self.reported:
                self.reported.add(method)
                logger.warning("rlcockpit: logger %r failed in %s: %s: %s", self.sink.name, method,
                            type(exc).__name__, exc)
            if self.consecutive >= MAX_CONSECUTIVE_FAILURES:
                self.disabled = True
                logger.warning("rlcockpit: logger %r disabled after %d failures in a row; other loggers go on",
                            self.sink.name, self.consecutive)


class Writer(threading.Thread):
    def __init__(
        self,
        queue: deque,
        sinks: list[Sink],
        *,
        monitor: Any = None,
        on_finding: list[Callable[[Any], None]] | None = None,
        heartbeat: Callable[[], None] | None = None,
        poll_s: float = 0.2,
        flush_s: float = 1.0,
        heartbeat_s: float = 5.0,
    ) -> None:
        super().__init__(name="rlcockpit-writer", daemon=True)
        self.queue = queue
        self.slots = [SinkSlot(s) for s in sinks]
        self.monitor = monitor
        self.finding_listeners = on_finding if on_finding is not None else []
        self.heartbeat = heartbeat
        self.poll_s, self.flush_s, self.heartbeat_s = poll_s, flush_s, heartbeat_s
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.idle = threading.Event()
        self.last_values: dict[str, float] = {}
        self.user_summary: dict[str, Any] = {}
        self.rejected: set[str] = set()
        self.processed = 0
        self.errors = 0
        self._summary_dirty = False

    # ---- thread -------------------------------------------------------------------------------
    def run(self) -> None:
        last_flush = last_beat = time.monotonic()
        while True:
            self.wake.wait(self.poll_s)
            self.wake.clear()
            stopping = self.stopping.is_set()
            self.idle.clear()
            try:
                self.drain()
            except Exception:  # noqa: BLE001 - never die: report and continue
                self.errors += 1
                logger.error("rlcockpit writer error:\n%s", traceback.format_exc())
            now = time.monotonic()
            if now - last_flush >= self.flush_s or stopping:
                self._flush_summary()
                for slot in self.slots:
                    slot.call("flush")
                last_flush = now
            if self.heartbeat and (now - last_beat >= self.heartbeat_s):
                self._guard(self.heartbeat)
                last_beat = now
            if not self.queue:
                self.idle.set()
            if stopping and not self.queue:
                return

    def _guard(self, fn: Callable, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:  # noqa: BLE001
            self.errors += 1
            logger.warning("rlcockpit: %s failed:\n%s", getattr(fn, "__name__", fn), traceback.format_exc())
            return None

    # ---- processing ---------------------------------------------------------------------------
    def drain(self) -> None:
        q = self.queue
        rows: list[tuple[int, float, Mapping[str, float]]] = []
        while q:
            entry = q.popleft()
            kind = entry[0]
            if kind == METRICS or kind == SYSTEM:
                row = self._clean(entry[3])
                if row:
                    rows.append((entry[1], entry[2], row))
                continue
            if rows:  # keep order: metrics logged before a sample/event are written first
                self._emit_metrics(rows)
                rows = []
            if kind == SAMPLES:
                self._emit_samples(entry[1], entry[2])
            elif kind == EVENT:
                for slot in self.slots:
                    slot.call("log_event", entry[1], entry[2], entry[3])
            elif kind == FINDING:
                self._emit_findings([entry[1]])
            elif kind == SUMMARY:
                self.user_summary.update(entry[1])
                self._summary_dirty = True
            elif kind == CALL:
                self._guard(entry[1])
        if rows:
            self._emit_metrics(rows)

    def _clean(self, metrics: Mapping[str, Any]) -> dict[str, float]:
        if _FAST_TYPES.issuperset(map(type, metrics.values())):  # the common case, checked in C
            return metrics  # type: ignore[return-value]
        return flatten(metrics, self._reject)

    def _reject(self, key: str, value: Any) -> None:
        if key not in self.rejected:
            self.rejected.add(key)
            what = "None" if value is None else type(value).__name__
            shape = getattr(value, "shape", None)
            if shape is not None:
                what += f" of shape {tuple(shape)}"
            logger.warning("rlcockpit: log() key %r rejected: a %s is not a scalar number (stored keys skip it)",
                        key, what)

    def _emit_metrics(self, rows: list[tuple[int, float, Mapping[str, float]]]) -> None:
        self.processed += len(rows)
        for slot in self.slots:
            slot.call("log_metrics", rows)
        last = self.last_values
        for _, _, data in rows:
            last.update(data)
        self._summary_dirty = True
        if self.monitor is not None:
            for step, _, data in rows:
                found = self._guard(self.monitor.observe, step, data)
                if found:
                    self._emit_findings(found)

    def _emit_samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        for slot in self.slots:
            slot.call("log_samples", step, rows)
        if self.monitor is not None and hasattr(self.monitor, "observe_samples"):
            out = self._guard(self.monitor.observe_samples, step, rows)
            if out:
                sample_metrics, found = out
                if sample_metrics:
                    self._emit_metrics([(step, time.time(), dict(sample_metrics))])
                if found:
                    self._emit_findings(found)

    def _emit_findings(self, findings: list[Any]) -> None:
        for f in findings:
            for slot in self.slots:
                slot.call("log_finding", f)
            for cb in list(self.finding_listeners):
                self._guard(cb, f)

    def summary(self) -> dict[str, Any]:
        return {**self.last_values, **self.user_summary}

    def _flush_summary(self) -> None:
        if not self._summary_dirty:
            return
        self._summary_dirty = False
        summary = self.summary()
        for slot in self.slots:
            slot.call("update_summary", summary)

    # ---- control ------------------------------------------------------------------------------
    def close_monitor(self) -> None:
        if self.monitor is not None and hasattr(self.monitor, "close"):
            found = self._guard(self.monitor.close)
            if found:
                self._emit_findings(found)

    def stop(self, timeout: float | None = 30.0) -> bool:
        """Drain everything, then end the thread; ``False`` if it didn't finish within ``timeout``."""
        self.stopping.set()
        self.wake.set()
        self.join(timeout)
        return not self.is_alive()

    def flush_now(self, timeout: float = 10.0) -> bool:
        """Wait until everything queued so far has been processed (bounded)."""
        deadline = time.monotonic() + timeout
        self.wake.set()
        while time.monotonic() < deadline:
            if not self.queue and self.idle.is_set():
                return True
            self.wake.set()
            time.sleep(0.01)
        return False
