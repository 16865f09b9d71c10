"""The run object: ``rlcockpit.init(...)`` → ``run.log(...)`` → ``run.finish()``.

The caller's thread pays only for a dict copy and a deque append (a few µs); a background
:class:`~rlcockpit.tracking.writer.Writer` does the rest. Data is made durable at least every
second, at ``finish()``, at interpreter exit and on SIGTERM/SIGINT. A run killed with SIGKILL
loses at most the last second and is shown as ``crashed`` once its heartbeat goes stale;
``init(resume=RUN_ID)`` (or ``resume="auto"`` with the same project and name) continues it.

Queue policy: the queue holds at most ``max_queue`` entries (default 100k). ``log()`` never
blocks: when the queue is full the entry is dropped, counted in ``run.dropped`` and reported
once (memory stays bounded even if every sink is stuck).
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rlcockpit.store import open_store, resolve_dir
from rlcockpit.store.base import Store
from rlcockpit.tracking.redact import redact
from rlcockpit.tracking.sinks import SINKS, MissingExtra, RunInfo, Sink, StoreSink
from rlcockpit.tracking.writer import CALL, EVENT, FINDING, METRICS, SAMPLES, SUMMARY, Writer

logger = logging.getLogger("rlcockpit")

_current: Run | None = None
DEFAULT_LOGGERS = ("rlcockpit",)


class Summary(dict):
    """``run.summary``: last value of every key, plus what you set (``run.summary["best"] = 0.9``)."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self._run = run

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._run._put((SUMMARY, {key: value}))

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        d = dict(*args, **kwargs)
        super().update(d)
        self._run._put((SUMMARY, d))

    def _refresh(self, values: Mapping[str, Any]) -> None:
        for k, v in values.items():
            dict.__setitem__(self, k, v)


