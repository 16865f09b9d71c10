"""The one place that builds a run's parts: loggers, observers, guardrail link, alert hook, sampler, writer.

:class:`~rlcockpit.tracking.run.Run` owns identity and lifecycle and queues entries; everything that
consumes them is built here by :func:`build_parts` from the :class:`RunOptions` of ``init()``. Tracking
imports neither health nor alerts: the observer factory comes from :data:`OBSERVERS` (``"health"``) and
the alerts hook from :data:`RUN_HOOKS` (``"alerts"``), both registered by :mod:`rlcockpit.defaults` —
or by you, to give runs another observer or hook.

Alerts are on only when asked for: ``init(alerts=...)`` (a section, a channel list, or ``True``) or an
``alerts`` key in a dict ``config``. Channels named by environment variables (``RLCOCKPIT_*_WEBHOOK``,
``RLCOCKPIT_SMTP_*``) are then added to the configured ones; on their own they turn nothing on.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.registry import Registry
from rlcockpit.store.media import MediaStore
from rlcockpit.tracking.observers import OBSERVERS, GuardrailLink, ObserverThread
from rlcockpit.tracking.sinks import SINKS, MissingExtra, RunInfo, Sink, StoreSink
from rlcockpit.tracking.sinks.base import finding_text
from rlcockpit.tracking.write.fanout import SinkWorker
from rlcockpit.tracking.write.storelink import StoreWriter
from rlcockpit.tracking.write.writer import Writer

logger = logging.getLogger("rlcockpit")

DEFAULT_LOGGERS = ("rlcockpit",)
OPEN_TIMEOUT_ENV = "RLCOCKPIT_LOGGER_OPEN_S"  # how long init() waits for one logger to start (default 30)
DEFAULT_MAX_QUEUE_BYTES = 64 * 1024 * 1024

# name -> hook(run, section) attaching something to a live run (``"alerts"``: the alert manager)
RUN_HOOKS: Registry[Callable[[Any, Any], Any]] = Registry("run hook", wired=True)


@dataclass
class RunOptions:
    """What ``init()`` asked for besides the run's identity (see :func:`rlcockpit.init`)."""

    loggers: Iterable[str] | str | None = None
    logger_options: Mapping[str, Any] | None = None
    extra_sinks: Sequence[Sink] = ()
    health: bool | Mapping[str, Any] = True
    alerts: Any = None
    guardrails: bool = False
    system_interval: float | None = 10.0
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES
    print_findings: bool = True


@dataclass
class RunParts:
    writer: Writer
    store_writer: StoreWriter
    workers: list[SinkWorker]
    sinks: list[Sink]
    observer: ObserverThread | None = None
    link: GuardrailLink | None = None
    sampler: Any = None
    hooks: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        for w in self.workers:
            w.start()
        if self.observer is not None:
            self.observer.start()
        self.writer.start()
        if self.sampler is not None:
            self.sampler.start()


def build_parts(run: Any, opts: RunOptions) -> RunParts:
    """Everything that consumes ``run``'s queue, wired and not yet started."""
    make_observer = _observer_factory(opts.health)
    observer_obj = make_observer(dict(run.config)) if make_observer is not None else None
    describe = getattr(observer_obj, "describe", None)
    info = RunInfo(id=run.id, name=run.name, project=run.project, group=run.group, tags=list(run.tags), config=run.config,
                   dir=run.dir, resumed=run.resumed, options=dict(opts.logger_options or {}),
                   command=list((run.meta or {}).get("command") or []), describe_finding=describe)
    sinks, store_data = open_sinks(opts.loggers, info, opts.extra_sinks)
    store_writer = StoreWriter(run.store, run.id, max_bytes=opts.max_queue_bytes, store_data=store_data)
    link = GuardrailLink() if opts.guardrails else None
    listeners = run._finding_listeners
    if link is not None:
        listeners.append(link.deliver)
    if opts.print_findings and not any(s.name == "console" for s in sinks):
        listeners.append(lambda f: _print_finding(f, describe))
    observer = None
    if observer_obj is not None:
        first = [observer_obj]
        observer = ObserverThread(lambda cfg: first.pop() if first else make_observer(cfg), run.config,
                                  emit=run._put_internal, listeners=listeners, link=link,
                                  current_step=lambda: run.step)
    writer = Writer(run._queue, run._budget, store_writer, workers=[], observer=observer,
                    end_meta=run._end_meta, listeners=listeners)
    writer.media = MediaStore(run.dir)  # logged images: content-addressed beside the store
    workers = [SinkWorker(s, max_bytes=opts.max_queue_bytes, on_loss=writer.sink_losses.append) for s in sinks
               if not isinstance(s, StoreSink) or s.store is not None]
    writer.workers = workers
    parts = RunParts(writer=writer, store_writer=store_writer, workers=workers, sinks=sinks, observer=observer,
                     link=link)
    if opts.system_interval:
        from rlcockpit.tracking.system import SystemSampler

        parts.sampler = SystemSampler(run, interval=opts.system_interval)
    return parts


