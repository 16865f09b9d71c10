"""The alert manager: triggers → dedup/cooldown/rate limit → per-channel sender threads → delivery log.

Why one sender thread (and queue) per channel: a channel that refuses, returns 500 or hangs must
never slow a training step, and must not hold back the other channels either. ``notify`` only
appends to a queue (microseconds, never raises); the sender threads do the network IO with
per-request timeouts, retries with exponential backoff, and record every outcome as an ``alert``
event on the run (``{"channel", "status": "sent"|"failed"|"suppressed", "reason", "title", "attempts"}``).

Dying processes: ``run.py``'s exit hooks (uncaught exception, SIGTERM, SIGINT, interpreter exit)
call ``Run.finish`` → our ``on_end`` listener, which queues the final alert and then *waits* for
the senders, bounded by ``flush_timeout_s`` (default 5 s): retries are cut short to fit. A process
killed by SIGKILL or the kernel's OOM killer runs no code at all, so it cannot alert; run
``rlcockpit watchdog`` (:mod:`rlcockpit.alerts.watchdog`) next to such jobs: it sees the heartbeat
stop, marks the run ``crashed`` and alerts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from rlcockpit.alerts.channels import Channel, DeliveryError
from rlcockpit.alerts.config import AlertsConfig, load_alerts_config
from rlcockpit.alerts.message import AlertMessage, from_finding, level_rank, run_link
from rlcockpit.health.stall import STALL
from rlcockpit.redact import redact

logger = logging.getLogger("rlcockpit.alerts")

_MANAGERS: dict[str, AlertManager] = {}


class AlertManager:
    """Sends alerts for one run (or for the watchdog / ``alert-test`` with ``run=None``)."""

    def __init__(self, config: AlertsConfig, *, run: Any = None, store: Any = None, run_id: str | None = None,
                 project: str | None = None, run_name: str | None = None) -> None:
        self.config = config
        self.run = run
        self.store = store if store is not None else getattr(run, "store", None)
        self.run_id = run_id or getattr(run, "id", None)
        self.project = project or getattr(run, "project", None)
        self.run_name = run_name or getattr(run, "name", None)
        self.deliveries: list[dict[str, Any]] = []  # in-memory copy of the delivery log
        self.suppressed = 0
        self._last_by_key: dict[str, float] = {}
        self._recent: deque[float] = deque()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._deadline: float | None = None  # set while a dying process flushes: retries must fit
        self._stop = threading.Event()
        self._senders: list[_Sender] = []
        self._stall_thread: threading.Thread | None = None
        self._stall_critical_at: int | None = None  # the step of the last critical stall finding sent
        self._ended = False
        self._closed = False

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> AlertManager:
        for ch in self.config.channels:
            sender = _Sender(self, ch)
            sender.start()
            self._senders.append(sender)
        if self.run is not None and self.config.stall_timeout_s and self.config.stall_timeout_s > 0:
            self._stall_thread = threading.Thread(target=self._watch_stall, name="rlcockpit-alerts-stall",
                                                  daemon=True)
            self._stall_thread.start()
        return self

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued alert was delivered or given up (bounded); True when all done.

        While flushing, deliveries run against a deadline slightly before ``timeout`` (request
        timeouts shrink, backoff sleeps are cut, further retries are skipped), so their outcome is
        recorded before this returns.
        """
        timeout = self.config.flush_timeout_s if timeout is None else timeout
        end = time.monotonic() + timeout
        self._deadline = end - min(0.25, timeout * 0.1)
        try:
            with self._idle:
                while self._pending > 0:
                    left = end - time.monotonic()
                    if left <= 0:
                        return False
                    self._idle.wait(min(left, 0.1))
                return True
        finally:
            self._deadline = None

    def close(self, timeout: float = 1.0) -> None:
        """Stop the threads (queued alerts are still attempted until the queue is empty)."""
        self._stop.set()
        self._closed = True
        for s in self._senders:
            s.wake()
        for s in self._senders:
            s.join(timeout / max(1, len(self._senders)))

    # ---- triggers (all non-blocking, never raise) ----------------------------------------------
    def notify(self, msg: AlertMessage, *, urgent: bool = False) -> bool:
        """Queue ``msg`` for every channel. ``urgent`` (end of run) skips cooldown and rate limit."""
        try:
            if not self._senders:
                return False
            now = time.monotonic()
            limited = False
            with self._lock:
                if not urgent:
                    if msg.key and now - self._last_by_key.get(msg.key, -1e18) < self.config.cooldown_s:
                        self.suppressed += 1
                        return False
                    while self._recent and now - self._recent[0] > self.config.rate_window_s:
                        self._recent.popleft()
                    limited = bool(self.config.rate_limit) and len(self._recent) >= self.config.rate_limit
                    if limited:
                        self.suppressed += 1
                    else:
                        self._recent.append(now)
                if msg.key and not limited:
                    self._last_by_key[msg.key] = now
                if not limited:
                    self._pending += len(self._senders)
            if limited:
                self._record(None, msg, "suppressed", f"rate limit: more than {self.config.rate_limit} alerts "
                             f"in {self.config.rate_window_s:.0f}s", 0)
                return False
            for s in self._senders:
                s.put(msg, first=urgent)  # the end-of-run alert jumps the queue: the process may be dying
            return True
        except Exception as exc:  # noqa: BLE001 - alerts never raise into training
            logger.warning("rlcockpit: could not queue alert: %s", exc)
            return False

    def on_finding(self, finding: Any) -> None:
        get = finding.get if isinstance(finding, Mapping) else lambda k: getattr(finding, k, None)
        severity = get("severity")
        if level_rank(str(severity)) < level_rank(self.config.min_severity):
            return
        if get("detector") == STALL and severity == "critical":
            self._stall_critical_at = get("step")  # the fixed stall timeout need not say it again
        self.notify(from_finding(finding, project=self.project, run_id=self.run_id, run_name=self.run_name,
                                 dashboard_url=self.config.dashboard_url))

    def on_alert(self, title: str, text: str = "", level: str = "warning") -> None:
        self.notify(self._message(title, text, level, "manual"))

    def on_end(self, status: str, exit_code: int, reason: str | None) -> None:
        """End of run: queue the final alert, then wait for delivery (bounded) — the process may be dying."""
        if self._ended:
            return
        self._ended = True
        self._stop.set()  # stops the stall watchdog; senders keep draining until close()
        msg = end_message(status, exit_code, reason, self)
        budget = self.config.flush_timeout_s
        self._deadline = time.monotonic() + budget * 0.9  # before queuing: the first attempt must fit too
        if msg is not None and (msg.kind != "finished" or self.config.on_finish):
            self.notify(msg, urgent=True)
        if not self.flush(budget):
            left = [f"{title!r} via {where}" for s in self._senders for title, where in s.undelivered()]
            logger.warning("rlcockpit: final alert not confirmed within %.1fs; not delivered (%d): %s",
                           self.config.flush_timeout_s, len(left), "; ".join(left))
        self.close(0.5)

    def deliver_now(self, msg: AlertMessage, timeout: float | None = None) -> list[dict[str, Any]]:
        """Send ``msg`` through every channel synchronously (``alert-test``, watchdog); the outcomes."""
        end = time.monotonic() + (timeout if timeout is not None else 60.0)
        return [self._deliver(ch, msg, deadline=end) for ch in self.config.channels]

    # ---- delivery ------------------------------------------------------------------------------
    def _deliver(self, channel: Channel, msg: AlertMessage, deadline: float | None = None) -> dict[str, Any]:
        cfg = self.config
        attempts, reason = 0, "not attempted"
        for k in range(1 + max(0, cfg.max_retries)):
            limit = deadline if deadline is not None else self._deadline
            timeout = cfg.timeout_s
            if limit is not None:
                left = limit - time.monotonic()
                if left <= 0.05:
                    reason = f"{reason}; gave up (out of time)" if attempts else "gave up (out of time)"
                    break
                timeout = min(timeout, left)
            attempts += 1
            try:
                channel.send(msg, timeout)
                return self._record(channel, msg, "sent", None, attempts)
            except DeliveryError as exc:
                reason = str(exc)
            except Exception as exc:  # noqa: BLE001 - a buggy channel must not kill the sender
                reason = channel.scrub(f"{type(exc).__name__}: {exc}")
            if k < cfg.max_retries:
                self._sleep(cfg.backoff_s * (2 ** k), deadline)
        logger.warning("rlcockpit: alert %r via %s failed after %d attempt(s): %s", msg.title, channel.describe(),
                       attempts, reason)
        return self._record(channel, msg, "failed", reason, attempts)

    def _sleep(self, seconds: float, deadline: float | None) -> None:
        end = time.monotonic() + seconds
        while True:
            limit = deadline if deadline is not None else self._deadline
            now = time.monotonic()
            stop_at = end if limit is None else min(end, limit)
            if now >= stop_at:
                return
            time.sleep(min(0.05, stop_at - now))

    def _record(self, channel: Channel | None, msg: AlertMessage, status: str, reason: str | None,
                attempts: int) -> dict[str, Any]:
        entry = {"channel": channel.name if channel else "*", "type": channel.type if channel else None,
                 "status": status, "reason": reason, "title": msg.title, "level": msg.level, "kind": msg.kind,
                 "attempts": attempts}
        if channel is not None:
            entry["reason"] = channel.scrub(reason) if reason else None
        entry = redact(entry)
        self.deliveries.append(entry)
        step = msg.step if msg.step is not None and msg.step >= 0 else None
        try:
            run = self.run
            if run is not None and not run.finished:
                run.log_event("alert", entry, step=step)
            elif self.store is not None and self.run_id:
                self.store.add_event(self.run_id, "alert", entry, step=step)
        except Exception as exc:  # noqa: BLE001
            logger.warning("rlcockpit: could not record alert delivery: %s", exc)
        return entry

    def _done_one(self) -> None:
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    # ---- stall watchdog ------------------------------------------------------------------------
    def _watch_stall(self) -> None:
        stall = float(self.config.stall_timeout_s)
        interval = min(max(stall / 10.0, 0.2), 30.0)
        last_step, last_change, alerted = self.run.step, time.monotonic(), False
        while not self._stop.wait(interval):
            step = self.run.step
            now = time.monotonic()
            if step != last_step:
                last_step, last_change, alerted = step, now, False
                continue
            if not alerted and now - last_change >= stall:
                alerted = True
                if self._stall_critical_at == step:
                    continue  # the health monitor's stall finding already reported this stall as critical
                waited = now - last_change
                msg = self._message(
                    f"run stalled: no new step for {_fmt_duration(waited)}",
                    f"The process is alive but has not logged a step since step {step} "
                    f"(stall timeout {_fmt_duration(stall)}). Look for a hung rollout, data loader, reward "
                    "server or collective.", "critical", "stalled")
                msg.step = step
                self.notify(msg, urgent=True)

    def _message(self, title: str, text: str, level: str, kind: str) -> AlertMessage:
        step = getattr(self.run, "step", None) if self.run is not None else None
        return AlertMessage(title=title, text=text, level=level, kind=kind, project=self.project,
                            run_id=self.run_id, run_name=self.run_name, step=step,
                            link=run_link(self.config.dashboard_url, self.run_id))


