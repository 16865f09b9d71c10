"""The store interface: everything rlcockpit writes about a run, and reads back.

The embedded default is :class:`~rlcockpit.store.sqlite.SQLiteStore`. Callers (tracking writer,
``Api``, CLI, dashboard, health) use only this interface, so a team store (PostgreSQL) can be
added later by implementing it and registering it in :data:`STORES`.

Metric points are appended as columns ``(steps, values, timestamps)`` per key; the store keeps
them as chunked numpy arrays, which is what makes ingest of millions of points per second and
downsampled reads of long histories cheap.
"""

from __future__ import annotations

import abc
import errno
import os
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlcockpit.registry import Registry
from rlcockpit.store.batch import DataLoss, WriteBatch

Series = tuple[np.ndarray, np.ndarray, np.ndarray]  # steps int64, values float64, unix timestamps float64

STORES: Registry[type[Store]] = Registry("store")

DEFAULT_DIR_NAME = "rlcockpit"
STALE_HEARTBEAT_S = 60.0  # a "running" run whose heartbeat is older than this is reported as crashed
STALE_ENV = "RLCOCKPIT_STALE_S"  # overrides STALE_HEARTBEAT_S (read on every call: tests and watchdogs set it)


def stale_after_s() -> float:
    """Seconds without a heartbeat after which a ``running`` run is reported as ``crashed``."""
    raw = os.environ.get(STALE_ENV)
    if not raw:
        return STALE_HEARTBEAT_S
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"${STALE_ENV} must be a number of seconds, got {raw!r}") from None


class StoreError(OSError):
    """A store operation failed for a reason outside the caller's data (disk, lock, I/O)."""


class ValueRefused(ValueError):
    """The store refuses a value of this write (PostgreSQL: NUL in text, a B-tree row too large, text that is
    not UTF-8, a number out of range). Deterministic: the same write fails again, so it is never retried."""


class StoreUnavailable(StoreError):
    """The store cannot be written *now*; the same write may succeed later (``reason``: ``full``,
    ``locked``, ``io``, ``readonly``). The tracking writer keeps the data and retries with backoff."""

    def __init__(self, reason: str, message: str, err: int | None = None) -> None:
        super().__init__(err if err is not None else errno.EIO, message)
        self.reason = reason

    def __str__(self) -> str:
        return str(self.strerror)

    def with_message(self, message: str) -> StoreUnavailable:
        """The same error (same class, reason, errno) with another message (e.g. naming the caller)."""
        err = StoreUnavailable.__new__(type(self))
        StoreUnavailable.__init__(err, self.reason, message, self.errno)
        return err

    def __reduce__(self):  # noqa: ANN204 - picklable (subclasses take one argument)
        return _rebuild, (type(self), self.reason, str(self.strerror), self.errno)


def _rebuild(cls: type, reason: str, message: str, err: int | None) -> StoreUnavailable:
    out = StoreUnavailable.__new__(cls)
    StoreUnavailable.__init__(out, reason, message, err)
    return out


class StoreFull(StoreUnavailable):
    """No space left for the store (SQLITE_FULL, ENOSPC)."""

    def __init__(self, message: str) -> None:
        super().__init__("full", message, errno.ENOSPC)


class StoreLocked(StoreUnavailable):
    """Another writer holds the store's lock for longer than the busy timeout (SQLITE_BUSY)."""

    def __init__(self, message: str) -> None:
        super().__init__("locked", message, errno.EBUSY)