def attach_hooks(run: Any, parts: RunParts, alerts: Any, config: Any, health: Any = None) -> None:
    """Run the hooks a run asked for (after its threads started: a hook may log). ``health``: the health
    section of ``init()``; its ``reports`` entry starts the ``"health_reports"`` hook (after alerts: the
    reports are sent through the alert channels)."""
    if alerts is None and isinstance(config, Mapping) and config.get("alerts"):
        alerts = config["alerts"]
    if alerts is not None and alerts is not False:
        try:
            parts.hooks["alerts"] = RUN_HOOKS.get("alerts")(run, alerts)
        except Exception as exc:  # noqa: BLE001 - a broken alert config never stops training
            logger.warning("rlcockpit: alerts disabled: %s", exc)
            print(f"rlcockpit: alerts disabled: {exc}", file=sys.stderr)
    if isinstance(health, Mapping) and health.get("reports") and "health_reports" in RUN_HOOKS:
        try:
            parts.hooks["health_reports"] = RUN_HOOKS.get("health_reports")(run, health["reports"])
        except Exception as exc:  # noqa: BLE001 - a report schedule never stops training
            logger.warning("rlcockpit: health reports disabled: %s", exc)
            print(f"rlcockpit: health reports disabled: {exc}", file=sys.stderr)


def _observer_factory(health: bool | Mapping[str, Any]) -> Callable[[dict[str, Any]], Any] | None:
    if not health:
        return None
    make = OBSERVERS.get("health")
    settings = dict(health) if isinstance(health, Mapping) else None

    def build(config: dict[str, Any]) -> Any:
        try:
            return make(settings, config)
        except Exception as exc:  # noqa: BLE001 - bad settings: the run goes on without health checks
            logger.warning("rlcockpit: health monitor disabled: %s", exc)
            return None

    return build


def open_sinks(loggers: Iterable[str] | str | None, info: RunInfo, extra: Sequence[Sink]) -> tuple[list[Sink], bool]:
    """The loggers to fan out to (opened; the run's own store is listed as an unopened ``StoreSink``), and
    whether the store gets the run's data (the ``rlcockpit`` logger). A logger that cannot start is one
    warning line; the others go on."""
    names = [loggers] if isinstance(loggers, str) else list(DEFAULT_LOGGERS if loggers is None else loggers)
    sinks: list[Sink] = []
    store_data = False
    for name in dict.fromkeys(names):
        try:
            cls = SINKS.get(name)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if cls is StoreSink:  # written by the writer itself, in one transaction per drain
            store_data = True
            sinks.append(StoreSink(None))  # listed in run.sinks; never called
            continue
        sink = cls()
        try:
            open_bounded(sink, info)
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
    return sinks, store_data


def open_bounded(sink: Sink, info: RunInfo) -> None:
    """``sink.open(info)`` on a helper thread, waited for at most ``$RLCOCKPIT_LOGGER_OPEN_S`` (30 s): a tracker
    server that accepts the connection and never answers (MLflow's client retries it for minutes) must not keep
    ``init()``, and so training, from starting. A logger that misses the bound raises ``TimeoutError`` (one
    warning line, the run goes on without it); its thread is left behind (daemon) and never gets data."""
    limit = float(os.environ.get(OPEN_TIMEOUT_ENV) or 30.0)
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            sink.open(info)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=target, name=f"rlcockpit-open-{sink.name}", daemon=True)
    thread.start()
    thread.join(limit)
    if not outcome:
        raise TimeoutError(f"did not start within {limit:.0f}s (its server is not answering?); "
                           f"the run goes on without it ({OPEN_TIMEOUT_ENV} sets the wait)")
    if outcome[0] is not None:
        raise outcome[0]


def _print_finding(finding: Any, describe: Any) -> None:
    """Findings at warning or above are printed live (stderr) even without the console logger."""
    if getattr(finding, "severity", "info") in ("warning", "critical"):
        print(finding_text(finding, describe), file=sys.stderr, flush=True)
