"""``rlcockpit alert-test`` and ``rlcockpit watchdog``.

Heavy imports stay inside the handlers so ``rlcockpit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("alert-test", help="send a test alert through every configured channel")
    p.add_argument("--config", help="alerts YAML file (the alerts section, or a run config with an 'alerts' key); "
                                    "environment channels (RLCOCKPIT_*_WEBHOOK, RLCOCKPIT_SMTP_*) are added")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=cmd_alert_test)

    p = sub.add_parser("watchdog", help="mark runs whose heartbeat stopped as crashed and alert (SIGKILL, OOM)")
    p.add_argument("--dir", help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--project", help="only runs of this project")
    p.add_argument("--config", help="alerts YAML file with the channels to use (secrets are not in the store)")
    p.add_argument("--stall-timeout", type=float, default=60.0,
                   help="seconds without heartbeat before a running run counts as crashed (default 60; runs "
                        "beat every 5 s)")
    p.add_argument("--interval", type=float, default=15.0, help="seconds between scans (default 15)")
    p.add_argument("--once", action="store_true", help="scan once and exit")
    p.set_defaults(func=cmd_watchdog)


def _load_alerts(path: str | None) -> Any:
    from rlcockpit.alerts.config import load_alerts_config, read_alerts_file

    return load_alerts_config(read_alerts_file(path) if path else None)


def cmd_alert_test(args: argparse.Namespace) -> int:
    from rlcockpit.alerts.manager import AlertManager
    from rlcockpit.alerts.message import AlertMessage

    config = _load_alerts(args.config)
    if not config.channels:
        print("rlcockpit alert-test: no alert channel configured (alerts.channels in --config, or "
              "RLCOCKPIT_SLACK_WEBHOOK / _FEISHU_ / _DINGTALK_ / _WECOM_ / RLCOCKPIT_WEBHOOK_URL / "
              "RLCOCKPIT_SMTP_HOST)", file=sys.stderr)
        return 1
    problems = [p for ch in config.channels for p in ch.problems()]
    for p in problems:
        print(f"rlcockpit alert-test: config problem: {p}", file=sys.stderr)
    msg = AlertMessage(title="test alert", level="info", kind="test",
                       text="If you can read this, rlcockpit alerts reach this channel.")
    results = AlertManager(config).deliver_now(msg)
    rows = [{"channel": ch.describe(), "type": ch.type, "status": r["status"], "attempts": r["attempts"],
             "reason": r["reason"]} for ch, r in zip(config.channels, results)]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        from rich.console import Console
        from rich.table import Table

        t = Table(title="rlcockpit alert-test")
        for col in ("channel", "status", "attempts", "reason"):
            t.add_column(col)
        for r in rows:
            color = "green" if r["status"] == "sent" else "red"
            t.add_row(r["channel"], f"[{color}]{r['status']}[/{color}]", str(r["attempts"]), r["reason"] or "")
        Console().print(t)
    return 0 if all(r["status"] == "sent" for r in rows) else 1


def cmd_watchdog(args: argparse.Namespace) -> int:
    from rlcockpit.alerts.watchdog import watch
    from rlcockpit.store import open_store

    config = _load_alerts(args.config)
    store = open_store(args.dir)
    if not args.once:
        names = ", ".join(ch.describe() for ch in config.channels) or "none (stored console channels only)"
        print(f"rlcockpit watchdog: watching {store.dir} every {args.interval:g}s, stall timeout "
              f"{args.stall_timeout:g}s; channels: {names}", flush=True)

    def report(found: dict[str, Any]) -> None:
        sent = [d["channel"] for d in found["deliveries"] if d["status"] == "sent"]
        failed = [d["channel"] for d in found["deliveries"] if d["status"] != "sent"]
        print(f"rlcockpit watchdog: run {found['id']} ({found['project']}/{found['name']}) crashed: no heartbeat "
              f"for {found['heartbeat_age_s']:.0f}s; alert sent via {', '.join(sent) or 'no channel'}"
              + (f"; failed via {', '.join(failed)}" if failed else ""), flush=True)

    try:
        found = watch(store, config, stall_timeout_s=args.stall_timeout, interval_s=args.interval,
                      project=args.project, once=args.once, on_found=report)
    except KeyboardInterrupt:
        return 0
    if args.once and not found:
        print("rlcockpit watchdog: no crashed runs")
    return 0
