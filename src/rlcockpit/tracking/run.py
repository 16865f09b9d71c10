"""The run object: ``rlcockpit.init(...)`` → ``run.log(...)`` → ``run.finish()``. It only tracks.

The caller's thread pays for a type check, a dict copy and a deque append (about a microsecond) and
never gets an exception from logging: bad input is one warning naming it. Everything else — validation,
the store, the other loggers, the observers — happens on the threads :mod:`rlcockpit.tracking.parts`
builds. Data is in the store within about ``poll_s`` (0.2 s) of being logged, so a SIGKILL loses at most
that (plus whatever the writer had not caught up with at the time; see docs/tracking.md for the figures).

Memory is bounded in bytes: the queue holds at most ``max_queue_bytes`` (default 64 MiB, estimated per
entry). When it is full, ``log()`` waits for room up to ``$RLCOCKPIT_QUEUE_WAIT_S`` (default 5 s; once per
stall: backpressure, docs/tracking.md, bench/queue_policy.py); if there is still none, the entry is dropped,
counted in ``run.dropped``, and the dropped step ranges are recorded on the run as a ``data_lost`` event —
what is stored stays a prefix with recorded gaps, never silent holes.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlcockpit.redact import redact
from rlcockpit.store import resolve_dir
from rlcockpit.store.base import Store, StoreError
from rlcockpit.store.batch import DataLoss, merge_ranges
from rlcockpit.store.ratelimit import RepeatLimiter, kind_of
from rlcockpit.store.urls import open_run_store
from rlcockpit.tracking import hooks
from rlcockpit.tracking.compat import reinit as reinit_module
from rlcockpit.tracking.compat.wandb_compat import (
    Config,
    DisabledRun,
    WandbRunMethods,
    check_init_args,
    filter_config,
    normalize_resume,
)
from rlcockpit.tracking.compat.wandb_env import (
    alert_level,
    alert_suppressed,
    config_defaults,
    wandb_env_default,
)
from rlcockpit.tracking.init_args import check_init_fields
from rlcockpit.tracking.media.rich import Table, snapshot_tables
from rlcockpit.tracking.observers import GuardrailLink
from rlcockpit.tracking.parts import DEFAULT_MAX_QUEUE_BYTES, RunOptions, attach_hooks, build_parts
from rlcockpit.tracking.runinfo import Summary, config_to_dict, init_error, open_run_row
from rlcockpit.tracking.sinks import Sink
from rlcockpit.tracking.write.entries import (
    ENTRY_BYTES,
    KEY_BYTES,
    Barrier,
    ConfigChange,
    Event,
    FindingIn,
    Lost,
    MetaSet,
    QueueBudget,
    Samples,
    Stop,
    human_bytes,
    samples_cost,
)
from rlcockpit.tracking.write.values import MAX_STEP, BadStep, check_step

logger = logging.getLogger("rlcockpit")

_current: Run | None = None
_time = time.time


class Run(WandbRunMethods):
    """A live run. Create it with :func:`rlcockpit.init`."""

    def __init__(self, *, project: str, name: str | None, group: str | None, tags: Sequence[str] | None,
                 config: Any, dir: str | os.PathLike[str] | None, resume: str | None, id: str | None,
                 notes: str | None, capture_meta: bool, options: RunOptions, store: Any = None,
                 server: str | None = None, extra_meta: Mapping[str, Any] | None = None) -> None:
        self.dir: Path = resolve_dir(dir)
        try:
            self.store: Store = open_run_store(self.dir, dir_given=dir is not None, store=store, server=server)
        except StoreError as exc:
            raise init_error(exc, self.dir) from exc
        self.project = project
        self.config: dict[str, Any] = redact(config_to_dict(config))
        self.dropped = 0
        self._queue: deque = deque()
        self._budget = QueueBudget(options.max_queue_bytes)
        self._stalled_at = -1  # the writer's released bytes when a wait for room last failed
        self._finished = False
        self._blocked = False  # finished, or entries were dropped and the gap is not recorded yet
        self._gap: DataLoss | None = None
        self._lock = threading.Lock()
        self._end_listeners: list[Callable[[str, int, str | None], None]] = []
        self._finding_listeners: list[Callable[[Any], None]] = []
        self._alert_listeners: list[Callable[[str, str, str], None]] = []
        self._warned: set[str] = set()
        self._say = RepeatLimiter(lambda m: logger.warning("%s", m))
        self._alerts_sent: dict[str, float] = {}  # title -> when it was last sent (W&B's wait_duration)
        self._end_reason: str | None = None
        try:
            row = open_run_row(self.store, project, self.config, resume=resume, id=id, name=name, group=group,
                               tags=tags, notes=notes, capture_meta=capture_meta, extra_meta=dict(extra_meta or {}),
                               where=self.dir)
        except StoreError as exc:
            raise init_error(exc, self.dir) from exc
        self.id = row.id
        self._start_time = _time()
        self._fields: dict[str, Any] = {"name": row.name, "group": row.group, "tags": tuple(row.tags), "notes": notes}
        self._last_step, self.config, self.meta = row.last_step, row.config, row.meta
        self.resumed = row.resumed_summary is not None
        self.summary = Summary(self)
        if row.resumed_summary:
            self.summary._refresh(row.resumed_summary)
        self.config = Config(self.config, self)
        self._next_step = self._last_step + 1
        self._parts = build_parts(self, options)
        self.sinks: list[Sink] = self._parts.sinks
        self._writer = self._parts.writer
        self._writer.last_values.update({k: v for k, v in self.summary.items() if isinstance(v, (int, float))})
        if self._parts.link is not None:
            self._parts.link._request = lambda: self._barrier("observers")
        self._parts.start()
        attach_hooks(self, self._parts, options.alerts, config, health=options.health)
        if hasattr(self.store, "finish_run"):  # a team server: finish() waits for the upload (store/remote/client.py)
            self.on_end(lambda *_: self.store.finish_run(self.id))
        hooks.install_exit_hooks(self)

    # ---- queueing -----------------------------------------------------------------------------
    def _put_internal(self, entry: Any) -> None:
        """Entries that are never dropped (findings, summary/meta updates, loss records, barriers)."""
        self._queue.append(entry)

    def _charge(self, entry: Any, cost: int, step: int, points: int, what: str) -> bool:
        """Queue a caller entry within the byte budget (waiting up to ``QueueBudget.wait_s``); else drop it."""
        b = self._budget
        if self._finished:
            return False
        wake = self._writer.wake
        if b.charged - b.released + cost > b.soft and not wake.is_set():
            wake.set()  # three quarters full: drain now rather than at the next poll
        if self._blocked or b.charged - b.released + cost > b.limit:
            # backpressure: wait for the writer, not again until it made progress (a stuck store costs one wait)
            if b.charged - b.released + cost > b.limit and (b.released == self._stalled_at
                                                             or not b.wait_for_room(cost, wake)):
                self._stalled_at = b.released
                self._drop(what, step, points, cost)
                return False
            self._end_gap()
        b.charged += cost
        self._queue.append(entry)
        return True

    def _drop(self, what: str, step: int, points: int, cost: int) -> None:
        self.dropped += 1
        gap = self._gap
        now = time.time()
        if gap is None:
            gap = self._gap = DataLoss(what, "queue_full", [[step, step]], 0, 0, None, "", now, now)
            self._blocked = True
            if "queue" not in self._warned:
                self._warned.add("queue")
                logger.warning("rlcockpit: log queue full (%s, no room after waiting %gs): dropping new entries; the "
                               "dropped steps are recorded as data_lost (is the store or a logger stuck?)",
                               human_bytes(self._budget.limit), self._budget.wait_s)
        elif step > gap.ranges[-1][1] + 1:
            gap.ranges.append([step, step])
        else:
            gap.ranges[-1][1] = max(gap.ranges[-1][1], step)
        gap.entries += 1
        gap.points += points
        gap.last_ts = now

    def _end_gap(self) -> None:
        gap, self._gap = self._gap, None
        self._blocked = self._finished
        if gap is not None:
            gap.ranges = merge_ranges(gap.ranges)
            self._queue.append(Lost(gap))

    def _barrier(self, *parts: str) -> Barrier:
        b = Barrier.new(*parts)
        self._queue.append(b)
        self._writer.wake.set()
        if not self._writer.is_alive():
            b.done.set()
        return b

    # ---- public API ----------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once finish() has started (the writer no longer accepts entries)."""
        return self._finished

    @property
    def step(self) -> int:
        """The last logged step (-1 before the first log)."""
        return self._last_step

    @property
    def guardrails(self) -> GuardrailLink | None:
        """The link to a trainer with ``init(guardrails=True)``: findings for it, and ``sync()``; else ``None``."""
        return self._parts.link

    def log(self, metrics: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
        """Log scalar metrics at ``step`` (default: the last step + 1). Never blocks, never raises."""
        # the hot path: every line here runs for every logged step, on the training thread
        if step is None:
            step = self._next_step
        elif type(step) is not int or not self._last_step <= step <= MAX_STEP or step < 0:  # -1 before the 1st
            step = self._bad_step(step)
            if step is None:
                return
        if type(metrics) is not dict:
            metrics = self._bad_metrics(metrics)
            if metrics is None:
                return
        if Table.in_use:  # W&B tables are read now, as logged (the script may add rows right after)
            metrics = snapshot_tables(metrics)
        self._last_step = step
        self._next_step = step if commit is False else step + 1  # commit=False: W&B's "more of this step"
        b = self._budget
        cost = ENTRY_BYTES + KEY_BYTES * len(metrics)  # entries.metrics_cost, inlined (one call less)
        charged = b.charged + cost
        if charged > b.mark or self._blocked:  # over three quarters of the bound (or dropping): the slow path
            self._charge((step, _time(), metrics.copy()), cost, step, len(metrics), "metrics")
            return
        b.charged = charged
        self._queue.append((step, _time(), metrics.copy()))  # a Metrics entry (entries.Metrics: a plain tuple)

    def _bad_step(self, step: Any) -> int | None:
        try:
            value = check_step(step)
        except BadStep as exc:
            self._warn("step:" + kind_of(str(exc)), f"rlcockpit: log() call rejected: {exc}")
            return None
        if value < self._last_step:
            self._warn("lower", f"rlcockpit: log() step {value} is lower than the last logged step "
                                f"{self._last_step}; entry rejected")
            return None
        return value

    def _bad_metrics(self, metrics: Any) -> dict[Any, Any] | None:
        if isinstance(metrics, Mapping):
            try:
                return dict(metrics)
            except Exception as exc:  # noqa: BLE001 - a mapping that cannot be read
                self._warn("mapping", f"rlcockpit: log() call rejected: its mapping cannot be read ({exc})")
                return None
        self._warn(f"type:{type(metrics).__name__}", f"rlcockpit: log() call rejected: metrics must be a dict of "
                                                      f"name -> number, got a {type(metrics).__name__}")
        return None

    def _warn(self, key: str, message: str) -> None:
        self._say(key, message)  # each distinct problem at once, its repeats rate-limited (never silenced)

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int | None = None) -> None:
        """Rollout samples of one step: rows with ``prompt``, ``response``, ``reward`` and any extra columns.
        Never raises: a bad row or cell is dropped with one warning naming it."""
        try:
            step = max(self._last_step, 0) if step is None else check_step(step)
        except BadStep as exc:
            self._warn("samples-step", f"rlcockpit: log_samples() call rejected: {exc}")
            return
        if rows is None or isinstance(rows, (str, bytes, Mapping)) or not hasattr(rows, "__iter__"):
            self._warn(f"samples-type:{type(rows).__name__}", "rlcockpit: log_samples() call rejected: rows must be "
                       f"a list of dicts, got a {type(rows).__name__}")
            return
        try:
            if hasattr(rows, "to_dict") and not isinstance(rows, Sequence):
                rows = rows.to_dict("records")  # a pandas DataFrame
            copied = [dict(r) if isinstance(r, Mapping) else r for r in rows]
        except Exception as exc:  # noqa: BLE001
            self._warn("samples-read", f"rlcockpit: log_samples() call rejected: the rows cannot be read ({exc})")
            return
        cost = samples_cost(copied)
        self._charge(Samples(step, _time(), copied, cost), cost, step, 0, "samples")

    def log_event(self, kind: str, payload: Mapping[str, Any] | None = None, step: int | None = None) -> None:
        """Record an event (``guardrail`` interventions, ``alert`` deliveries...) on the run."""
        if not isinstance(kind, str) or not kind or not isinstance(payload, (Mapping, type(None))):
            self._warn("event", f"rlcockpit: log_event() call rejected: kind must be text and payload a dict "
                                f"(got {type(kind).__name__}, {type(payload).__name__})")
            return
        try:
            step = max(self._last_step, 0) if step is None else check_step(step)
        except BadStep as exc:
            self._warn("event-step", f"rlcockpit: log_event() call rejected: {exc}")
            return
        self._put_internal(Event(kind, redact(dict(payload or {})), step))

    def log_finding(self, finding: Any) -> None:
        """Store a finding produced outside the built-in monitor; it also reaches the finding listeners
        (alerts, guardrails), called from the run's threads, never from this one."""
        self._put_internal(FindingIn(finding, notify=True))

    def update_meta(self, values: Mapping[str, Any]) -> None:
        """Set top-level ``meta`` keys of the stored run, written after everything logged before."""
        self._put_internal(MetaSet(redact(dict(values))))

    def report_loss(self, what: str, ranges: Sequence[Sequence[int]], reason: str, message: str = "",
                    entries: int = 1) -> None:
        """Record that data of this run was lost elsewhere (e.g. an import's damaged source)."""
        self._put_internal(Lost(DataLoss(what, reason, merge_ranges(ranges), entries=entries, message=message)))

    def on_finding(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(finding)`` (from the observer thread) for every finding of this run."""
        self._finding_listeners.append(callback)

    def on_end(self, callback: Callable[[str, int, str | None], None]) -> None:
        """Call ``callback(status, exit_code, reason)`` when the run ends (finish, exception, signal)."""
        self._end_listeners.append(callback)

    def on_alert(self, callback: Callable[[str, str, str], None]) -> None:
        """Call ``callback(title, text, level)`` for every manual :meth:`alert` (used by alert channels)."""
        self._alert_listeners.append(callback)

    def reset_health(self, config: Mapping[str, Any] | None = None) -> None:
        """Start the observers afresh, ordered after everything logged so far, with the run's config
        (updated by ``config`` and stored). After a guardrail rollback the old monitor's baselines describe
        the abandoned trajectory; the new one judges the restored policy, with the changed config."""
        if config is not None:
            self.config = Config({**self.config, **redact(config_to_dict(config))}, self)
        self._put_internal(ConfigChange(dict(self.config)))

    def alert(self, title: str, text: str = "", level: Any = "warning", wait_duration: Any = None) -> None:
        """Send a manual alert through the configured channels (and record it as an event). ``level``:
        ``info``/``warning``/``critical`` or W&B's ``AlertLevel`` / ``"INFO"``/``"WARN"``/``"ERROR"``;
        ``wait_duration`` (seconds or a ``timedelta``, as W&B): an alert with a title sent less than that ago is
        not sent again (it is still recorded, with ``suppressed: true``)."""
        level = alert_level(level)
        if alert_suppressed(self._alerts_sent, title, wait_duration, _time()):
            self.log_event("alert", {"title": title, "text": text, "level": level, "manual": True, "suppressed": True})
            return
        self.log_event("alert", {"title": title, "text": text, "level": level, "manual": True})
        for cb in list(self._alert_listeners):
            try:
                cb(title, text, level)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: alert failed: %s", exc)

    def log_artifact(self, artifact_or_path: Any, name: str | None = None, type: str | None = None,
                     aliases: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None) -> Any:
        """Store a file/directory (or an ``rlcockpit.Artifact``) as the next version ``name:vN`` (see docs/sweeps.md)."""
        from rlcockpit.tracking.artifacts import log_artifact

        return log_artifact(self, artifact_or_path, name=name, type=type, aliases=aliases, metadata=metadata)

    def use_artifact(self, ref: Any, type: str | None = None) -> Any:
        """Resolve ``"name:v3"`` / ``"name:best"`` and record this run as its consumer (lineage)."""
        from rlcockpit.tracking.artifacts import use_artifact

        return use_artifact(self, ref, type=type)

    def flush(self, timeout: float = 10.0, *, loggers: bool = True) -> bool:
        """Block until everything logged so far is in the store, observed and handed to every logger
        (``loggers=False``: in the store only, so a slow third-party logger cannot hold the caller up);
        ``False`` when that did not happen within ``timeout`` (the store may be full or locked)."""
        if self._finished or not self._writer.is_alive():
            return not self._queue and self._writer.completed
        parts = ["store", *(f"sink:{w.sink.name}" for w in self._parts.workers if loggers)]
        if self._parts.observer is not None and loggers:
            parts.append("observers")
        if self._blocked:
            self._end_gap()
        return self._barrier(*parts).done.wait(timeout)

    def finish(self, exit_code: int = 0, quiet: bool | None = None, *, status: str | None = None,
               reason: str | None = None, timeout: float = 30.0) -> None:
        """End the run: drain the queue, close loggers, mark it finished (or failed for a non-zero exit code)."""
        with self._lock:
            if self._finished:
                return
            if self._blocked:
                self._end_gap()
            self._finished = self._blocked = True
        global _current
        if _current is self:
            _current = None
        status = status or ("finished" if exit_code == 0 else "failed")
        self._end_reason = reason
        if self._parts.sampler is not None:
            self._parts.sampler.stop()
        w = self._writer
        self._queue.append(Stop(status, exit_code, timeout))
        w.wake.set()
        w.join(timeout + 5)
        if w.is_alive():
            logger.warning("rlcockpit: writer did not finish within %.0fs; the rest is not stored", timeout)
        for worker in self._parts.workers:  # on this thread, as trackers expect (signal handlers, atexit)
            worker.close_sink(status, exit_code)
        self.summary._refresh(w.summary())
        for cb in list(self._end_listeners):
            try:
                cb(status, exit_code, reason)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: end-of-run listener failed: %s", exc)

    def _end_meta(self) -> dict[str, Any]:
        return {"end_reason": self._end_reason} if self._end_reason else {}

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish(0)
        else:
            self.finish(1, reason=f"{exc_type.__name__}: {exc}")

    def __repr__(self) -> str:
        return f"<rlcockpit.Run {self.project}/{self.name} id={self.id} dir={self.dir}>"


_live_runs = hooks.live_runs  # the runs the exit hooks will finish (tests clear it)


def init(
    project: str | None = None,
    name: str | None = None,
    group: str | None = None,
    tags: Sequence[str] | None = None,
    config: Any = None,
    dir: str | os.PathLike[str] | None = None,
    resume: str | None = None,
    loggers: Iterable[str] | None = None,
    *,
    id: str | None = None,
    notes: str | None = None,
    health: bool | Mapping[str, Any] = True,
    alerts: Any = None,
    guardrails: bool = False,
    system_interval: float | None = 10.0,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    logger_options: Mapping[str, Any] | None = None,
    capture_meta: bool = True,
    sinks: Sequence[Sink] = (),
    print_findings: bool = True,
    store: Any = None,
    server: str | None = None,
    job_type: str | None = None,
    entity: str | None = None,
    mode: str | None = None,
    reinit: bool | str | None = None,
    **wandb_args: Any,
) -> Run:
    """Start (or resume) a run and make it the current one.

    ``loggers``: sink names (``rlcockpit``, ``console``, ``jsonl``, ``tensorboard``, ``wandb``,
    ``mlflow``, ``swanlab``); default ``["rlcockpit"]``. ``resume``: a run id, or ``"auto"`` to
    continue the newest unfinished run with the same project and name. ``system_interval``:
    seconds between system-metric samples (``None``/0 disables). ``health``: run the detectors
    (or a dict of detector settings). ``alerts``: alert channel config (see ``rlcockpit.alerts``);
    environment channels alone do not enable alerts. ``guardrails``: give ``run.guardrails`` (a
    :class:`GuardrailLink`) to a trainer. ``max_queue_bytes``: the memory bound of the queue, of the
    store's backlog while it cannot be written, and of each other logger's queue. ``store``: where the run is
    stored, a URL (``sqlite:///DIR``, ``postgresql://...``) or a directory (default ``$RLCOCKPIT_STORE``, else
    ``dir``). ``server``: log to a team server instead (default ``$RLCOCKPIT_SERVER``, token
    ``$RLCOCKPIT_TOKEN``; see docs/team-server.md).

    W&B's arguments work too (docs/tracking.md#coming-from-wb): ``job_type``/``entity`` (stored in ``meta``),
    ``mode="disabled"`` (a run that stores nothing), ``reinit`` (while a run is active: W&B's default returns
    it in a script and finishes it in a notebook; ``"finish_previous"``/``True``, ``"return_previous"``/``False``,
    ``"create_new"``: see :mod:`rlcockpit.tracking.compat.reinit`), ``resume=True``/``"allow"``/``"must"``/``"never"``
    with ``id=`` (that run id), ``config_include_keys``/``config_exclude_keys``; cloud-only ones are accepted.
    """
    global _current
    from rlcockpit.tracking.compat.sweep_env import claim_trial, taken_elsewhere

    check_init_args(wandb_args)
    if mode not in (None, "online", "offline", "shared", "disabled"):
        raise ValueError(f"init(mode={mode!r}): expected 'online', 'offline', 'shared' or 'disabled'")
    config = config_to_dict(config)  # a config file is read (and a bad one raises) whatever reinit says, as in W&B
    if mode == "disabled":  # as W&B: a disabled run is made before (and whatever) reinit says
        _current = DisabledRun(filter_config(config, wandb_args))  # type: ignore[assignment]
        return _current  # type: ignore[return-value]
    asked = dict(project=project, name=name, group=group, tags=tags, config=config, notes=notes, id=id, resume=resume)
    if (previous := reinit_module.previous_run(reinit, _current, _live_runs, resume, asked)) is not None:
        return previous

    defaults = config_defaults()  # W&B's ./config-defaults.yaml, under what init is given
    if defaults:
        config = {**defaults, **config_to_dict(config)}
    trial = claim_trial()  # a program started by `rlcockpit agent` becomes its sweep's trial
    if trial is not None and taken_elsewhere(trial, dir, store, server):
        print(f"rlcockpit: sweep {trial.sweep_id} trial run {trial.run_id} is held by another process of the "
              "trial (this one was forked or started beside it); this process logs a run of its own", file=sys.stderr)
        trial = None
    if trial is not None:
        project, group, id, dir, config = trial.apply(project, group, id, dir, config_to_dict(config))
        store = trial.store if trial.store and store is None else store  # the sweep's database, whatever dir says
    project = project or os.environ.get("RLCOCKPIT_PROJECT") or wandb_env_default("project", None) or "default"
    name, group, tags, notes = (wandb_env_default(k, v) for k, v in
                                (("name", name), ("group", group), ("tags", tags), ("notes", notes)))
    job_type, entity = wandb_env_default("job_type", job_type), wandb_env_default("entity", entity)
    options = RunOptions(loggers=loggers, logger_options=logger_options, extra_sinks=sinks, health=health,
                         alerts=alerts, guardrails=guardrails, system_interval=system_interval,
                         max_queue_bytes=int(max_queue_bytes), print_findings=print_findings)
    f = check_init_fields(project=project, name=name, group=group, tags=tags, notes=notes,  # types, surrogates,
                          id=id, config=filter_config(config_to_dict(config), wandb_args))
    run = Run(project=f.project, name=f.name, group=f.group, tags=f.tags, config=f.config, dir=dir, id=f.id,
              resume=normalize_resume(resume, id), notes=f.notes, capture_meta=capture_meta, options=options,
              store=store, server=server, extra_meta={k: v for k, v in (("job_type", job_type), ("entity", entity))
                                                      if v is not None})
    run._sweep_id = trial.sweep_id if trial is not None else None
    if reinit != "create_new":  # W&B: a create_new run is not wandb.run, and wandb.log does not reach it
        _current = run
    return run
