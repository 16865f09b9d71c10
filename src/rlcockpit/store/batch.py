"""What one write to a store carries: a :class:`WriteBatch`, and :class:`DataLoss` records.

The tracking writer turns each drain of its queue into one batch and hands it to
:meth:`Store.write_batch` (one transaction). A batch that could not be written (disk full, database
locked) is kept and retried; batches that pile up meanwhile are merged into it (:meth:`WriteBatch.merge`),
so the retry is still one transaction and order is kept. ``nbytes`` is what bounds that backlog.

A :class:`DataLoss` is the record of data that did not make it — to the store or to one of the other
loggers — stored as a ``data_lost`` event (see :meth:`DataLoss.payload` for its fields) and counted in
the run row's ``data_lost`` column, so readers (``rlcockpit show``, the dashboard) can say so. A record
with an ``id`` is an upsert: a loss that goes on is re-written under its id with its grown ranges, and
only ``entries - counted`` is added to the run's count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Series = tuple[np.ndarray, np.ndarray, np.ndarray]  # steps int64, values float64, unix timestamps float64


def merge_ranges(ranges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Sorted, non-overlapping ``[lo, hi]`` ranges (adjacent ones joined)."""
    out: list[list[int]] = []
    for lo, hi in sorted((int(a), int(b)) for a, b in ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def step_ranges(steps: np.ndarray) -> list[list[int]]:
    """The distinct values of ``steps`` as inclusive ``[lo, hi]`` runs of consecutive integers."""
    u = np.unique(np.asarray(steps, dtype=np.int64))
    if not len(u):
        return []
    breaks = np.nonzero(np.diff(u) != 1)[0]
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(u) - 1]])
    return [[int(u[a]), int(u[b])] for a, b in zip(starts, ends)]


@dataclass
class DataLoss:
    """Data of a run that was not stored (``sink=None``: the store itself) or not sent to one logger.

    ``what``: ``metrics``, ``samples``, ``events``, ``findings`` or ``summary``. ``reason``: a short code —
    ``queue_full`` (the in-memory queue hit its byte bound), ``store_unavailable`` (disk full or locked
    longer than the backlog bound), ``logger_failed``, ``logger_queue_full``, ``logger_disabled``,
    ``unwritten_at_exit``, ``source_damaged`` (an import). ``ranges``: the lost step ranges ``[[lo, hi], ...]``
    (inclusive). ``entries``: lost ``log``/``log_samples``/... calls; ``points``: lost metric values.
    """

    what: str
    reason: str
    ranges: list[list[int]] = field(default_factory=list)
    entries: int = 0
    points: int = 0
    sink: str | None = None
    message: str = ""
    first_ts: float | None = None
    last_ts: float | None = None
    id: str | None = None  # a loss that goes on is re-written under the same id (one record per outage)
    counted: int = 0  # entries of this record already counted in the run's ``data_lost``

    def first_step(self) -> int | None:
        return int(self.ranges[0][0]) if self.ranges else None

    def payload(self) -> dict[str, Any]:
        """The ``data_lost`` event payload (the shape readers rely on)."""
        return {"what": self.what, "reason": self.reason, "sink": self.sink or "store",
                "ranges": merge_ranges(self.ranges), "entries": self.entries, "points": self.points,
                "message": self.message, "first_ts": self.first_ts, "last_ts": self.last_ts}

    def describe(self) -> str:
        """One line for people: what, where, which steps, why."""
        ranges = merge_ranges(self.ranges)
        shown = ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in ranges[:6])
        if len(ranges) > 6:
            shown += f", … ({len(ranges)} ranges)"
        where = "the store" if self.sink in (None, "store") else f"logger {self.sink!r}"
        steps = f" at steps {shown}" if shown else ""
        return (f"{self.what} lost for {where}{steps}: {self.entries} entries"
                + (f", {self.points} points" if self.points else "") + f" ({self.reason}"
                + (f": {self.message}" if self.message else "") + ")")


@dataclass
class WriteBatch:
    """One atomic write: points per key, sample rows per step, findings, events, losses and run fields.

    ``run_fields``: run columns to set (``summary``, ``heartbeat_at``, ``heartbeat_mono``, ``status``...; later
    values win when merging). ``meta_patch``: top-level ``meta`` keys to set (merged into the stored meta).
    """

    points: dict[str, Series] = field(default_factory=dict)
    samples: list[tuple[int, list[dict[str, Any]]]] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)
    events: list[tuple[str, Mapping[str, Any], int | None]] = field(default_factory=list)
    losses: list[DataLoss] = field(default_factory=list)
    run_fields: dict[str, Any] = field(default_factory=dict)
    meta_patch: dict[str, Any] = field(default_factory=dict)
    nbytes: int = 0  # the estimated memory this batch holds (set by whoever builds it)
    entries: int = 0  # the log calls whose metrics it holds (what a loss record counts)

    def __bool__(self) -> bool:
        return bool(self.points or self.samples or self.findings or self.events or self.losses or self.run_fields
                    or self.meta_patch)

    def has_data(self) -> bool:
        """Whether the batch holds logged data (not just run fields such as the heartbeat)."""
        return bool(self.points or self.samples or self.findings or self.events or self.losses or self.meta_patch)

    def merge(self, later: WriteBatch) -> None:
        """Append ``later`` (written after this one) to this batch, keeping order per key."""
        for key, (s, v, t) in later.points.items():
            mine = self.points.get(key)
            self.points[key] = (s, v, t) if mine is None else (
                np.concatenate([mine[0], s]), np.concatenate([mine[1], v]), np.concatenate([mine[2], t]))
        self.samples.extend(later.samples)
        self.findings.extend(later.findings)
        self.events.extend(later.events)
        self.losses.extend(later.losses)
        self.run_fields.update(later.run_fields)
        self.meta_patch.update(later.meta_patch)
        self.nbytes += later.nbytes
        self.entries += later.entries

    def metric_steps(self) -> list[list[int]]:
        """The steps of the metrics in this batch as ranges (what is lost if it is dropped)."""
        arrays = [s for s, _, _ in self.points.values() if len(s)]
        return step_ranges(np.concatenate(arrays)) if arrays else []

    def point_count(self) -> int:
        return sum(len(s) for s, _, _ in self.points.values())
