"""``rlcockpit server ...`` (the team server and its accounts), ``rlcockpit status``, ``rlcockpit sync``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

DEFAULT_PORT = 6008
DB_ENV = "RLCOCKPIT_SERVER_DB"


def _db_arg(p: argparse.ArgumentParser, top: bool = False) -> None:
    p.add_argument("--db", default=None if top else argparse.SUPPRESS,
                   help=f"PostgreSQL URL, e.g. postgresql://rlcockpit@127.0.0.1/rlcockpit (default ${DB_ENV})")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="run the team server (PostgreSQL) or manage its users",
                       description="Team server: every project's dashboard plus the ingestion API for remote "
                                   "runs (RLCOCKPIT_SERVER=...). Subcommands manage users and tokens.")
    _db_arg(p, top=True)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1); every request needs a "
                                                       "token unless --local-admin")
    p.add_argument("--local-admin", action="store_true",
                   help="loopback binds only: a request without a token acts as the server admin (one person on "
                        "their own machine, like `rlcockpit ui`; programs on this machine log without a token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any free)")
    p.add_argument("--alerts", help="alerts YAML for projects without their own channels (KPI alerts)")
    p.add_argument("--dashboard-url", help="public URL of this server (links in alerts)")
    p.add_argument("--rate", type=float, default=100.0, help="ingest requests per second per token (default 100)")
    p.add_argument("--max-batch-mb", type=float, default=16.0, help="largest ingest request in MiB (default 16)")
    p.set_defaults(func=cmd_serve)
    ops = p.add_subparsers(dest="server_command", metavar="SUBCOMMAND")

    a = ops.add_parser("create-admin", help="create a server admin and print their first token")
    a.add_argument("name", nargs="?", default="admin", help="user name (default admin)")
    _expiry_arg(a)
    _db_arg(a)
    a.set_defaults(func=cmd_create_admin)

    u = ops.add_parser("add-user", help="create a user (optionally with a role in a project) and print a token")
    u.add_argument("name")
    u.add_argument("--project", action="append", default=[], help="PROJECT[=ROLE] (role viewer|member|admin; "
                                                                  "default member); repeatable")
    _expiry_arg(u)
    _db_arg(u)
    u.set_defaults(func=cmd_add_user)

    g = ops.add_parser("grant", help="set a user's role in a project (role 'none' removes it)")
    g.add_argument("name")
    g.add_argument("project")
    g.add_argument("role", choices=("viewer", "member", "admin", "none"))
    _db_arg(g)
    g.set_defaults(func=cmd_grant)

    t = ops.add_parser("token", help="tokens: `token USER` issues one, `token list [USER]` lists them, "
                                     "`token revoke ID` revokes one",
                       description="`token USER` (or `token issue USER`) prints a new token for USER; `token list "
                                   "[USER]` shows id, user, label, created, expires, last used, revoked; `token "
                                   "revoke ID` (the 12-hex id, or the whole rlc_... token) refuses it from the next "
                                   "request on, in every server process.")
    t.add_argument("action", metavar="USER|issue|list|revoke")
    t.add_argument("arg", nargs="?", metavar="USER|ID", help="issue/list: the user; revoke: the token id")
    t.add_argument("--label", default="")
    t.add_argument("--json", action="store_true", help="list: JSON")
    _expiry_arg(t)
    _db_arg(t)
    t.set_defaults(func=cmd_token)

    s = sub.add_parser("status", help="remote logging: what is spooled and not yet at the team server")
    s.add_argument("--dir", help="store directory whose spool/ to read (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    y = sub.add_parser("sync", help="upload runs logged offline and leftover spools to the team server "
                                    "(resumable, never duplicates)")
    y.add_argument("run", nargs="?", help="run id or name in the local store")
    y.add_argument("--all", action="store_true", help="every run of the local store (and every spool)")
    y.add_argument("--dir", help="local store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    y.add_argument("--server", help="team server URL (default $RLCOCKPIT_SERVER)")
    y.add_argument("--token", help="API token (default $RLCOCKPIT_TOKEN)")
    y.set_defaults(func=cmd_sync)


def _expiry_arg(p: argparse.ArgumentParser) -> None:
    from rlcockpit.server.accounts import DEFAULT_TOKEN_DAYS

    p.add_argument("--expires-days", type=float, default=DEFAULT_TOKEN_DAYS,
                   help=f"the token stops working after this many days (default {DEFAULT_TOKEN_DAYS:g}; 0: never)")


def _db(args: argparse.Namespace) -> str:
    db = getattr(args, "db", None) or os.environ.get(DB_ENV)
    if not db:
        raise ValueError(f"--db postgresql://... is required (or ${DB_ENV})")
    return db


def _accounts(args: argparse.Namespace):  # noqa: ANN202
    from rlcockpit.server import schema  # noqa: F401 - registers the team tables
    from rlcockpit.server.accounts import Accounts
    from rlcockpit.store.postgres.store import PostgresStore

    return Accounts(PostgresStore(_db(args), pool_size=2))


def cmd_serve(args: argparse.Namespace) -> int:
    if getattr(args, "server_command", None):
        return 2
    from rlcockpit.server.app import TeamServer
    from rlcockpit.server.guard import Limits

    alerts = None
    if args.alerts:
        from rlcockpit.alerts.config import read_alerts_file

        alerts = read_alerts_file(args.alerts)
    limits = Limits(requests_per_s=args.rate, request_burst=max(4 * args.rate, 10),
                    max_body_bytes=int(args.max_batch_mb * 2**20))
    server = TeamServer(_db(args), args.host, args.port, limits=limits, alerts=alerts,
                        dashboard_url=args.dashboard_url, local_admin=args.local_admin)
    print(f"rlcockpit team server on {server.url}/  (database {server.store.url})")
    if server.local_admin:
        print("  --local-admin: requests from this machine without a token act as the server admin")
    else:
        print("  every request needs a token (rlcockpit server create-admin / add-user)")
    print(f"  runs log here with RLCOCKPIT_SERVER={server.url} RLCOCKPIT_TOKEN=rlc_...", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.socket.close()
    return 0


def cmd_create_admin(args: argparse.Namespace) -> int:
    acc = _accounts(args)
    acc.create_user(args.name, is_admin=True, actor="cli")
    print(f"server admin {args.name!r} created; their token (shown once, keep it secret):")
    print(acc.issue_token(args.name, "create-admin", actor="cli", expires_days=args.expires_days))
    return 0


def cmd_add_user(args: argparse.Namespace) -> int:
    acc = _accounts(args)
    acc.create_user(args.name, actor="cli")
    for item in args.project:
        project, _, role = item.partition("=")
        acc.grant(args.name, project, role or "member", actor="cli")
    print(f"user {args.name!r} created; their token (shown once):")
    print(acc.issue_token(args.name, "add-user", actor="cli", expires_days=args.expires_days))
    return 0


def cmd_grant(args: argparse.Namespace) -> int:
    _accounts(args).grant(args.name, args.project, None if args.role == "none" else args.role, actor="cli")
    print(f"{args.name}: {args.role} in {args.project}")
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    acc = _accounts(args)
    if args.action == "list":
        rows = acc.tokens(args.arg)
        if args.json:
            print(json.dumps(rows, indent=2))
            return 0
        print(f"{'id':12}  {'user':16}  {'created':16}  {'expires':16}  {'last used':16}  state     label")
        for r in rows:
            state = "revoked" if r["revoked"] else "expired" if r["expired"] else "active"
            print(f"{r['id']:12}  {r['user']:16}  {_when(r['created_at'])}  {_when(r['expires_at'], 'never')}  "
                  f"{_when(r['last_used'])}  {state:8}  {r['label'] or ''}")
        return 0
    if args.action == "revoke":
        if not args.arg:
            raise ValueError("token revoke: name the token id (see `rlcockpit server token list`)")
        try:
            tid = acc.revoke_token(args.arg, actor="cli")
        except KeyError as exc:
            raise ValueError(f"token revoke: {exc.args[0]}") from None
        print(f"token {tid} revoked: refused from the next request on")
        return 0
    name = args.arg if args.action == "issue" else args.action
    if not name:
        raise ValueError("token issue: name the user")
    print(acc.issue_token(name, args.label, actor="cli", expires_days=args.expires_days))
    return 0


def _when(ts: float | None, none: str = "-") -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime(ts)) if ts else none:16}"


def cmd_status(args: argparse.Namespace) -> int:
    from rlcockpit.server.sync import spool_files, spool_status
    from rlcockpit.store import resolve_dir

    store_dir = resolve_dir(args.dir)
    rows = [spool_status(p) for p in spool_files(store_dir)]
    server = os.environ.get("RLCOCKPIT_SERVER")
    if args.json:
        print(json.dumps({"server": server, "spools": rows}, indent=2, default=str))
        return 0
    print(f"team server: {server or '(RLCOCKPIT_SERVER not set)'}")
    if not rows:
        print(f"nothing spooled in {store_dir / 'spool'}: every remote batch reached its server")
        return 0
    now = time.time()
    for r in rows:
        age = f"{now - r['oldest']:.0f}s old" if r.get("oldest") else "-"
        who = "live (its process is sending)" if r["live"] else "left by a finished/killed process: `rlcockpit sync`"
        print(f"{r['path']}: {r['ops']} batches, {r['bytes'] / 2**20:.2f} MiB, oldest {age}, runs "
              f"{', '.join(r['runs']) or '-'} -> {r.get('server')}  [{who}]")
        if r.get("last_error"):
            print(f"  last error: {r['last_error']}")
        for run, what in (r.get("gone") or {}).items():
            print(f"  run {run} no longer exists on the server: {what}")
    return 0 if not any(r["ops"] for r in rows) else 1


def cmd_sync(args: argparse.Namespace) -> int:
    from rlcockpit.server.sync import replay_spool, spool_files, sync_run
    from rlcockpit.store import resolve_dir
    from rlcockpit.store.remote.spool import Spool
    from rlcockpit.store.sqlite import SQLiteStore

    server = args.server or os.environ.get("RLCOCKPIT_SERVER")
    token = args.token or os.environ.get("RLCOCKPIT_TOKEN")
    if not args.run and not args.all:
        raise ValueError("name a RUN or pass --all")
    store_dir = resolve_dir(args.dir)
    failed = 0
    for path in spool_files(store_dir):
        if Spool.is_locked(path):
            print(f"{path}: skipped (its process is still sending it)")
            continue
        out = replay_spool(path, token, server=server)
        print(f"{path}: sent {out['sent_ops']} batches to {out['server']}; {out['left_ops']} left ({out['state']})")
        failed += out["left_ops"] > 0
    if not (store_dir / "rlcockpit.db").exists():
        return 1 if failed else 0
    if not server:
        raise ValueError("--server (or $RLCOCKPIT_SERVER) is required to sync local runs")
    local = SQLiteStore(store_dir)
    runs = [r["id"] for r in local.list_runs()] if args.all else [local.get_run(args.run)["id"]]
    for rid in runs:
        try:
            out = sync_run(local, rid, server, token)
        except RuntimeError as exc:
            print(f"run {rid}: {exc}", file=sys.stderr)
            failed += 1
            continue
        sent = out["sent"]
        print(f"run {rid}: sent {sent['points']} points, {sent['samples']} samples, {sent['events']} events, "
              f"{sent['findings']} findings" + (" (the server had the rest)" if out["already"] else ""))
    return 1 if failed else 0