def _fmt_duration(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f}h"
    if s >= 60:
        return f"{s / 60:.0f}min"
    return f"{s:.0f}s"


def end_message(status: str, exit_code: int, reason: str | None, mgr: AlertManager) -> AlertMessage | None:
    """The alert for the end of a run: finished (info), failed with an exception, or killed by a signal."""
    if status == "finished" and not exit_code:
        msg = mgr._message("run finished", "", "info", "finished")
        summary = getattr(mgr.run, "summary", None) or {}
        picked = [k for k in summary if any(w in k for w in ("score", "acc", "reward"))][:4]
        msg.evidence = [f"{k} = {summary[k]:.4g}" if isinstance(summary[k], float) else f"{k} = {summary[k]}"
                        for k in picked]
        return msg
    reason = reason or f"exit code {exit_code}"
    if reason.startswith("killed by"):
        sig = reason.split()[-1]
        return mgr._message(f"run {reason}", f"The process received {sig} (exit code {exit_code}).",
                            "critical", "killed")
    return mgr._message("run failed", f"{reason} (exit code {exit_code})", "critical", "failed")


class _Sender(threading.Thread):
    """One channel's queue and thread."""

    def __init__(self, manager: AlertManager, channel: Channel) -> None:
        super().__init__(name=f"rlcockpit-alerts-{channel.type}", daemon=True)
        self.manager, self.channel = manager, channel
        self._queue: deque[AlertMessage] = deque()
        self._cv = threading.Condition()
        self._inflight: AlertMessage | None = None

    def undelivered(self) -> list[tuple[str, str]]:
        """(title, channel) of the alert being sent and of those still queued: what a run ending now leaves
        unsent (a hung channel holds its first request for up to ``timeout_s``)."""
        with self._cv:
            msgs = ([self._inflight] if self._inflight is not None else []) + list(self._queue)
        return [(m.title, self.channel.describe()) for m in msgs]

    def put(self, msg: AlertMessage, first: bool = False) -> None:
        with self._cv:
            if first:
                self._queue.appendleft(msg)
            else:
                self._queue.append(msg)
            self._cv.notify()

    def wake(self) -> None:
        with self._cv:
            self._cv.notify()

    def run(self) -> None:
        mgr = self.manager
        while True:
            with self._cv:
                while not self._queue:
                    if mgr._closed:
                        return
                    self._cv.wait(0.5)
                msg = self._inflight = self._queue.popleft()
            try:
                mgr._deliver(self.channel, msg)
            except Exception as exc:  # noqa: BLE001
                logger.warning("rlcockpit: alert sender error: %s", exc)
            finally:
                with self._cv:
                    self._inflight = None
                mgr._done_one()


def attach(run: Any, alerts_config: Any = None) -> AlertManager:
    """Wire alerts into ``run`` (called by ``rlcockpit.init(alerts=...)``): findings, end, manual, stall."""
    config = load_alerts_config(alerts_config)
    mgr = AlertManager(config, run=run)
    if not config.channels:
        logger.warning("rlcockpit: alerts are enabled but no channel is configured "
                       "(alerts.channels or RLCOCKPIT_*_WEBHOOK / RLCOCKPIT_SMTP_HOST)")
        return mgr
    mgr.start()
    run.on_finding(mgr.on_finding)
    run.on_end(mgr.on_end)
    run.on_alert(mgr.on_alert)
    _MANAGERS[run.id] = mgr
    logger.info("rlcockpit: alerts → %s", ", ".join(ch.describe() for ch in config.channels))
    return mgr


def get_manager(run: Any) -> AlertManager | None:
    """The alert manager attached to ``run`` (or a run id), if any."""
    return _MANAGERS.get(run if isinstance(run, str) else getattr(run, "id", ""))
