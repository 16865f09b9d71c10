"""``rlcockpit`` command line: one entry point, thin.

Each concern owns its commands in its own ``<area>/cli.py`` exposing ``register(subparsers)``;
every sub-parser sets ``func`` (called with the parsed args, returns an exit code). Those modules
import heavy dependencies only inside the handlers, so ``rlcockpit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rlcockpit.alerts import cli as alerts_cli
from rlcockpit.artifacts import cli as artifacts_cli
from rlcockpit.health import cli as health_cli
from rlcockpit.integrations import cli as integrations_cli
from rlcockpit.metrics import cli as metrics_cli
from rlcockpit.preflight import cli as preflight_cli
from rlcockpit.server import cli as server_cli
from rlcockpit.store.base import StoreError
from rlcockpit.sweeps import cli as sweeps_cli
from rlcockpit.tracking.read import cli as tracking_cli
from rlcockpit.trainer import cli as trainer_cli
from rlcockpit.trainer.rollout import generate as generate_cli
from rlcockpit.ui import cli as ui_cli

# Plain imports: a broken command module fails loudly here instead of its commands quietly vanishing.
COMMAND_MODULES = (
    tracking_cli,  # runs, show, export
    metrics_cli,  # explain
    trainer_cli,  # train, demo
    health_cli,  # diagnose
    alerts_cli,  # alert-test, watchdog
    preflight_cli,  # preflight
    ui_cli,  # ui
    integrations_cli,  # watch, import
    sweeps_cli,  # sweep, agent, importance
    artifacts_cli,  # artifact ls|get|rm|gc|alias
    generate_cli,  # generate (inference test of a model artifact)
    server_cli,  # server, status, sync
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlcockpit", description="RL post-training for LLMs with a cockpit built in."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    _add_store_aliases(sub)
    return parser


def _add_store_aliases(sub: argparse._SubParsersAction) -> None:
    """``--store URL`` on every command that reads a store with ``--dir`` (same destination): a directory,
    ``sqlite:///DIR`` or ``postgresql://...`` (see :mod:`rlcockpit.store.urls`)."""
    for parser in {id(p): p for p in sub.choices.values()}.values():
        dests = {a.dest for a in parser._actions}
        if "dir" in dests and "--store" not in parser._option_string_actions:
            parser.add_argument("--store", dest="dir", metavar="URL",
                                help="store URL (sqlite:///DIR, postgresql://...) or directory; same as --dir")


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from rlcockpit.version import __version__

        print(__version__)
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `rlcockpit ... | head`: the reader left; not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (FileNotFoundError, KeyError, ValueError, StoreError) as exc:
        if os.environ.get("RLCOCKPIT_DEBUG"):
            raise
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"rlcockpit {args.command}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
