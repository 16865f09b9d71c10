"""``rlcockpit ui [--dir DIR] [--host 127.0.0.1] [--port 6007] [--token TOKEN]``: serve the dashboard."""

from __future__ import annotations

import argparse
import sys

DEFAULT_PORT = 6007  # same as rlcockpit.ui.server.DEFAULT_PORT (not imported: keeps --help fast)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="serve the local dashboard for a store",
                       description="Serve the rlcockpit dashboard (local, offline, read-only).")
    p.add_argument("--dir", help="store directory (default: $RLCOCKPIT_DIR or ./rlcockpit)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other address requires a token)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any free)")
    p.add_argument("--token", help="access token for non-loopback binds (generated and printed if omitted)")
    p.add_argument("--verbose", action="store_true", help="log every request (token values masked)")
    p.add_argument("--workers", type=int, help="server processes, each with its own store connection "
                                               "(default: one per CPU core, at most 4)")
    p.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    from rlcockpit.ui.server import is_loopback, make_server
    from rlcockpit.ui.workers import default_workers

    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be within 0..65535, got {args.port}")
    workers = default_workers() if args.workers is None else args.workers
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    try:
        server = make_server(args.dir, host=args.host, port=args.port, token=args.token, verbose=args.verbose,
                             workers=workers)
    except OSError as exc:
        print(f"rlcockpit ui: cannot bind {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    store_dir = getattr(server.cockpit.store, "dir", "")
    print(f"rlcockpit dashboard for store {store_dir}")
    print(f"  {server.url}")
    if workers > 1:
        print(f"  {workers} worker processes (--workers)")
    if not is_loopback(args.host):
        print("  (not loopback: every request must carry the token in the URL above)")
    print("  Ctrl+C to stop", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
