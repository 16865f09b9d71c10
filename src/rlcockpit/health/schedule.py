"""The live schedule of health reports: ``health.reports=[1h,6h,daily,checkpoint]``.

A small daemon thread per run wakes every ``poll_s`` seconds, and when a report is due — one hour and six
hours after the run started, every 24 hours, after every checkpoint (a ``checkpoint`` event, or verl's
``timing_s/save_checkpoint`` metric) — builds it from the stored run (:func:`~rlcockpit.health.checkups.build_report`,
the code ``rlcockpit report`` runs), stores it with the run as a ``health_report`` event, and sends it through
the run's alert channels (or prints it when the run has none). It reads the store and never blocks training;
a report that fails to build is logged and skipped, never raised into the run.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from rlcockpit.health.checkups import OFFSET_S, HealthReport, build_report, parse_reports

logger = logging.getLogger("rlcockpit")
SAVE_TIMER = "timing_s/save_checkpoint"  # verl logs it on the steps it saved a checkpoint
_SCHEDULES: dict[str, ReportSchedule] = {}


class ReportSchedule(threading.Thread):
    """Due reports of one run. ``clock`` is injectable (tests move time forward instead of waiting hours)."""

    def __init__(self, run: Any, kinds: Any, *, clock: Callable[[], float] = time.time, poll_s: float = 30.0,
                 send: Callable[[HealthReport], None] | None = None) -> None:
        super().__init__(name=f"rlcockpit-reports-{getattr(run, 'id', '')}", daemon=True)
        self.tracked, self.kinds = run, parse_reports(kinds)
        self.clock, self.poll_s = clock, poll_s
        self.send = send or self._send
        self.sent: list[HealthReport] = []
        self._stop_event = threading.Event()
        self._done: set[tuple[str, int]] = set()  # (kind, occurrence) already reported
        self._checkpoints_seen: set[Any] = set()
        start = run.store.get_run(run.id).get("created_at")
        self.start_ts = float(start) if start else clock()

    def stop(self) -> None:
        self._stop_event.set()

    def run(self) -> None:  # noqa: D401 - threading.Thread API
        while not self._stop_event.wait(self.poll_s):
            self.tick()

    def tick(self) -> list[HealthReport]:
        """Build and send every report due now (also callable directly)."""
        out = []
        for kind, occurrence, checkpoint in self.due():
            try:
                report = build_report(self.tracked.store, self.tracked.id, kind, now=self.clock(), checkpoint=checkpoint)
            except Exception as exc:  # noqa: BLE001 - a report never breaks the run
                logger.warning("rlcockpit: %s health report failed: %s", kind, exc)
                continue
            self._done.add((kind, occurrence))
            self.deliver(report)
            out.append(report)
        return out

    def due(self) -> list[tuple[str, int, dict[str, Any] | None]]:
        elapsed = self.clock() - self.start_ts
        out: list[tuple[str, int, dict[str, Any] | None]] = []
        for kind in self.kinds:
            if kind in ("1h", "6h") and elapsed >= OFFSET_S[kind] and (kind, 0) not in self._done:
                out.append((kind, 0, None))
            elif kind == "daily":
                day = int(elapsed // OFFSET_S["daily"])
                if day >= 1 and (kind, day) not in self._done:
                    out.append((kind, day, None))
            elif kind == "checkpoint":
                out += [("checkpoint", hash(key), cp) for key, cp in self._new_checkpoints()]
        return out

    def _new_checkpoints(self) -> list[tuple[Any, dict[str, Any]]]:
        store, rid = self.tracked.store, self.tracked.id
        found: list[tuple[Any, dict[str, Any]]] = []
        for ev in store.events(rid, "checkpoint"):
            key = ("event", ev.get("id"))
            if key not in self._checkpoints_seen:
                found.append((key, dict(ev.get("payload") or {}, step=ev.get("step", (ev.get("payload") or {}).get("step")))))
        if SAVE_TIMER in store.keys(rid):
            steps, _values, _ts = store.series(rid, SAVE_TIMER)
            for s in steps.tolist():
                key = ("metric", int(s))
                if key not in self._checkpoints_seen and not any(cp.get("step") == int(s) for _k, cp in found):
                    found.append((key, {"step": int(s)}))
        for key, _cp in found:
            self._checkpoints_seen.add(key)
        return found

    def deliver(self, report: HealthReport) -> None:
        self.sent.append(report)
        try:
            if not getattr(self.tracked, "finished", False):
                self.tracked.log_event("health_report", report.to_dict(), step=report.step)
            else:
                self.tracked.store.add_event(self.tracked.id, "health_report", report.to_dict(), step=report.step)
        except Exception as exc:  # noqa: BLE001
            logger.warning("rlcockpit: could not store the %s health report: %s", report.kind, exc)
        try:
            self.send(report)
        except Exception as exc:  # noqa: BLE001
            logger.warning("rlcockpit: could not send the %s health report: %s", report.kind, exc)

    def _send(self, report: HealthReport) -> None:
        """Without a sender (the alert channels, wired by :mod:`rlcockpit.defaults`) the report is printed."""
        print(f"[health] {report.text()}", file=sys.stderr, flush=True)


def attach_reports(run: Any, kinds: Any, **kwargs: Any) -> ReportSchedule | None:
    """Start the report schedule of ``run`` (``kinds``: ``[1h, 6h, daily, checkpoint]`` or a subset); stopped
    when the run ends. ``None`` when no report is asked for."""
    if not parse_reports(kinds):
        return None
    schedule = ReportSchedule(run, kinds, **kwargs)
    schedule.start()
    run.on_end(lambda *_args: schedule.stop())
    _SCHEDULES[run.id] = schedule
    return schedule


def get_schedule(run: Any) -> ReportSchedule | None:
    """The report schedule attached to ``run`` (or a run id), if any."""
    return _SCHEDULES.get(run if isinstance(run, str) else getattr(run, "id", ""))
