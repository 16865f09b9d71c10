"""Writing a run's batches to its store without ever giving up on the store.

The store is where a run's truth lives, so unlike the other loggers it is never disabled. When a write
fails because the store cannot be written *now* (:class:`~rlcockpit.store.StoreUnavailable`: disk full,
database locked by another process, I/O error), the batch is kept and retried with exponential backoff
(0.1 s doubling to 2 s); batches that arrive meanwhile are merged into it, so the retry stays one
transaction and nothing is written twice. The backlog is bounded by ``max_bytes``: beyond it, new data
batches are dropped — never the held ones, so what is stored stays a prefix — and each dropped step range
becomes a ``data_lost`` record written with the next batch that gets through. Run fields (heartbeat,
summary) are never dropped: later values replace earlier ones.

A write that fails for any other reason is about the data (it should not happen: the writer validates
everything first). Then the batch is split and written part by part; only the parts the store refuses
are dropped, each recorded as a loss naming the error.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from typing import Any

from rlcockpit.store.base import Store, StoreUnavailable
from rlcockpit.store.batch import DataLoss, WriteBatch, merge_ranges
from rlcockpit.tracking.write.entries import human_bytes

logger = logging.getLogger("rlcockpit")

BACKOFF_START_S = 0.1
BACKOFF_MAX_S = 2.0
# A full backlog would drop each new batch; before dropping one, the store is probed (at most every PROBE_EVERY_S,
# waiting at most PROBE_TIMEOUT_S for a lock) so that data logged after an outage ends is not lost to the backoff.
PROBE_EVERY_S = 0.2
PROBE_TIMEOUT_S = 0.02
LOSS_FLUSH_S = 2.0  # a loss record that has not grown this long is closed; the next loss opens a new one


class LossLedger:
    """Loss records of a run, one open record per (what, reason, logger) that grows while the loss goes on.

    Why open records: a loss must reach the store no later than the data logged after it (else a kill could
    leave a silent hole), yet one outage should be one record, not one per batch. So every write carries the
    records that changed since the last write, upserted by their id, in the same transaction as the data;
    a record that has not grown for :data:`LOSS_FLUSH_S` is closed and the next loss opens a new one.
    """

    def __init__(self) -> None:
        self._open: dict[tuple[str, str, str | None], DataLoss] = {}
        self._dirty: set[tuple[str, str, str | None]] = set()
        self._grew: dict[tuple[str, str, str | None], float] = {}

    def add(self, loss: DataLoss) -> None:
        key = (loss.what, loss.reason, loss.sink)
        now = time.monotonic()
        have = self._open.get(key)
        if have is None or now - self._grew.get(key, now) > LOSS_FLUSH_S:
            have = self._open[key] = DataLoss(loss.what, loss.reason, [], 0, 0, loss.sink, loss.message,
                                              loss.first_ts, loss.last_ts, id=uuid.uuid4().hex[:12])
        have.ranges = merge_ranges([*have.ranges, *loss.ranges])
        have.entries += loss.entries
        have.points += loss.points
        have.message = loss.message or have.message
        have.last_ts = loss.last_ts or have.last_ts
        have.first_ts = have.first_ts or loss.first_ts
        self._dirty.add(key)
        self._grew[key] = now

    def take(self) -> list[DataLoss]:
        """Snapshots of the records that changed (to write now); :meth:`written` or :meth:`unwritten` after."""
        return [dataclasses.replace(self._open[k], ranges=[list(r) for r in self._open[k].ranges]) for k in self._dirty]

    def written(self, snapshots: list[DataLoss]) -> None:
        for snap in snapshots:
            key = (snap.what, snap.reason, snap.sink)
            rec = self._open.get(key)
            if rec is not None and rec.id == snap.id:
                rec.counted = snap.entries
                if rec.entries == snap.entries and rec.ranges == snap.ranges:
                    self._dirty.discard(key)

    def __bool__(self) -> bool:
        return bool(self._dirty)


def batch_loss(batch: WriteBatch, reason: str, message: str = "") -> list[DataLoss]:
    """What is lost if ``batch`` is dropped: one record per kind of data it holds."""
    out = []
    if batch.points:
        out.append(DataLoss("metrics", reason, batch.metric_steps(), entries=batch.entries or 1,
                            points=batch.point_count(), message=message))
    if batch.samples:
        out.append(DataLoss("samples", reason, merge_ranges([[s, s] for s, _ in batch.samples]),
                            entries=len(batch.samples), message=message))
    if batch.findings:
        steps = [[int(getattr(f, "step", 0) or 0)] * 2 for f in batch.findings]
        out.append(DataLoss("findings", reason, merge_ranges(steps), entries=len(batch.findings), message=message))
    if batch.events:
        steps = [[e[2], e[2]] for e in batch.events if e[2] is not None]
        out.append(DataLoss("events", reason, merge_ranges(steps), entries=len(batch.events), message=message))
    return out


class StoreWriter:
    """Writes batches to ``store`` for run ``run_id`` (called from the writer thread only)."""

    def __init__(self, store: Store, run_id: str, *, max_bytes: int, busy_timeout_s: float = 1.0,
                 store_data: bool = True) -> None:
        self.store, self.run_id = store, run_id
        self.store_data = store_data  # False: the run's loggers exclude the store; only run fields are written
        self.max_bytes = int(max_bytes)
        self.busy_timeout_s = busy_timeout_s
        self.pending: WriteBatch | None = None
        self.losses = LossLedger()
        self.lost_entries = 0  # everything recorded as lost so far (for the end-of-run message)
        self._next_try = 0.0
        self._last_try = 0.0
        self._backoff = BACKOFF_START_S
        self._outage: str | None = None  # the error of the current outage, reported once
        self.written_batches = 0

    @property
    def backlog_bytes(self) -> int:
        return self.pending.nbytes if self.pending is not None else 0

    def record(self, loss: DataLoss) -> None:
        """A loss found elsewhere (the caller's queue, a logger): written with the next batch."""
        self.lost_entries += loss.entries
        self.losses.add(loss)

    def write(self, batch: WriteBatch, *, force: bool = False) -> bool:
        """Write ``batch`` (after any backlog); ``True`` when nothing is left unwritten.

        ``force`` retries now instead of waiting for the backoff (used while finishing)."""
        if not self.store_data and batch.has_data():
            batch = WriteBatch(run_fields=batch.run_fields, meta_patch=batch.meta_patch)
        if self.pending is not None:
            if (batch.has_data() and self.pending.nbytes + batch.nbytes > self.max_bytes
                    and not self._probe(force)):
                for loss in batch_loss(batch, "store_unavailable", self._outage or ""):
                    self.record(loss)
                batch = WriteBatch(run_fields=batch.run_fields, meta_patch=batch.meta_patch)
        if self.pending is not None:
            self.pending.merge(batch)
            batch = self.pending
            if not force and time.monotonic() < self._next_try:
                return False
        batch.losses = self.losses.take()  # every changed loss record, in the same transaction as the data
        if not batch:
            return True
        outcome = self._attempt(batch, self.busy_timeout_s)
        if isinstance(outcome, StoreUnavailable):
            self._failed(batch, outcome)
            return False
        return outcome

    def _attempt(self, batch: WriteBatch, timeout_s: float) -> bool | StoreUnavailable:
        """One write of ``batch``: ``True`` written; ``False`` when the store refused part of it (the good parts
        are kept, :meth:`_isolate`) and something is left; the outage when the store could not be written."""
        try:
            self.store.write_batch(self.run_id, batch, timeout_s=timeout_s)
        except StoreUnavailable as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - about the data: isolate the parts the store refuses
            self._isolate(batch, exc)
            return self.pending is None
        self.losses.written(batch.losses)
        self._recovered()
        return True

    def _probe(self, force: bool) -> bool:
        """The backlog is full: write it now, with a short lock wait, if the last try is ``PROBE_EVERY_S`` old.

        Why: the backoff grows to 2 s, and every batch arriving meanwhile would be dropped although the outage may
        be over (a lock released, space freed); probing costs the writer at most ``PROBE_TIMEOUT_S`` per
        ``PROBE_EVERY_S`` while the store stays unwritable. ``True``: the backlog was written."""
        now = time.monotonic()
        if not force and now < self._last_try + PROBE_EVERY_S:
            return False
        self._last_try = now
        held = self.pending
        held.losses = self.losses.take()
        outcome = self._attempt(held, min(self.busy_timeout_s, PROBE_TIMEOUT_S))
        if isinstance(outcome, StoreUnavailable):
            held.losses = []
            return False
        return outcome

    def _failed(self, batch: WriteBatch, exc: StoreUnavailable) -> None:
        batch.losses = []  # the ledger still holds them (dirty): taken afresh on the next attempt
        self.pending = batch
        self._last_try = time.monotonic()
        self._next_try = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
        if self._outage is None:
            self._outage = str(exc)
            logger.warning("rlcockpit: run %s: the store cannot be written (%s); logging goes on, the data is kept "
                           "in memory (up to %s) and written when the store is writable again", self.run_id,
                           exc, human_bytes(self.max_bytes))

    def _recovered(self) -> None:
        self.pending = None
        self.written_batches += 1
        self._backoff = BACKOFF_START_S
        if self._outage is not None:
            logger.warning("rlcockpit: run %s: the store is writable again; the held data was written%s",
                           self.run_id, " (some data was lost: see `rlcockpit show`)" if self.lost_entries else "")
            self._outage = None

    def _isolate(self, batch: WriteBatch, exc: Exception) -> None:
        self.pending = None
        logger.warning("rlcockpit: run %s: the store refused a batch (%s: %s); writing it part by part",
                       self.run_id, type(exc).__name__, exc)
        parts = _split(batch)
        for i, part in enumerate(parts):
            try:
                self.store.write_batch(self.run_id, part, timeout_s=self.busy_timeout_s)
            except StoreUnavailable as err:
                rest = WriteBatch()
                for later in parts[i:]:
                    rest.merge(later)
                self._failed(rest, err)
                return
            except Exception as err:  # noqa: BLE001
                for loss in batch_loss(part, "rejected_by_store", f"{type(err).__name__}: {err}"):
                    self.record(loss)
            else:
                self.losses.written(part.losses)
        self._recovered()


def _split(batch: WriteBatch) -> list[WriteBatch]:
    """One batch per key, sample step, finding and event (and one for losses and run fields)."""
    parts = [WriteBatch(points={k: v}, entries=1) for k, v in batch.points.items()]
    parts += [WriteBatch(samples=[s]) for s in batch.samples]
    parts += [WriteBatch(findings=[f]) for f in batch.findings]
    parts += [WriteBatch(events=[e]) for e in batch.events]
    parts.append(WriteBatch(losses=list(batch.losses), run_fields=dict(batch.run_fields),
                            meta_patch=dict(batch.meta_patch)))
    return parts


def describe_unwritten(writer: StoreWriter) -> str:
    """What is still held when a run ends with the store unwritable (for the one error line)."""
    held: Any = writer.pending
    parts = []
    if held is not None:
        steps = held.metric_steps()
        if steps:
            parts.append(f"metrics of steps {steps[0][0]}-{steps[-1][1]}")
        if held.samples:
            parts.append(f"{len(held.samples)} sample batches")
    if writer.lost_entries:
        parts.append(f"{writer.lost_entries} entries already lost")
    return ", ".join(parts) or "the end-of-run status"
