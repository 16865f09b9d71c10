"""Health reports delivered through the alert channels.

The health engine builds a report (:mod:`rlcockpit.health.checkups`) and stores it with the run; sending it is
the alert channels' job, so it lives here: alerts may import health, never the other way round. The top-level
wiring (:mod:`rlcockpit.defaults`) hands these functions to the report schedule and to ``rlcockpit report --send``.
"""

from __future__ import annotations

import sys
from typing import Any

from rlcockpit.alerts.message import AlertMessage, run_link
from rlcockpit.health.checkups import HealthReport, one_line


def report_message(report: HealthReport, dashboard_url: str | None = None) -> Any:
    """The report as an alert message (kind ``report``): the verdict as title, the checks as evidence, the
    sampled generations in the text."""
    level = {"ok": "info", "attention": "warning", "problem": "warning"}[report.verdict]
    text = report.note
    if report.samples:
        lines = [f"step {s['step']} reward {s['reward'] if s['reward'] is not None else '-'}: "
                 f"{one_line(s['response'], 200)}" for s in report.samples]
        text = (text + "\n\n" if text else "") + "Sampled generations:\n" + "\n".join(lines)
    return AlertMessage(title=report.headline.split(" for run ")[0] + f": {report.verdict}", text=text, level=level,
                        kind="report", project=report.project, run_id=report.run_id, run_name=report.run_name,
                        step=report.step, evidence=[f"{c.status}: {c.name} — {c.evidence}" for c in report.checks],
                        link=run_link(dashboard_url, report.run_id),
                        key=f"report:{report.kind}:{report.step}:{int(report.elapsed_s or 0) // 3600}")


def send_report_live(run: Any, report: HealthReport) -> None:
    """Send a scheduled report of a live run through its alert manager (printed when it has no channel)."""
    from rlcockpit.alerts.manager import get_manager

    mgr = get_manager(run)
    if mgr is not None and mgr.config.channels:
        mgr.notify(report_message(report, mgr.config.dashboard_url), urgent=True)
    else:
        print(f"[health] {report.text()}", file=sys.stderr, flush=True)


def send_report_now(store: Any, run: dict, report: HealthReport) -> int:
    """``rlcockpit report --send``: deliver ``report`` of a stored run through the channels of its config (and
    the environment's); prints one line per channel, returns 1 when a channel failed."""
    from rlcockpit.alerts.config import load_alerts_config
    from rlcockpit.alerts.manager import AlertManager

    config = load_alerts_config((run.get("config") or {}).get("alerts"))
    if not config.channels:
        raise ValueError("--send: no alert channel configured (an alerts section in the run config, or "
                         "RLCOCKPIT_*_WEBHOOK / RLCOCKPIT_SMTP_* variables)")
    mgr = AlertManager(config, store=store, run_id=run["id"], project=run.get("project"), run_name=run.get("name"))
    outcomes = mgr.deliver_now(report_message(report, config.dashboard_url))
    for o in outcomes:
        print(f"sent via {o['channel']}: {o['status']}" + (f" ({o['reason']})" if o.get("reason") else ""),
              file=sys.stderr)
    return 1 if any(o["status"] != "sent" for o in outcomes) else 0
