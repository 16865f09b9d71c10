"""One thread per logger, so a logger that hangs or fails costs only its own copy of the data.

The writer thread submits a :class:`~rlcockpit.tracking.sinks.base.SinkBatch` to every worker after
each drain and goes on; each worker calls its sink's hooks in order. A worker's queue is bounded in
bytes: while its sink hangs, batches beyond the bound are dropped *for that sink only* and recorded as a
``data_lost`` event naming it (``reason: logger_queue_full``). A hook that raises loses that part for
that sink (``logger_failed``); after :data:`MAX_CONSECUTIVE_FAILURES` failures in a row the sink is
disabled and what it misses from then on is recorded too (``logger_disabled``).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from rlcockpit.store.batch import DataLoss, merge_ranges
from rlcockpit.tracking.sinks.base import (
    MAX_CONSECUTIVE_FAILURES,
    EventPart,
    FindingPart,
    RowsPart,
    SamplesPart,
    Sink,
    SinkBatch,
)
from rlcockpit.tracking.write.entries import human_bytes

logger = logging.getLogger("rlcockpit")


def part_loss(part: Any, reason: str, sink: str, message: str = "") -> DataLoss:
    """The loss record for one part a sink did not take."""
    if isinstance(part, RowsPart):
        steps = merge_ranges([[r[0], r[0]] for r in part.rows])
        return DataLoss("metrics", reason, steps, entries=len(part.rows), points=sum(len(r[2]) for r in part.rows),
                        sink=sink, message=message)
    if isinstance(part, SamplesPart):
        return DataLoss("samples", reason, [[part.step, part.step]], entries=1, sink=sink, message=message)
    if isinstance(part, EventPart):
        return DataLoss("events", reason, [] if part.step is None else [[part.step, part.step]], entries=1,
                        sink=sink, message=message)
    if isinstance(part, FindingPart):
        step = int(getattr(part.finding, "step", 0) or 0)
        return DataLoss("findings", reason, [[step, step]], entries=1, sink=sink, message=message)
    return DataLoss("summary", reason, [], entries=1, sink=sink, message=message)


class SinkWorker(threading.Thread):
    """Feeds one sink from its own bounded queue."""

    def __init__(self, sink: Sink, *, max_bytes: int, on_loss: Callable[[DataLoss], None],
                 flush_s: float = 1.0) -> None:
        super().__init__(name=f"rlcockpit-logger-{sink.name}", daemon=True)
        self.sink = sink
        self.max_bytes = int(max_bytes)
        self.on_loss = on_loss
        self.flush_s = flush_s
        self.queue: deque[SinkBatch] = deque()
        self.queued_bytes = 0
        self.failures = 0
        self.consecutive = 0
        self.disabled = False
        self.reported: set[str] = set()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stopping: tuple[str, int | None] | None = None
        self._lock = threading.Lock()
        self._inflight: SinkBatch | None = None  # the batch the sink is working on

    # ---- writer side -------------------------------------------------------------------------
    def submit(self, batch: SinkBatch) -> None:
        if not batch.parts and batch.summary is None and batch.barrier is None:
            return
        with self._lock:
            if self.disabled or self.queued_bytes + batch.nbytes > self.max_bytes:
                reason = "logger_disabled" if self.disabled else "logger_queue_full"
                full = not self.disabled
                if batch.barrier is not None:  # the data is dropped, the marker still goes through
                    self.queue.append(SinkBatch(barrier=batch.barrier))
                    self._idle.clear()
                    self._wake.set()
            else:
                self.queue.append(batch)
                self.queued_bytes += batch.nbytes
                self._idle.clear()
                self._wake.set()
                return
        if full and "queue" not in self.reported:
            self.reported.add("queue")
            logger.warning("rlcockpit: logger %r is not keeping up (queue of %s full); what it misses is "
                           "recorded as lost for it, the store and the other loggers go on", self.sink.name,
                           human_bytes(self.max_bytes))
        for part in batch.parts:
            self.on_loss(part_loss(part, reason, self.sink.name))

    def wait_idle(self, timeout: float) -> bool:
        return self._idle.wait(timeout)

    def stop(self, status: str, exit_code: int | None, timeout: float) -> bool:
        """Deliver and flush what is queued, end the thread; ``False`` if it did not end within ``timeout``."""
        self._stopping = (status, exit_code)
        self._wake.set()
        self.join(timeout)
        if self.is_alive():
            with self._lock:
                left = ([self._inflight] if self._inflight is not None else []) + list(self.queue)
                self.queue.clear()
            for batch in left:
                if batch.barrier is not None:
                    batch.barrier.passed(f"sink:{self.sink.name}")
                for part in batch.parts:
                    self.on_loss(part_loss(part, "unwritten_at_exit", self.sink.name,
                                           "the logger did not finish (the part it was writing may be partial)"))
            logger.warning("rlcockpit: logger %r did not finish within %.0fs; it is left behind", self.sink.name,
                           timeout)
            return False
        return True

    def close_sink(self, status: str, exit_code: int | None) -> None:
        """Close the sink (from the thread finishing the run); skipped for a sink that is still hung."""
        if not self.is_alive():
            self._call("close", status, exit_code)

    # ---- thread ------------------------------------------------------------------------------
    def run(self) -> None:
        last_flush = time.monotonic()
        while True:
            self._wake.wait(self.flush_s)
            self._wake.clear()
            while True:
                with self._lock:
                    batch = self.queue.popleft() if self.queue else None
                if batch is None:
                    break
                self._inflight = batch
                self._deliver(batch)
                with self._lock:
                    self._inflight = None
                    self.queued_bytes -= batch.nbytes
            now = time.monotonic()
            stopping = self._stopping
            if now - last_flush >= self.flush_s or stopping is not None:
                self._call("flush")
                last_flush = now
            with self._lock:
                if not self.queue:
                    self._idle.set()
            if stopping is not None and not self.queue:
                return  # closing is the finishing thread's job (some trackers close only on the main thread)

    def _deliver(self, batch: SinkBatch) -> None:
        sink = self.sink
        for part in batch.parts:
            if self.disabled:
                self.on_loss(part_loss(part, "logger_disabled", sink.name))
                continue
            if isinstance(part, RowsPart):
                ok = self._call("log_metrics", part.rows)
            elif isinstance(part, SamplesPart):
                ok = self._call("log_samples", part.step, part.rows)
            elif isinstance(part, EventPart):
                ok = self._call("log_event", part.kind, part.payload, part.step)
            else:
                ok = self._call("log_finding", part.finding)
            if not ok:
                self.on_loss(part_loss(part, "logger_failed", sink.name, self._last_error))
        if batch.summary is not None and not self.disabled:
            self._call("update_summary", batch.summary)
        if batch.barrier is not None:
            batch.barrier.passed(f"sink:{sink.name}")

    _last_error = ""

    def _call(self, method: str, *args: Any) -> bool:
        if self.disabled and method not in ("close",):
            return False
        try:
            getattr(self.sink, method)(*args)
            self.consecutive = 0
            return True
        except Exception as exc:  # noqa: BLE001 - a logger never takes the run down
            self.failures += 1
            self.consecutive += 1
            self._last_error = f"{type(exc).__name__}: {exc}"
            if method not in self.reported:
                self.reported.add(method)
                logger.warning("rlcockpit: logger %r failed in %s: %s", self.sink.name, method, self._last_error)
                logger.debug("%s", traceback.format_exc())
            if self.consecutive >= MAX_CONSECUTIVE_FAILURES and not self.disabled:
                self.disabled = True
                logger.warning("rlcockpit: logger %r disabled after %d failures in a row; the store and the other "
                               "loggers go on (what it misses is recorded as lost)", self.sink.name,
                               self.consecutive)
            return False
