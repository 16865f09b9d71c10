"""Live updates: what a page has seen of a run, and what is new since (sent as server-sent events).

A page loads a run at ``(since, t)`` — the run's last step and the server's clock at load time. From
then on a :class:`LiveCursor` keeps, per metric key, the last ``(step, ts)`` it delivered; a point is
new when its step is larger, or equal with a later timestamp (system metrics are logged several times
per step). Keys that appear later (a run that just started logs 5 ``data/*`` keys before the 70
training keys) arrive through the same path and the page adds their charts. A cheap marker (run row
and a few counts) is read first on every tick, so an idle run costs a handful of small queries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcockpit.store.base import Store
from rlcockpit.store.downsample import minmax_downsample
from rlcockpit.ui import analysis
from rlcockpit.ui.i18n import localize_finding

MAX_LIVE_POINTS = 5000  # per key and event; more (a long gap) is downsampled and flagged


@dataclass
class LiveCursor:
    store: Store
    run_id: str
    since: int | None
    t: float | None
    cursors: dict[str, tuple[int, float]] = field(default_factory=dict)
    marker: tuple | None = None
    findings_n: int = 0  # what the page had at load (it sends the counts), so the first tick compares
    events_n: int = 0
    samples_n: int = 0
    status: str | None = None
    last_step: int | None = None
    finished: bool = False
    lang: str = "en"  # the language of the findings' texts (rlcockpit.ui.i18n)

    def _read_marker(self) -> tuple[tuple, dict[str, Any], list[dict[str, Any]], list[int]]:
        run = self.store.get_run(self.run_id)
        counts = self.store.finding_counts([self.run_id]).get(self.run_id, {})
        events = self.store.events(self.run_id)
        steps = self.store.sample_steps(self.run_id)
        marker = (run.get("last_step"), run.get("updated_at"), run.get("heartbeat_at"), run["status"],
                  tuple(sorted(counts.items())), len(events), len(steps))
        return marker, run, events, steps

    def poll(self) -> list[tuple[str, dict[str, Any]]]:
        """Events for what changed since the previous call: ``points``, ``findings``, ``samples``, ``status``."""
        marker, run, run_events, steps = self._read_marker()
        if marker == self.marker:
            return []
        self.marker = marker
        events: list[tuple[str, dict[str, Any]]] = []
        series = self._new_points()
        if series:
            events.append(("points", {"series": series, "last_step": run.get("last_step")}))
        events.extend(self._new_findings(run_events))
        if len(steps) != self.samples_n:
            events.append(("samples", {"sample_steps": steps}))
            self.samples_n = len(steps)
        status_now = (run["status"], run.get("last_step"))
        if status_now != (self.status, self.last_step) or events:
            self.status, self.last_step = status_now
            events.append(("status", {"status": run["status"], "last_step": run.get("last_step"),
                                      "heartbeat_at": run.get("heartbeat_at"), "updated_at": run.get("updated_at"),
                                      "finished_at": run.get("finished_at"), "exit_code": run.get("exit_code"),
                                      "now": time.time()}))
        self.finished = run["status"] != "running"
        return events

    def _start_of(self, key: str) -> tuple[int | None, float]:
        if key in self.cursors:
            return self.cursors[key]
        return (self.since, self.t if self.t is not None else float("-inf")) if self.since is not None else (None, 0.0)

    def _new_points(self) -> dict[str, Any]:
        out = {}
        for key in self.store.keys(self.run_id):
            last_step, last_ts = self._start_of(key)
            steps, vals, ts = self.store.series(self.run_id, key, start_step=last_step)
            if last_step is not None and len(steps):
                keep = (steps > last_step) | ((steps == last_step) & (ts > last_ts))
                steps, vals, ts = steps[keep], vals[keep], ts[keep]
            if not len(steps):
                continue
            self.cursors[key] = (int(steps[-1]), float(np.max(ts[steps == steps[-1]])))
            downsampled = len(steps) > MAX_LIVE_POINTS
            if downsampled:
                steps, vals, ts = minmax_downsample(steps, vals, ts, MAX_LIVE_POINTS)
            payload = analysis.series_payload(steps, vals, ts, binary=True)
            payload["downsampled"] = downsampled
            out[key] = payload
        return out

    def _new_findings(self, events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        findings = self.store.findings(self.run_id)
        if (len(findings), len(events)) == (self.findings_n, self.events_n):
            return []
        self.findings_n, self.events_n = len(findings), len(events)
        keys = self.store.keys(self.run_id)
        for f in findings:
            f["cites"] = analysis.cited_keys(f, keys)
        findings = [localize_finding(f, self.lang) for f in analysis.clean_json(findings)]
        return [("findings", analysis.clean_json({
            "findings": findings, "events": events, "finding_counts": analysis.finding_counts(findings),
            "data_lost": [e for e in events if e.get("kind") == "data_lost"]}))]
