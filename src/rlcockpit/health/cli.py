"""``rlcockpit diagnose RUN [--dir DIR] [--json] [--html FILE]``: post-mortem of a stored run."""

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
