"""``rlcockpit diagnose RUN [--dir DIR] [--json] [--html FILE]``: post-mortem of a stored run;
``rlcockpit diagnose RUN --verify [--steps K] [--seeds N] [--tries N] [--budget SECONDS]``: test its fix by rerunning.
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
    v = p.add_argument_group("verifying the fix (docs/health.md, \"Verifying a fix\")")
    v.add_argument("--verify", action="store_true", help="rerun the failure from the last checkpoint before its "
                   "onset, unchanged and with the proposed fix (same seeds), and report whether the fix works; for "
                   "a verl or TRL run, print the resume command instead")
    v.add_argument("--steps", type=int, default=None, metavar="K", help="steps past the onset each branch runs "
                   "(default: 2x the onset's distance from the branch point, 8 to 40)")
    v.add_argument("--seeds", type=int, default=2, metavar="N", help="seeds per branch (default 2)")
    v.add_argument("--tries", type=int, default=3, metavar="N", help="ranked fixes to try until one is confirmed "
                   "(default 3)")
    v.add_argument("--budget", type=float, default=None, metavar="SECONDS", help="CPU seconds for all branches: "
                   "no branch is launched that would exceed it (the report lists what was not run)")
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
    from rlcockpit.health.diagnosis.diagnose import diagnose_run
    from rlcockpit.health.diagnosis.profiles import format_top_ops, profile_events
    from rlcockpit.health.diagnosis.report import format_diagnosis_text, render_html_report
    from rlcockpit.store import open_store, resolve_dir

    db = resolve_dir(args.dir) / "rlcockpit.db"
    if not db.exists():
        raise FileNotFoundError(f"no rlcockpit store at {db.parent} (use --dir or set RLCOCKPIT_DIR)")
    store = open_store(args.dir)
    try:
        run_id = store.get_run(args.run)["id"]
        diagnosis = diagnose_run(store, run_id)
        if args.verify:
            return run_verify(store, resolve_dir(args.dir), run_id, diagnosis, args)
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


def run_verify(store: object, store_dir: Path, run_id: str, diagnosis: dict, args: argparse.Namespace) -> int:
    """``diagnose --verify``: rerun and compare (rlcockpit's trainer), or the resume command (verl, TRL)."""
    from rlcockpit.health.verify.branches import verify_run
    from rlcockpit.health.verify.resume_command import external_verify
    from rlcockpit.health.verify.verdict import format_verify_text

    external = external_verify(store, run_id, diagnosis)
    if external is not None:
        report, text = external
    else:
        report = verify_run(store, store_dir, run_id, diagnosis, steps=args.steps, seeds=args.seeds,
                            tries=args.tries, budget=args.budget)
        text = format_verify_text(report)
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False, default=str)
        print()
    else:
        print(text)
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
