"""``rlcockpit runs``, ``rlcockpit show RUN``, ``rlcockpit export RUN --format csv|jsonl|parquet``."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

# C0 controls (but newline and tab), DEL, C1 controls (0x9b is a one-byte CSI) and bidi overrides: a run
# name or config value must never move the cursor, recolour or retitle the user's terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe(value: Any) -> str:
    """``value`` as text with terminal control characters shown as escapes (``\\x1b``), never executed."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the runs in a store")
    p.add_argument("--dir", help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--project", help="only runs of this project")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("show", help="show one run: config, summary, findings")
    p.add_argument("run", help="run id, id prefix or name")
    p.add_argument("--dir")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="export a run's metric history")
    p.add_argument("run")
    p.add_argument("--dir")
    p.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    p.add_argument("--output", "-o", help="output file (default: <run>.<format>; '-' for stdout)")
    p.add_argument("--keys", nargs="*", help="only these keys")
    p.add_argument("--system", action="store_true", help="include system/* metrics")
    p.set_defaults(func=cmd_export)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _age(ts: float | None) -> str:
    if not ts:
        return "-"
    d = time.time() - ts
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= n:
            return f"{d / n:.0f}{unit} ago"
    return f"{d:.0f}s ago"


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    return obj


def cmd_runs(args: argparse.Namespace) -> int:
    from rlcockpit.store import open_store

    store = open_store(args.dir)
    runs = store.list_runs(args.project)
    if args.json:
        out = [{k: r.get(k) for k in ("id", "name", "project", "group", "tags", "status", "created_at",
                                         "finished_at", "last_step", "data_lost")} | {"summary": r.get("summary")}
               for r in runs]
        print(json.dumps(_jsonable(out), indent=2, ensure_ascii=False))
        return 0
    if not runs:
        print(f"no runs in {store.dir}")
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(f"runs in {safe(store.dir)}"))
    for col in ("id", "project", "name", "status", "step", "created", "reward", "findings", "lost"):
        t.add_column(col)
    for r in runs:
        s = r.get("summary") or {}
        reward = s.get("critic/score/mean", s.get("train/reward", s.get("reward")))
        nf = len(store.findings(r["id"]))
        lost = int(r.get("data_lost") or 0)
        cells = (r["id"], r["project"], r["name"], r["status"], _fmt(r.get("last_step")), _age(r["created_at"]),
                 _fmt(reward) if reward is not None else "-", str(nf), f"{lost} entries" if lost else "-")
        t.add_row(*(Text(safe(c)) for c in cells))  # Text: no rich markup is interpreted in user strings
    Console().print(t)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from rlcockpit.redact import redact
    from rlcockpit.store import open_store

    store = open_store(args.dir)
    run = store.get_run(args.run)
    # masked again on the way out: a store written before a masking rule existed must not print its secrets
    run = {**run, **redact({k: run.get(k) for k in ("name", "group", "tags", "notes", "config", "summary", "meta")})}
    findings = store.findings(run["id"])
    if args.json:
        out = dict(run)
        out["keys"] = store.keys(run["id"])
        out["findings"] = findings
        out["events"] = store.events(run["id"])
        out["sample_steps"] = store.sample_steps(run["id"])
        print(json.dumps(_jsonable(out), indent=2, ensure_ascii=False, default=str))
        return 0
    out = []
    lost = store.events(run["id"], "data_lost")
    status = run["status"] + (" (data lost: see below)" if lost else "")
    out.append(f"run {run['id']}  {run['project']}/{run['name']}  status={status}  last step={run.get('last_step')}")
    ended = run.get("summary") or {}
    if ended.get("stop_reason") and ended.get("stop_kind") != "finished":  # why the trainer stopped it
        out.append(f"stopped ({ended.get('stop_kind')}): {ended['stop_reason']}")
    if run.get("group") or run.get("tags"):
        out.append(f"group={run.get('group')}  tags={', '.join(run.get('tags') or [])}")
    meta = run.get("meta") or {}
    parent = meta.get("verify_of") or ((run.get("config") or {}).get("trainer") or {}).get("branch_of")
    if parent:  # a rerun made (or linked) by `rlcockpit diagnose --verify`
        out.append(f"branch of run {parent} (rlcockpit diagnose {parent} --verify)")
    if meta.get("command"):
        out.append("command: " + " ".join(meta["command"]))
    if (meta.get("git") or {}).get("commit"):
        g = meta["git"]
        out.append(f"git: {g['commit'][:12]}{' (dirty)' if g.get('dirty') else ''}")
    if lost:
        out.append(f"\nDATA LOST ({len(lost)} record{'s' if len(lost) > 1 else ''}; what is stored is correct):")
        out += [f"  {_describe_loss(e)}" for e in lost]
    summary = run.get("summary") or {}
    if summary:
        out.append("\nsummary:")
        out += [f"  {k:<40} {_fmt(summary[k])}" for k in sorted(summary) if not k.startswith("system/")]
    if findings:
        out.append(f"\nfindings ({len(findings)}):")
        out += [f"  [{f['severity']}] step {f['step']} {f['detector']}: {f['title']}" for f in findings]
    config = run.get("config") or {}
    if config:
        out.append("\nconfig:")
        out.append("  " + json.dumps(config, indent=2, ensure_ascii=False, default=str).replace("\n", "\n  "))
    print("\n".join(safe(line) for line in out))
    return 0


def _describe_loss(event: dict[str, Any]) -> str:
    from rlcockpit.store.batch import DataLoss

    p = event.get("payload") or {}
    loss = DataLoss(str(p.get("what")), str(p.get("reason")), list(p.get("ranges") or []), int(p.get("entries") or 0),
                    int(p.get("points") or 0), p.get("sink"), str(p.get("message") or ""))
    return loss.describe()


def cmd_export(args: argparse.Namespace) -> int:
    from rlcockpit.paths import confined, safe_filename
    from rlcockpit.store import open_store

    store = open_store(args.dir)
    run = store.get_run(args.run)
    df = store.history(run["id"], args.keys or None, include_system=args.system)
    # the default file is named after the run, inside the current folder whatever the name holds (``../x``, ``/x``)
    out = args.output or str(confined(Path.cwd(), f"{safe_filename(run['name'], run['id'])}.{args.format}",
                                      "export file name"))
    if args.format == "csv":
        df.to_csv(sys.stdout if out == "-" else out)
    elif args.format == "jsonl":
        text = df.reset_index().to_json(orient="records", lines=True)
        if out == "-":
            sys.stdout.write(text)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
    else:
        if out == "-":
            raise ValueError("parquet export needs a file: use --output FILE")
        df.to_parquet(out)
    if out != "-":
        print(f"wrote {len(df)} steps x {len(df.columns)} keys to {out}", file=sys.stderr)
    return 0
