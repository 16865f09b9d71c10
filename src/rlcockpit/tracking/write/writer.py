"""The writer thread: everything a run does besides putting entries on its queue.

Every ``poll_s`` (0.2 s) — or at once while entries keep coming — it drains the queue and turns the
drain into: validated metric rows and per-key columns (:mod:`rlcockpit.tracking.write.convert`), cleaned
sample rows, events, findings; then one :class:`~rlcockpit.store.batch.WriteBatch` for the store
(one transaction, through :class:`~rlcockpit.tracking.write.storelink.StoreWriter`: retried, never given up),
one :class:`~rlcockpit.tracking.sinks.base.SinkBatch` per logger (each on its own thread), and the rows
and samples for the observer thread. The summary goes out every ``flush_s`` (1 s), the heartbeat every
``heartbeat_s`` (5 s). Nothing here can raise into training; a drain that fails inside the writer is
recorded as lost (``reason: internal_error``), never silently dropped.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rlcockpit.redact import redact, redact_text
from rlcockpit.store.batch import DataLoss, WriteBatch, merge_ranges
from rlcockpit.tracking.compat.wandb_compat import Aggregates, step_sync_points
from rlcockpit.tracking.media.images import store_row_images
from rlcockpit.tracking.observers import ObserverThread
from rlcockpit.tracking.sinks.base import EventPart, FindingPart, RowsPart, SamplesPart, SinkBatch
from rlcockpit.tracking.write.convert import RowCleaner
from rlcockpit.tracking.write.entries import (
    ENTRY_BYTES,
    KEY_BYTES,
    SUMMARY_REMOVED,
    Barrier,
    ConfigChange,
    ConfigSet,
    DefineMetric,
    Derived,
    Event,
    FindingIn,
    Lost,
    MetaSet,
    Metrics,
    QueueBudget,
    RunFieldsSet,
    Samples,
    Stop,
    SummarySet,
)
from rlcockpit.tracking.write.fanout import SinkWorker
from rlcockpit.tracking.write.storelink import StoreWriter, describe_unwritten
from rlcockpit.tracking.write.values import clean_sample_row, clean_value, key_problem

logger = logging.getLogger("rlcockpit")

NULL_EVENT = "null_values"  # the event kind holding logged ``None`` values (see Writer._nulls)
LIST_EVENT = "list_values"  # the event kind holding logged lists (see Writer._lists)
MAX_DRAIN = 10_000  # entries per store transaction: bounds what a SIGKILL can take from inside a drain


class Drain:
    """What one drain of the queue became (built by :meth:`Writer._process`)."""

    def __init__(self) -> None:
        self.batch = WriteBatch()
        self.parts: list[Any] = []  # for the loggers, in logging order
        self.barriers: list[Barrier] = []
        self.stop: Stop | None = None
        self.summary: dict[str, Any] | None = None


class Writer(threading.Thread):
    media: Any = None  # a MediaStore where logged images go (build_parts sets it); None: images are not stored

    def __init__(
        self,
        queue: deque,
        budget: QueueBudget,
        store_writer: StoreWriter,
        *,
        workers: list[SinkWorker],
        observer: ObserverThread | None,
        poll_s: float = 0.2,
        flush_s: float = 1.0,
        heartbeat_s: float = 5.0,
        end_meta: Callable[[], Mapping[str, Any]] | None = None,
        listeners: list[Callable[[Any], None]] | None = None,
    ) -> None:
        super().__init__(name="rlcockpit-writer", daemon=True)
        self.queue, self.budget, self.store_writer = queue, budget, store_writer
        self.workers, self.observer = workers, observer
        self.poll_s, self.flush_s, self.heartbeat_s = poll_s, flush_s, heartbeat_s
        self.end_meta = end_meta or dict
        self.listeners = listeners if listeners is not None else []  # the run's on_finding callbacks
        self.wake = threading.Event()
        self.ended = threading.Event()
        self.cleaner = RowCleaner()
        self.last_values: dict[str, Any] = {}
        self.user_summary: dict[str, Any] = {}
        self.summary_removed: set[str] = set()  # del run.summary[k]: left out until k is logged again
        self.aggregates = Aggregates()  # define_metric(summary=...) per key
        self.sink_losses: deque[DataLoss] = deque()  # reported by logger threads
        self.processed = 0
        self.errors = 0
        self.completed = False  # the end-of-run status reached the store
        self._held: list[Barrier] = []  # barriers waiting for the store backlog to be written
        self._summary_dirty = False
        self._warned: set[str] = set()
        self._deadline: float | None = None

    # ---- thread -------------------------------------------------------------------------------
    def run(self) -> None:
        last_flush = last_beat = time.monotonic()
        while True:
            if not self.queue:
                self.wake.wait(self.poll_s)
            self.wake.clear()
            drain = self._drain()
            now = time.monotonic()
            if now - last_flush >= self.flush_s or drain.stop is not None:
                self._add_summary(drain)
                last_flush = now
            if now - last_beat >= self.heartbeat_s or drain.batch.has_data():
                drain.batch.run_fields.update(heartbeat_at=time.time(), heartbeat_mono=time.monotonic())
                last_beat = now
            self._write(drain)
            if drain.stop is not None:
                self._finish(drain.stop)
                return

    def _drain(self) -> Drain:
        q = self.queue
        entries: list[Any] = []
        while q and len(entries) < MAX_DRAIN:
            e = q.popleft()
            entries.append(e)
            if type(e) is Barrier or type(e) is Stop:
                break
        drain = Drain()
        try:
            self._process(entries, drain)
        except Exception:  # noqa: BLE001 - never die; what this drain held is recorded as lost
            self.errors += 1
            logger.error("rlcockpit writer error:\n%s", traceback.format_exc())
            steps = [[e[0], e[0]] for e in entries if type(e) is Metrics or type(e) is Samples]
            self.store_writer.record(DataLoss("metrics", "internal_error", merge_ranges(steps), entries=len(entries),
                                              message=traceback.format_exc(limit=1).strip().splitlines()[-1]))
            drain.barriers = [e for e in entries if isinstance(e, Barrier)]
            drain.stop = next((e for e in entries if isinstance(e, Stop)), None)
        return drain

    # ---- turning entries into writes ----------------------------------------------------------
    def _process(self, entries: list[Any], drain: Drain) -> None:
        batch, parts = drain.batch, drain.parts
        released = 0
        group: list[Any] = []  # consecutive Metrics (or consecutive Derived) entries
        gtype: type | None = None
        for e in entries:
            t = type(e)
            if t is Metrics:
                if gtype is not Metrics and group:
                    self._metrics(group, drain)
                    group = []
                gtype = t
                released += ENTRY_BYTES + KEY_BYTES * len(e[2])  # entries.metrics_cost, inlined
                group.append(e)
                continue
            if t is Derived:
                if gtype is not Derived and group:
                    self._metrics(group, drain)
                    group = []
                gtype = t
                group.append(e)
                continue
            if group:
                self._metrics(group, drain)
                group, gtype = [], None
            if t is Samples:
                released += e.nbytes
                self._samples(e, drain)
            elif t is Event:
                batch.events.append((e.kind, e.payload, e.step))
                parts.append(EventPart(e.kind, e.payload, e.step))
            elif t is FindingIn:
                batch.findings.append(e.finding)
                parts.append(FindingPart(e.finding))
                if e.notify:
                    self._notify(e.finding)
            elif t is SummarySet:
                self._summary_set(e.values)
            elif t is MetaSet:
                batch.meta_patch.update(e.values)
            elif t is Lost:
                self.store_writer.record(e.loss)
            elif t is ConfigSet:
                batch.run_fields["config"] = e.config
            elif t is RunFieldsSet:
                batch.run_fields.update(e.fields)
            elif t is DefineMetric:
                self.aggregates.add(e.metric)
                self._summary_dirty = True
            elif t is ConfigChange:
                batch.run_fields["config"] = e.config
                if self.observer is not None:
                    self.observer.submit(e)
            elif t is Barrier:
                drain.barriers.append(e)
            elif t is Stop:
                drain.stop = e
        if group:
            self._metrics(group, drain)
        while self.sink_losses:
            self.store_writer.record(self.sink_losses.popleft())
        batch.nbytes += released
        self.budget.release(released)

    def _metrics(self, group: list[Any], drain: Drain) -> None:
        observe = self.observer is not None and type(group[0]) is Metrics  # derived rows came from the observer
        rows, columns, last = self.cleaner.convert(group, want_rows=bool(self.workers) or observe)
        while self.cleaner.tables:  # W&B Tables logged with log(): stored as sample rows of their step
            step, ts, key, table = self.cleaner.tables.pop(0)
            table_rows = table.sample_rows(key)
            # a table of model outputs feeds the sample analysis; any other table (ids, scores, a confusion
            # matrix) is stored, but its missing "responses" are not evidence of empty generations
            outputs = any(r.get("response") is not None for r in table_rows)
            self._samples(Samples(step, ts, table_rows, 0), drain, observe=outputs)
        null_event = self._nulls(drain) if self.cleaner.nulls else None
        list_event = self._lists(drain) if self.cleaner.lists else None
        if (null_event is not None or list_event is not None) and not columns:
            drain.batch.entries += len(group)
            self.processed += len(group)
            drain.parts.extend(e for e in (null_event, list_event) if e is not None)
            self._update_last(last)
            return
        if not columns:
            return
        if self.aggregates.syncing:
            columns.update(step_sync_points(self.aggregates.defs, columns, self.last_values))
        count = len(group)
        self.processed += count
        points = drain.batch.points
        for key, col in columns.items():
            have = points.get(key)
            points[key] = col if have is None else (np.concatenate([have[0], col[0]]),
                                                    np.concatenate([have[1], col[1]]), np.concatenate([have[2], col[2]]))
        drain.batch.entries += count
        # before the rows: a logger that sends whole steps has the nulls and lists by then
        drain.parts.extend(e for e in (null_event, list_event) if e is not None)
        if rows and self.workers:
            drain.parts.append(RowsPart(rows))
        self._update_last(last)
        if self.aggregates.defs:
            for key, col in columns.items():
                self.aggregates.update(key, col[1])
        if observe and rows:
            self.observer.submit_rows(rows)

    def _update_last(self, last: dict[str, Any]) -> None:
        """The summary's last values; a key whose latest value is a null leaves it (as in W&B's summary)."""
        self.last_values.update(last)
        if self.summary_removed:
            self.summary_removed.difference_update(last)
        for key in [k for k, v in last.items() if v is None]:
            del self.last_values[key]
        self._summary_dirty = True

    def _nulls(self, drain: Drain) -> EventPart:
        """The ``None`` values of this drain (W&B's nulls) as one ``null_values`` event: per key, the inclusive
        step ranges where it was logged as ``None``. Stored beside the points — the numeric series, their
        downsampling and the detectors never see a null — and read back by the ``Api`` as ``None`` in history
        rows; handed to the loggers as the same event (the W&B sink logs the null, the others skip it)."""
        by_key: dict[str, list[list[int]]] = {}
        for step, _, keys in self.cleaner.nulls:
            for key in keys:
                by_key.setdefault(key, []).append([step, step])
        first = self.cleaner.nulls[0][0]
        self.cleaner.nulls.clear()
        payload = {"keys": {k: merge_ranges(r) for k, r in by_key.items()}}
        drain.batch.events.append((NULL_EVENT, payload, first))
        return EventPart(NULL_EVENT, payload, first)

    def _lists(self, drain: Drain) -> EventPart:
        """The lists logged in this drain (``log({"x": [1, 2, 3]})``) as one ``list_values`` event: per key,
        ``[step, list, unix time]``. Stored beside the points (the numeric series, the charts and the detectors
        see numbers only) and read back by the ``Api`` in history rows as logged, as W&B's rows hold them."""
        by_key: dict[str, list[list[Any]]] = {}
        for step, ts, values in self.cleaner.lists:
            for key, value in values.items():
                by_key.setdefault(key, []).append([step, value, ts])
        first = self.cleaner.lists[0][0]
        self.cleaner.lists.clear()
        payload = {"values": by_key}
        drain.batch.events.append((LIST_EVENT, payload, first))
        return EventPart(LIST_EVENT, payload, first)

    def _samples(self, e: Samples, drain: Drain, observe: bool = True) -> None:
        step = e.step
        clean = []
        for i, row in enumerate(e.rows):

            def reject(column: str, why: str, i: int = i) -> None:
                self._warn_once(f"samples:{column or '(row)'}:{why}",
                                f"rlcockpit: log_samples() step {step} row {i}"
                                + (f" column {column if column.startswith(chr(39)) else repr(column)}" if column else "")
                                + f" rejected: {why} (the rest is kept)")

            if self.media is not None:  # images in cells: stored beside the store, their references kept
                row = store_row_images(row, self.media, reject)
            out = clean_sample_row(row, reject)
            if out is not None:  # a credential quoted in a prompt or a response is masked before any sink sees it
                clean.append({k: redact_text(v) if type(v) is str else redact(v) if isinstance(v, (dict, list))
                              else v for k, v in out.items()})
        if not clean:
            return
        drain.batch.samples.append((step, clean))
        drain.parts.append(SamplesPart(step, clean))
        if self.observer is not None and observe:
            self.observer.submit_samples(step, clean)

    def _notify(self, finding: Any) -> None:
        """Call the finding listeners for a finding logged with ``run.log_finding`` (on the observer thread
        when there is one: a slow listener must not hold up the store)."""
        if self.observer is not None:
            self.observer.submit(FindingIn(finding, notify=True))
            return
        for cb in list(self.listeners):
            try:
                cb(finding)
            except Exception:  # noqa: BLE001 - a listener never takes the run down
                logger.warning("rlcockpit: finding listener failed:\n%s", traceback.format_exc())

    def _summary_set(self, values: Mapping[Any, Any]) -> None:
        for k in [k for k, v in values.items() if v is SUMMARY_REMOVED]:
            self.user_summary.pop(k, None)
            self.summary_removed.add(k)
            self._summary_dirty = True
        values = {k: v for k, v in values.items() if v is not SUMMARY_REMOVED}
        self.summary_removed.difference_update(values)
        for k, v in redact(dict(values)).items():
            problem = key_problem(k)
            v, why = clean_value(v)
            if problem or why:
                self._warn_once(f"summary:{k!r}", f"rlcockpit: summary key {k!r} rejected: {problem or why}")
                continue
            self.user_summary[k] = v
        self._summary_dirty = True

    def summary(self) -> dict[str, Any]:
        out = {**self.aggregates.apply(self.last_values), **self.user_summary}
        for key in self.summary_removed:
            out.pop(key, None)
        return out

    def _add_summary(self, drain: Drain) -> None:
        if self._summary_dirty:
            self._summary_dirty = False
            summary = self.summary()
            drain.batch.run_fields["summary"] = summary
            drain.summary = summary

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("%s", message)

    # ---- writing ------------------------------------------------------------------------------
    def _write(self, drain: Drain) -> None:
        sink_batch = SinkBatch(parts=drain.parts, summary=drain.summary, nbytes=drain.batch.nbytes)
        barrier_for_sinks = [b for b in drain.barriers if any(p.startswith("sink:") for p in b.parts)]
        if barrier_for_sinks:
            sink_batch.barrier = _Fanout(barrier_for_sinks)
        for w in self.workers:
            w.submit(sink_batch)
        for b in drain.barriers:
            if "observers" in b.parts:
                if self.observer is not None:
                    self.observer.submit(b)
                else:
                    b.passed("observers")
        ok = self.store_writer.write(drain.batch, force=drain.stop is not None)
        self._held.extend(b for b in drain.barriers if "store" in b.parts)
        if ok:
            for b in self._held:
                b.passed("store")
            self._held.clear()

    def _finish(self, stop: Stop) -> None:
        """Drain what the observers still produce, close the loggers, write the end status."""
        deadline = time.monotonic() + stop.timeout
        if self.observer is not None:
            self.observer.submit(stop)
            while not self.observer.done.is_set() and time.monotonic() < deadline:
                self._tail(deadline)
                self.observer.done.wait(0.05)
        self._tail(deadline)
        for w in self.workers:
            w.stop(stop.status, stop.exit_code, max(0.5, (deadline - time.monotonic()) / 2))
        final = Drain()
        self._process([], final)
        final.stop = stop
        self._add_summary(final)
        final.batch.run_fields.update(status=stop.status, exit_code=stop.exit_code, finished_at=time.time(),
                                      heartbeat_at=time.time(), heartbeat_mono=time.monotonic())
        final.batch.meta_patch.update(self.end_meta())
        written = self.store_writer.write(final.batch, force=True)
        while not written and time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
            written = self.store_writer.write(WriteBatch(), force=True)
        self.completed = written
        if written:
            for b in self._held:
                b.passed("store")
        else:
            msg = (f"rlcockpit: run {self.store_writer.run_id} could not be completed in the store "
                   f"({self.store_writer._outage}); not written: {describe_unwritten(self.store_writer)}. "
                   f"Readers will show the run as crashed.")
            logger.error("%s", msg)  # once: with no handler configured, logging's last resort prints it to stderr
        self.ended.set()

    def _tail(self, deadline: float) -> None:
        """Write what arrived after the Stop entry (the observers' last findings, loggers' losses)."""
        while (self.queue or self.sink_losses) and time.monotonic() < deadline:
            drain = self._drain()
            self._write(drain)


class _Fanout:
    """One barrier object per sink batch that passes every barrier of the drain for that sink."""

    def __init__(self, barriers: list[Barrier]) -> None:
        self.barriers = barriers

    def passed(self, part: str) -> None:
        for b in self.barriers:
            b.passed(part)
