"""``rlcockpit diagnose RUN [--dir DIR] [--json] [--html FILE]``: post-mortem of a stored run.
``rlcockpit report RUN --at {1h,6h,daily,checkpoint} [--send] [--json]``: a scheduled health report, on demand."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diagnose", help="replay a run through the health detectors and explain what went wrong",
        description="Replays a stored run through the same detectors that run live, links the findings into a "
                    "root-cause chain and suggests config changes.",
    )
    p.add_argument("run", metavar="RUN", help="run id, unique id prefix or unique run name")
    p.add_argument("--dir", default=None, help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    p.add_argument("--html", metavar="FILE", default=None, help="also write a self-contained HTML report to FILE")
    p.set_defaults(func=run_diagnose)
    r = subparsers.add_parser(
        "report", help="a scheduled health report (hour 1, hour 6, daily, checkpoint) of a stored run",
        description="Builds the health report the schedule health.reports=[1h,6h,daily,checkpoint] sends, from the "
                    "stored run: hour 1 (loss falling? GPU utilisation > 70%%?), hour 6 (reward trend, KL under "
                    "control), daily (10 sampled generations with their rewards), checkpoint (config and logs "
                    "saved). The report is stored with the run; --send also delivers it through the run's alert "
                    "channels. Without --at, lists the reports stored with the run.",
    )
    r.add_argument("run", metavar="RUN", help="run id, unique id prefix or unique run name")
    r.add_argument("--at", choices=("1h", "6h", "daily", "checkpoint"), default=None, help="which report")
    r.add_argument("--step", type=int, default=None, help="with --at checkpoint: the checkpoint's step "
                   "(default: the run's latest checkpoint event)")
    r.add_argument("--dir", default=None, help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument("--send", action="store_true", help="also send it through the alert channels (the run "
                   "config's alerts section and RLCOCKPIT_*_WEBHOOK / RLCOCKPIT_SMTP_* variables)")
    r.add_argument("--no-store", action="store_true", help="do not store the report with the run")
    r.set_defaults(func=run_report)


def run_diagnose(args: argparse.Namespace) -> int:
    from rlcockpit.health.diagnosis import diagnose_run
    from rlcockpit.health.profiles import format_top_ops, profile_events
    from rlcockpit.health.report import format_diagnosis_text, render_html_report
    from rlcockpit.store import open_store, resolve_dir

    db = resolve_dir(args.dir) / "rlcockpit.db"
    if not db.exists():
        raise FileNotFoundError(f"no rlcockpit store at {db.parent} (use --dir or set RLCOCKPIT_DIR)")
    store = open_store(args.dir)
    try:
        run_id = store.get_run(args.run)["id"]
        diagnosis = diagnose_run(store, run_id)
        diagnosis["profiles"] = profile_events(store, run_id)  # trainer.profile_steps
        if args.html:
            Path(args.html).write_text(render_html_report(diagnosis, store, run_id), encoding="utf-8")
        if args.json:
            json.dump(diagnosis, sys.stdout, indent=2, ensure_ascii=False, default=str)
            print()
        else:
            print(format_diagnosis_text(diagnosis))
            for prof in diagnosis["profiles"]:
                print("\n" + format_top_ops(prof))
            if args.html:
                print(f"\nHTML report written to {args.html}")
    finally:
        close = getattr(store, "close", None)
        if close:
            close()
    return 0


def run_report(args: argparse.Namespace) -> int:
    from rlcockpit.store import open_store, resolve_dir

    db = resolve_dir(args.dir) / "rlcockpit.db"
    if not db.exists():
        raise FileNotFoundError(f"no rlcockpit store at {db.parent} (use --dir or set RLCOCKPIT_DIR)")
    store = open_store(args.dir)
    try:
        run = store.get_run(args.run)
        if args.at is None:
            return _list_reports(store, run["id"], args.json)
        return _one_report(store, run, args)
    finally:
        close = getattr(store, "close", None)
        if close:
            close()


def _list_reports(store: object, run_id: str, as_json: bool) -> int:
    events = store.events(run_id, "health_report")  # type: ignore[attr-defined]
    if as_json:
        json.dump([e["payload"] for e in events], sys.stdout, indent=2, ensure_ascii=False, default=str)
        print()
    elif not events:
        print("No health reports stored with this run (schedule them with health.reports=[1h,6h,daily,checkpoint] "
              "or build one with --at).")
    for e in events if not as_json else []:
        p = e["payload"]
        print(f"step {e.get('step')}: {p.get('headline')}")
    return 0


def _one_report(store: object, run: dict, args: argparse.Namespace) -> int:
    from rlcockpit.health.checkups import build_report

    checkpoint = None
    if args.at == "checkpoint" and args.step is not None:
        match = [e["payload"] for e in store.events(run["id"], "checkpoint")  # type: ignore[attr-defined]
                 if e.get("step") == args.step or (e.get("payload") or {}).get("step") == args.step]
        checkpoint = dict(match[-1]) if match else {"step": args.step}
        checkpoint.setdefault("step", args.step)
    report = build_report(store, run["id"], args.at, checkpoint=checkpoint)
    if not args.no_store:
        store.add_event(run["id"], "health_report", report.to_dict(), step=report.step)  # type: ignore[attr-defined]
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2, ensure_ascii=False, default=str)
        print()
    else:
        print(report.text())
    if args.send:
        from rlcockpit.registry import PROVIDERS

        # the alert channels send it; health never imports alerts (wired in rlcockpit.defaults)
        return PROVIDERS.get("report_sender")()(store, run, report)
    return 0