def _config_to_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if type(config).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    if hasattr(config, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    return dict(vars(config))


class Run:
    """A live run. Create it with :func:`rlcockpit.init`."""

    def __init__(
        self,
        *,
        project: str,
        name: str | None,
        group: str | None,
        tags: Sequence[str] | None,
        config: Any,
        dir: str | os.PathLike[str] | None,
        resume: str | None,
        loggers: Iterable[str] | None,
        id: str | None,
        notes: str | None,
        health: bool | Mapping[str, Any],
        alerts: Any,
        system_interval: float | None,
        max_queue: int,
        logger_options: Mapping[str, Any] | None,
        capture_meta: bool,
        extra_sinks: Sequence[Sink],
        print_findings: bool = True,
    ) -> None:
        self.dir: Path = resolve_dir(dir)
        self.store: Store = open_store(self.dir)
        self.project = project
        self.config: dict[str, Any] = redact(_config_to_dict(config))
        self.dropped = 0
        self.max_queue = max_queue
        self._queue: deque = deque()
        self._finished = False
        self._lock = threading.Lock()
        self._end_listeners: list[Callable[[str, int, str | None], None]] = []
        self._finding_listeners: list[Callable[[Any], None]] = []
        self._alert_listeners: list[Callable[[str, str, str], None]] = []
        self._warned_full = False

        resumed = self._find_resume(resume, name, project)
        if resumed is not None:
            self.id = resumed["id"]
            self.name = resumed["name"]
            self.group = resumed.get("group") if group is None else group
            self.tags = list(resumed.get("tags") or []) if tags is None else list(tags)
            last = resumed.get("last_step")
            self._last_step = -1 if last is None else int(last)
            merged = {**(resumed.get("config") or {}), **self.config}
            self.config = merged
            self.store.update_run(self.id, status="running", heartbeat_at=time.time(), finished_at=None,
                                  exit_code=None, config=merged)
        else:
            self.id = id or uuid.uuid4().hex[:8]
            self.name = name or f"run-{self.id}"
            self.group, self.tags = group, list(tags or [])
            self._last_step = -1
            meta = _safe_meta(capture_meta)
            self.store.create_run({"id": self.id, "project": project, "name": self.name, "group": group,
                                   "tags": self.tags, "config": self.config, "meta": meta, "notes": notes})
        self.resumed = resumed is not None
        self._next_step = self._last_step + 1
        self.summary = Summary(self)
        if resumed is not None:
            self.summary._refresh(resumed.get("summary") or {})

        info = RunInfo(id=self.id, name=self.name, project=project, group=self.group, tags=self.tags,
                       config=self.config, dir=self.dir, resumed=self.resumed, options=dict(logger_options or {}))
        self.sinks = self._open_sinks(loggers, info, extra_sinks)
        self._health = health
        monitor = _make_monitor(health, self.config)
        self._writer = Writer(self._queue, self.sinks, monitor=monitor, on_finding=self._finding_listeners,
                              heartbeat=self._heartbeat)
        self._writer.last_values.update({k: v for k, v in self.summary.items() if isinstance(v, (int, float))})
        if print_findings and not any(s.name == "console" for s in self.sinks):
            self.on_finding(_print_finding)
        self._writer.start()
        self._sampler = None
        if system_interval:
            from rlcockpit.tracking.system import SystemSampler

            self._sampler = SystemSampler(self, interval=system_interval)
            self._sampler.start()
        if alerts is None and isinstance(config, Mapping) and config.get("alerts"):
            alerts = config["alerts"]
        if alerts is None and _alerts_in_env():
            alerts = True  # channels named by RLCOCKPIT_*_WEBHOOK / RLCOCKPIT_SMTP_* variables
        if alerts is not None and alerts is not False:
            _attach_alerts(self, alerts)
        _install_exit_hooks(self)

    # ---- setup helpers -------------------------------------------------------------------------
    def _find_resume(self, resume: str | None, name: str | None, project: str) -> dict[str, Any] | None:
        if not resume:
            return None
        if resume in ("auto", "allow", "must"):
            candidates = [r for r in self.store.list_runs(project) if name and r["name"] == name]
            candidates = [r for r in candidates if r["stored_status"] != "finished" or resume == "must"]
            if candidates:
                return candidates[0]
            if resume == "must":
                raise KeyError(f"resume='must': no run named {name!r} in project {project!r}")
            return None
        return self.store.get_run(resume)

    def _open_sinks(self, loggers: Iterable[str] | None, info: RunInfo, extra: Sequence[Sink]) -> list[Sink]:
        names = list(DEFAULT_LOGGERS if loggers is None else loggers)
        if isinstance(loggers, str):
            names = [loggers]
        sinks: list[Sink] = []
        for name in dict.fromkeys(names):
            try:
                cls = SINKS.get(name)
            except KeyError as exc:
                raise ValueError(exc.args[0]) from None
            sink = StoreSink(self.store) if cls is StoreSink else cls()
            try:
                sink.open(info)
            except MissingExtra as exc:
                logger.warning("rlcockpit: %s", exc)
                print(f"rlcockpit: {exc}", file=sys.stderr)
                continue
            except Exception as exc:  # noqa: BLE001 - one broken logger never blocks the others
                logger.warning("rlcockpit: logger %r could not start: %s: %s", name, type(exc).__name__, exc)
                print(f"rlcockpit: logger {name!r} could not start: {exc}", file=sys.stderr)
                continue
            sinks.append(sink)
        for sink in extra:
            sink.open(info)
            sinks.append(sink)
        return sinks

    def _heartbeat(self) -> None:
        self.store.update_run(self.id, heartbeat_at=time.time())
        self.summary._refresh(self._writer.last_values)

    def _put(self, entry: tuple) -> None:
        if self._finished:
            return
        if len(self._queue) >= self.max_queue:
            self.dropped += 1
            if not self._warned_full:
                self._warned_full = True
                logger.warning("rlcockpit: log queue full (%d entries): dropping new entries; is a logger stuck?",
                            self.max_queue)
            return
        self._queue.append(entry)

    # ---- public API ----------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """True once :meth:`finish` has started (the writer no longer accepts entries)."""
        return self._finished

    @property
    def step(self) -> int:
        """The last logged step (``-1`` before the first ``log``)."""
        return self._last_step

    def log(self, metrics: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
        """Log scalar metrics at ``step`` (default: the last step + 1). Never blocks, never raises on values."""
        if step is None:
            step = self._next_step
        elif step < self._last_step:
            logger.warning("rlcockpit: log() step %d is lower than the last logged step %d; entry rejected",
                        step, self._last_step)
            return
        self._last_step = step
        self._next_step = step + 1
        if self._finished:
            return
        q = self._queue
        if len(q) >= self.max_queue:
            self._put((METRICS,))  # counts and reports the drop
            return
        q.append((METRICS, step, time.time(), dict(metrics)))

    def log_samples(self, rows: Sequence[Mapping[str, Any]], step: int | None = None) -> None:
        """Rollout samples of one step: rows with ``prompt``, ``response``, ``reward`` and any extra columns."""
        if step is None:
            step = max(self._last_step, 0)
        self._put((SAMPLES, int(step), [dict(r) for r in rows]))

    def log_event(self, kind: str, payload: Mapping[str, Any] | None = None, step: int | None = None) -> None:
        """Record an event (``guardrail`` interventions, ``alert`` deliveries...) on the run."""
        self._put((EVENT, kind, redact(dict(payload or {})), max(self._last_step, 0) if step is None else step))

    def log_finding(self, finding: Any) -> None:
        """Store a finding produced outside the built-in monitor (it also reaches listeners and alerts)."""
        self._put((FINDING, finding))

    def on_finding(self, callback: Callable[[Any], None]) -> None:
        """Call ``callback(finding)`` (from the writer thread) for every finding of this run."""
        self._finding_listeners.append(callback)

    def on_end(self, callback: Callable[[str, int, str | None], None]) -> None:
        """Call ``callback(status, exit_code, reason)`` when the run ends (finish, exception, signal)."""
        self._end_listeners.append(callback)

    def on_alert(self, callback: Callable[[str, str, str], None]) -> None:
        """Call ``callback(title, text, level)`` for every manual :meth:`alert` (used by alert channels)."""
        self._alert_listeners.append(callback)

    def call_in_writer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the writer thread, ordered after everything logged so far."""
        self._put((CALL, fn))

    def reset_health(self, config: Mapping[str, Any] | None = None) -> None:
        """Start the health monitor afresh, ordered after everything logged so far, and (with ``config``)
        record the run's changed config.

        After a guardrail rollback the old monitor's baselines, warm-up and cooldowns describe the abandoned
        trajectory (a collapsed reward as "normal", a cliff in cooldown): the new monitor judges the restored
        policy on its own, and its advice consults the updated config (e.g. the lowered learning rate)."""
        if config is not None:
            self.config = {**self.config, **redact(_config_to_dict(config))}
        new_config = dict(self.config)

        def swap() -> None:
            if config is not None:
                self.store.update_run(self.id, config=new_config)
            if self._writer.monitor is not None:
                self._writer.monitor = _make_monitor(self._health, new_config)

        self._put((CALL, swap))

    def alert(self, title: str, text: str = "", level: str = "warning") -> None:
        """Send a manual alert through the configured channels (and record it as an event)."""
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

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written (bounded by ``timeout``)."""
        return self._writer.flush_now(timeout)

    def finish(self, exit_code: int = 0, *, status: str | None = None, reason: str | None = None,
               timeout: float = 30.0) -> None:
        """End the run: drain the queue, close sinks, mark it finished (or failed for a non-zero exit code)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        global _current
        if _current is self:
            _current = None
        status = status or ("finished" if exit_code == 0 else "failed")
        if self._sampler is not None:
            self._sampler.stop()
        w = self._writer
        # everything, the monitor's last findings included, is written by the writer thread, in order
        self._queue.append((CALL, w.close_monitor))
        if not w.is_alive():  # the writer died: write what is queued from here
            w.drain()
        if not w.stop(timeout):
            logger.warning("rlcockpit: writer did not finish within %.0fs; some data may be missing", timeout)
        summary = w.summary()
        self.summary._refresh(summary)
        fields: dict[str, Any] = {"status": status, "exit_code": exit_code, "finished_at": time.time(),
                                  "heartbeat_at": time.time(), "summary": summary}
        try:
            self.store.update_run(self.id, **fields)
            if reason:
                run = self.store.get_run(self.id)
                self.store.update_run(self.id, meta={**run.get("meta", {}), "end_reason": reason})
        except Exception as exc:  # noqa: BLE001
            logger.warning("rlcockpit: could not record the end of run %s: %s", self.id, exc)
        for slot in w.slots:
            slot.call("close", status, exit_code)
        for cb in list(self._end_listeners):
            try:
                cb(status, exit_code, reason)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: end-of-run listener failed: %s", exc)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish(0)
        else:
            self.finish(1, reason=f"{exc_type.__name__}: {exc}")

    def __repr__(self) -> str:
        return f"<rlcockpit.Run {self.project}/{self.name} id={self.id} dir={self.dir}>"


# ---- construction and lifecycle hooks ------------------------------------------------------------

def _print_finding(finding: Any) -> None:
    """Findings at warning or above are printed live (stderr) even without the console logger."""
    if getattr(finding, "severity", "info") in ("warning", "critical"):
        from rlcockpit.tracking.sinks.local import finding_line

        print(finding_line(finding), file=sys.stderr, flush=True)


def _safe_meta(capture: bool) -> dict[str, Any]:
    from rlcockpit.tracking.meta import collect_meta

    try:
        return collect_meta(capture_git=capture)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"metadata capture failed: {exc}"}


def _make_monitor(health: bool | Mapping[str, Any], config: dict[str, Any]) -> Any:
    if not health:
        return None
    try:
        from rlcockpit.health.monitor import HealthMonitor
    except ImportError:
        return None
    settings = dict(health) if isinstance(health, Mapping) else None
    try:
        return HealthMonitor(settings=settings, run_config=config)
    except Exception as exc:  # noqa: BLE001
        logger.warning("rlcockpit: health monitor disabled: %s", exc)
        return None


def _alerts_in_env() -> bool:
    if not any(k.startswith("RLCOCKPIT_") for k in os.environ):
        return False
    try:
        from rlcockpit.alerts.config import env_configured
    except ImportError:
        return False
    return env_configured()


def _attach_alerts(run: Run, alerts: Any) -> None:
    try:
        from rlcockpit.alerts.manager import attach
    except ImportError:
        logger.warning("rlcockpit: alerts are configured but rlcockpit.alerts is unavailable")
        return
    try:
        attach(run, alerts)
    except Exception as exc:  # noqa: BLE001 - a broken alert config never stops training
        logger.warning("rlcockpit: alerts disabled: %s", exc)
        print(f"rlcockpit: alerts disabled: {exc}", file=sys.stderr)


_hooks_installed = False
_live_runs: list[Run] = []


def _install_exit_hooks(run: Run) -> None:
    """Finish live runs at interpreter exit, on an uncaught exception and on SIGTERM/SIGINT."""
    global _hooks_installed
    _live_runs.append(run)
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_finish_all, 0, None)
    prev_hook = sys.excepthook

    def excepthook(tp, value, tb):  # noqa: ANN001
        _finish_all(1, f"{tp.__name__}: {value}")
        prev_hook(tp, value, tb)

    sys.excepthook = excepthook
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            prev = signal.getsignal(sig)

            def handler(signum, frame, _prev=prev):  # noqa: ANN001
                name = signal.Signals(signum).name
                _finish_all(128 + signum, f"killed by {name}", status="failed")
                if callable(_prev) and _prev not in (signal.SIG_IGN, signal.SIG_DFL):
                    _prev(signum, frame)
                elif signum == signal.SIGINT:
                    raise KeyboardInterrupt
                else:
                    signal.signal(signum, signal.SIG_DFL)
                    os.kill(os.getpid(), signum)

            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):
                pass


def _finish_all(exit_code: int, reason: str | None, status: str | None = None) -> None:
    for run in list(_live_runs):
        if not run._finished:
            try:
                run.finish(exit_code, status=status, reason=reason, timeout=10.0)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: finishing run %s failed: %s", run.id, exc)
    _live_runs.clear()


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
    system_interval: float | None = 10.0,
    max_queue: int = 100_000,
    logger_options: Mapping[str, Any] | None = None,
    capture_meta: bool = True,
    sinks: Sequence[Sink] = (),
    print_findings: bool = True,
) -> Run:
    """Start (or resume) a run and make it the current one.

    ``loggers``: sink names (``rlcockpit``, ``console``, ``jsonl``, ``tensorboard``, ``wandb``,
    ``mlflow``, ``swanlab``); default ``["rlcockpit"]``. ``resume``: a run id, or ``"auto"`` to
    continue the newest unfinished run with the same project and name. ``system_interval``:
    seconds between system-metric samples (``None``/0 disables). ``health``: run the detectors
    (or a dict of detector settings). ``alerts``: alert channel config (see ``rlcockpit.alerts``).
    """
    global _current
    from rlcockpit.tracking.sweep_env import claim_trial

    trial = claim_trial()  # a program started by `rlcockpit agent` becomes its sweep's trial
    if trial is not None:
        project, group, id, dir, config = trial.apply(project, group, id, dir, _config_to_dict(config))
    project = project or os.environ.get("RLCOCKPIT_PROJECT") or "default"
    run = Run(project=project, name=name, group=group, tags=tags, config=config, dir=dir, resume=resume,
              loggers=loggers, id=id, notes=notes, health=health, alerts=alerts,
              system_interval=system_interval, max_queue=max_queue, logger_options=logger_options,
              capture_meta=capture_meta, extra_sinks=sinks, print_findings=print_findings)
    _current = run
    return run


def _require_run() -> Run:
    if _current is None:
        raise RuntimeError("rlcockpit: no active run; call rlcockpit.init() first")
    return _current


def log(metrics: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    """``run.log`` on the current run."""
    _require_run().log(metrics, step=step, commit=commit)


def log_samples(rows: Sequence[Mapping[str, Any]], step: int | None = None) -> None:
    _require_run().log_samples(rows, step=step)


def alert(title: str, text: str = "", level: str = "warning") -> None:
    _require_run().alert(title, text, level)


def log_artifact(artifact_or_path: Any, name: str | None = None, type: str | None = None,
                 aliases: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None) -> Any:
    """``run.log_artifact`` on the current run (as ``wandb.log_artifact``)."""
    return _require_run().log_artifact(artifact_or_path, name=name, type=type, aliases=aliases, metadata=metadata)


def use_artifact(ref: Any, type: str | None = None) -> Any:
    """``run.use_artifact`` on the current run (as ``wandb.use_artifact``)."""
    return _require_run().use_artifact(ref, type=type)


def finish(exit_code: int = 0) -> None:
    """Finish the current run (no-op when there is none)."""
    if _current is not None:
        _current.finish(exit_code)