def boot_id() -> str | None:
    """This host's boot id (Linux): two processes with the same boot id share ``time.monotonic()``."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


_BOOT_ID = boot_id()


def heartbeat_age_s(run: Mapping[str, Any], now: float | None = None) -> float:
    """Seconds since the run's last heartbeat.

    Why two clocks: a wall-clock step (NTP, a VM resume, a manual ``date``) on the writing host would make
    a live run look dead, or a dead one alive. When the reader shares the writer's boot (same host), the
    writer's ``heartbeat_mono`` (CLOCK_MONOTONIC, system-wide on Linux) is compared with the reader's own
    monotonic clock, which no clock jump moves; otherwise the wall clock is the only common clock.
    """
    mono = run.get("heartbeat_mono")
    if mono is not None and _BOOT_ID is not None and run.get("boot_id") == _BOOT_ID:
        return time.monotonic() - float(mono)
    hb = run.get("heartbeat_at") or run.get("updated_at") or 0
    return (time.time() if now is None else now) - float(hb)


def resolve_dir(dir: str | os.PathLike[str] | None = None) -> Path:
    """Store location: the ``dir`` argument, else ``$RLCOCKPIT_DIR``, else ``./rlcockpit``."""
    if dir is None:
        dir = os.environ.get("RLCOCKPIT_DIR") or os.path.join(os.getcwd(), DEFAULT_DIR_NAME)
    return Path(dir).expanduser().resolve()


class Store(abc.ABC):
    """Abstract run store. Methods taking ``run_id`` raise ``KeyError`` for an unknown run."""

    # ---- runs -------------------------------------------------------------------------------
    @abc.abstractmethod
    def create_run(self, run: Mapping[str, Any]) -> None: ...

    @abc.abstractmethod
    def update_run(self, run_id: str, **fields: Any) -> None:
        """Update run columns (status, summary, config, meta, heartbeat_at, finished_at, exit_code...)."""

    @abc.abstractmethod
    def list_runs(self, project: str | None = None, *, fields: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Runs, newest first. ``fields``: the JSON columns (``tags``, ``config``, ``summary``, ``meta``) the
        caller needs; a store may skip decoding the others (they come back empty) — the runs list of 1,000
        verl-sized configs spends most of its time in ``json.loads`` otherwise. ``None``: all of them."""

    @abc.abstractmethod
    def get_run(self, run_id: str) -> dict[str, Any]:
        """A run by id, unique id prefix or unique name."""

    @abc.abstractmethod
    def delete_run(self, run_id: str) -> None: ...

    # ---- batched writes (the tracking writer) ------------------------------------------------
    def write_batch(self, run_id: str, batch: WriteBatch, *, timeout_s: float | None = None) -> None:
        """Write everything in ``batch`` — all of it or, on an exception, none of it.

        The tracking writer calls this once per drain of its queue; an atomic batch is what lets it keep
        a failed batch and retry it later without storing anything twice. Raises :class:`StoreUnavailable`
        when the store cannot be written now (disk full, locked longer than ``timeout_s``). This default
        calls the single-purpose methods one after another and is *not* atomic: implementations override
        it with one transaction.
        """
        if batch.points:
            self.append_points(run_id, batch.points)
        for step, rows in batch.samples:
            self.append_samples(run_id, step, rows)
        for finding in batch.findings:
            self.add_finding(run_id, finding)
        for kind, payload, step in batch.events:
            self.add_event(run_id, kind, payload, step)
        for loss in batch.losses:
            self.add_data_loss(run_id, loss)
        fields = dict(batch.run_fields)
        if batch.meta_patch:
            fields["meta"] = {**(self.get_run(run_id).get("meta") or {}), **batch.meta_patch}
        if fields:
            self.update_run(run_id, **fields)

    def add_data_loss(self, run_id: str, loss: DataLoss) -> str:
        """Record that data of this run was lost (a ``data_lost`` event) and count it on the run row
        (``data_lost``: entries lost so far). A loss with an ``id`` replaces the event of that id and adds
        only ``entries - counted``. This default is neither atomic nor an upsert: implementations override."""
        eid = self.add_event(run_id, "data_lost", loss.payload(), loss.first_step())
        lost = int(self.get_run(run_id).get("data_lost") or 0)
        self.update_run(run_id, data_lost=lost + max(loss.entries, 1))
        return eid

    # ---- metrics ----------------------------------------------------------------------------
    @abc.abstractmethod
    def append_points(self, run_id: str, points: Mapping[str, Series]) -> None:
        """Append points per key; steps within one key must be non-decreasing across calls."""

    @abc.abstractmethod
    def keys(self, run_id: str) -> list[str]: ...

    @abc.abstractmethod
    def series(
        self,
        run_id: str,
        key: str,
        *,
        start_step: int | None = None,
        end_step: int | None = None,
        max_points: int | None = None,
        with_ts: bool = True,
    ) -> Series:
        """``(steps, values, timestamps)`` of one key, optionally a step range, downsampled to
        ``max_points`` keeping extremes. ``with_ts=False``: the caller does not need timestamps (a chart
        over steps); the store may skip reading them and return NaN timestamps of the same length."""

    def history(self, run_id: str, keys: Sequence[str] | None = None, *, include_system: bool = False,
                with_time: bool = False):
        """A pandas DataFrame indexed by ``step``, one column per key (last value per step); ``with_time``
        adds ``_timestamp``: the unix time of the step's newest point (W&B's history column)."""
        import pandas as pd

        if keys is None:
            keys = [k for k in self.keys(run_id) if include_system or not k.startswith("system/")]
        cols, stamps = {}, []
        for key in keys:
            steps, values, ts = self.series(run_id, key, with_ts=with_time)
            if len(steps):
                s = pd.Series(values, index=steps)
                cols[key] = s[~s.index.duplicated(keep="last")]
                if with_time:
                    stamps.append(pd.Series(ts, index=steps, dtype=float))
        if not cols:
            df = pd.DataFrame(index=pd.Index([], name="step", dtype="int64"))
        else:
            df = pd.DataFrame(cols)
            df.index.name = "step"
            df = df.sort_index()
        if with_time:
            df["_timestamp"] = pd.concat(stamps).groupby(level=0).max() if stamps else pd.Series(dtype=float)
        return df

    def system(self, run_id: str):
        """System metrics as a DataFrame indexed by wall time (``timestamp``), with the step alongside."""
        import pandas as pd

        frames = []
        for key in self.keys(run_id):
            if key.startswith("system/"):
                steps, values, ts = self.series(run_id, key)
                frames.append(pd.DataFrame({"timestamp": ts, "step": steps, key: values}))
        if not frames:
            return pd.DataFrame(columns=["timestamp", "step"]).set_index("timestamp")
        df = frames[0]
        for f in frames[1:]:
            df = df.merge(f, on=["timestamp", "step"], how="outer")
        return df.sort_values("timestamp").set_index("timestamp")

    # ---- samples, findings, events ------------------------------------------------------------
    @abc.abstractmethod
    def append_samples(self, run_id: str, step: int, rows: Sequence[Mapping[str, Any]]) -> None: ...

    @abc.abstractmethod
    def samples(
        self,
        run_id: str,
        step: int | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
        query: str | None = None,
    ) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    def sample_steps(self, run_id: str) -> list[int]: ...

    @abc.abstractmethod
    def add_finding(self, run_id: str, finding: Any) -> str: ...

    @abc.abstractmethod
    def findings(self, run_id: str) -> list[dict[str, Any]]: ...

    def finding_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """Open (not resolved) findings per run and severity: ``{run_id: {"critical": n, "warning": n,
        "info": n}}`` for the runs listed (read side of the runs list; stores may answer in one query)."""
        out: dict[str, dict[str, int]] = {}
        for rid in run_ids:
            counts = {"critical": 0, "warning": 0, "info": 0}
            for f in self.findings(rid):
                if f.get("resolved") or f.get("status") == "resolved":
                    continue
                counts[f.get("severity") if f.get("severity") in counts else "info"] += 1
            out[rid] = counts
        return out

    @abc.abstractmethod
    def add_event(self, run_id: str, kind: str, payload: Mapping[str, Any], step: int | None = None) -> str: ...

    @abc.abstractmethod
    def events(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]: ...

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


def open_store(dir: str | os.PathLike[str] | None = None, kind: str = "sqlite") -> Store:
    """Open (creating if needed) the store at ``dir``: a directory (see :func:`resolve_dir`) or a store URL
    (``sqlite:///DIR``, ``postgresql://...``; ``None``: ``$RLCOCKPIT_STORE`` first, see :mod:`rlcockpit.store.urls`)."""
    from rlcockpit.store.urls import open_url, store_url

    url = store_url(dir)
    if url is not None:
        return open_url(url)
    import rlcockpit.store.sqlite  # noqa: F401 - registers the sqlite store

    return STORES.get(kind)(resolve_dir(dir))


def effective_status(run: Mapping[str, Any], now: float) -> str:
    """``running`` runs whose heartbeat stopped (see :func:`heartbeat_age_s`) are reported as ``crashed``."""
    status = run.get("status") or "running"
    if status == "running" and heartbeat_age_s(run, now) > stale_after_s():
        return "crashed"
    return status
