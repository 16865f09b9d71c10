"""What travels on a run's queue: one small typed entry per call, and the byte budget that bounds it.

Producers (the training thread's ``log``/``log_samples``, the system sampler, the observer thread) append
entries to one deque; the writer thread pops them in order and dispatches on each entry's type: a
``NamedTuple`` per kind (``Samples(step, ts, rows, nbytes)``, ``Event(kind, payload, step)``...), no integer
tags — except the hottest one, :data:`Metrics`, which is a plain ``(step, ts, data)`` tuple (see there).

Memory: entries from the caller are charged to a :class:`QueueBudget` with :func:`metrics_cost` /
:func:`samples_cost` — an estimate of the bytes the entry keeps alive (the dict copy, its value objects,
text), measured against ``tracemalloc`` in the tests. Internal entries (findings, derived metrics, loss
records, barriers) are small and not charged: they must never be dropped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

from rlcockpit.store.batch import DataLoss
from rlcockpit.tracking.media.images import image_bytes

ENTRY_BYTES = 240  # the entry tuple, the dict copy's fixed part, the timestamp float
KEY_BYTES = 56  # per logged key: the dict slot (keys are shared with the caller) and the value object
ROW_BYTES = 400  # per sample row: the row dict copy
CELL_BYTES = 90  # per sample cell, plus the text's own length


#: One ``log()`` call (or a system sample): the plain tuple ``(step, ts, data)``, ``data`` the caller's dict,
#: copied, not yet validated. It is the one entry without a class of its own: even a C-built tuple subclass
#: adds ~20% to ``log()`` (a ``NamedTuple``'s Python ``__new__`` doubles it). The writer tells it apart by its
#: exact type — every other entry is a ``NamedTuple``, a subclass — and reads it by index, like
#: :class:`Derived`, which has the same fields in the same order.
Metrics = tuple


class Derived(NamedTuple):
    """Metrics an observer computed (e.g. ``samples/*`` statistics): stored and fanned out, not re-observed."""

    step: int
    ts: float
    data: dict[str, float]


class Samples(NamedTuple):
    """One ``log_samples()`` call: the rows, copied, not yet validated."""

    step: int
    ts: float
    rows: list[Any]
    nbytes: int


class Event(NamedTuple):
    kind: str
    payload: dict[str, Any]
    step: int | None


class FindingIn(NamedTuple):
    """A finding: from an observer (its listeners were called already), or from ``run.log_finding``
    (``notify``: the run's finding listeners are still to be called — off the training thread)."""

    finding: Any
    notify: bool = False


#: a SummarySet value meaning ``del run.summary[key]``
SUMMARY_REMOVED = object()


class SummarySet(NamedTuple):
    """``run.summary[...] = ...``: user summary values (merged over the last logged values)."""

    values: dict[Any, Any]


class MetaSet(NamedTuple):
    """``run.update_meta(...)``: top-level ``meta`` keys, written in order after the data before them."""

    values: dict[str, Any]


class ConfigChange(NamedTuple):
    """``run.reset_health(config)``: the run's config changed; observers start afresh with it."""

    config: dict[str, Any]


class ConfigSet(NamedTuple):
    """``run.config.update(...)`` / ``run.config["k"] = v``: the whole config as it is now, stored in order."""

    config: dict[str, Any]


class RunFieldsSet(NamedTuple):
    """``run.name = ...``, ``run.tags = run.tags + ("x",)``, ``run.notes`` / ``run.group``: run columns, stored in order."""

    fields: dict[str, Any]


class DefineMetric(NamedTuple):
    """``run.define_metric(...)``: a :class:`rlcockpit.tracking.compat.wandb_compat.MetricDef` for the summary."""

    metric: Any


class Lost(NamedTuple):
    """Data that never reached the queue (or a logger): recorded in order, as a ``data_lost`` event."""

    loss: DataLoss


class Barrier(NamedTuple):
    """A marker whose ``done`` event is set once every part named in ``parts`` has processed everything
    queued before it: ``"store"`` (written), ``"sinks"`` (handed to every logger), ``"observers"``."""

    done: threading.Event
    parts: frozenset[str]
    pending: list[str]  # the parts that still have to pass it (mutated under ``lock``)
    lock: threading.Lock

    @classmethod
    def new(cls, *parts: str) -> Barrier:
        return cls(threading.Event(), frozenset(parts), list(parts), threading.Lock())

    def passed(self, part: str) -> None:
        with self.lock:
            if part in self.pending:
                self.pending.remove(part)
            if not self.pending:
                self.done.set()


class Stop(NamedTuple):
    """The run is finishing: drain, close, end within ``timeout`` seconds."""

    status: str
    exit_code: int
    timeout: float


def metrics_cost(n_keys: int) -> int:
    return ENTRY_BYTES + KEY_BYTES * n_keys


def samples_cost(rows: list[Any]) -> int:
    """Bytes a ``log_samples`` copy keeps alive: per row and cell, plus the length of its text."""
    total = ENTRY_BYTES
    for row in rows[:10_000]:
        total += ROW_BYTES
        if isinstance(row, Mapping):
            for v in row.values():
                total += CELL_BYTES + (len(v) if isinstance(v, str) else image_bytes(v))
    if len(rows) > 10_000:  # a huge call: extrapolate instead of walking every row on the training thread
        total = int(total * len(rows) / 10_000)
    return total


class QueueBudget:
    """Bytes queued = ``charged`` (written by producers) − ``released`` (written by the writer). Each counter
    has one writing side, so the caller never takes a lock; ``mark`` (= released + soft, kept by the writer)
    lets ``log()`` decide with one comparison. A race between two *producer* threads can lose one charge:
    the bound then loosens by one entry."""

    __slots__ = ("charged", "released", "limit", "soft", "mark", "wait_s")

    def __init__(self, limit: int, wait_s: float | None = None) -> None:
        self.charged = 0
        self.released = 0
        self.limit = int(limit)
        self.soft = self.limit * 3 // 4  # past this, the caller's slow path wakes the writer before anything is lost
        self.mark = self.soft
        self.wait_s = queue_wait_s() if wait_s is None else float(wait_s)

    def wait_for_room(self, cost: int, wake: threading.Event) -> bool:
        """Backpressure: wait up to ``wait_s`` for the writer to make room for ``cost`` bytes (polling: the
        writer never takes a lock for the caller). ``False``: still full, the caller drops the entry."""
        if self.wait_s <= 0:
            return False
        wake.set()
        deadline = time.monotonic() + self.wait_s
        while self.charged - self.released + cost > self.limit:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.0005)
        return True

    @property
    def queued(self) -> int:
        return self.charged - self.released

    def release(self, nbytes: int) -> None:
        """The writer took ``nbytes`` off the queue (writer thread only)."""
        self.released += nbytes
        self.mark = self.released + self.soft


QUEUE_WAIT_ENV = "RLCOCKPIT_QUEUE_WAIT_S"
# Bounded backpressure by default (W&B and trackio block a producer that outruns the writer; we block at most this
# long, once per stall, then drop and record the loss): see docs/tracking.md "Backpressure", bench/queue_policy.py.
DEFAULT_QUEUE_WAIT_S = 5.0


def queue_wait_s() -> float:
    """How long ``log()`` waits for room in a full queue (``$RLCOCKPIT_QUEUE_WAIT_S``, default 5; 0: drop at once)."""
    raw = os.environ.get(QUEUE_WAIT_ENV)
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_QUEUE_WAIT_S
    except ValueError:
        return DEFAULT_QUEUE_WAIT_S


def human_bytes(n: int) -> str:
    """``64 MiB``, ``512 KiB``, ``900 B`` (for warnings about the byte bounds)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"
