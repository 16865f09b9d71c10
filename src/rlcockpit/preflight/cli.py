"""``rlcockpit preflight``: check data, reward, memory, loggers and batch sizes before training.

Heavy imports stay inside the handler so ``rlcockpit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check data, reward, memory, loggers, batch sizes before training")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--preset", help="a built-in preset (e.g. arith-grpo)")
    src.add_argument("--config", help="a YAML run config")
    p.add_argument("overrides", nargs="*", help="dotted overrides, e.g. data.train_batch_size=32")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--backup-dir", help="write the resolved config, command, git state and packages here")
    p.add_argument("--skip", nargs="*", default=[], help="checks to skip (data reward memory logging batch backup)")
    p.set_defaults(func=cmd_preflight)


def cmd_preflight(args: argparse.Namespace) -> int:
    from rlcockpit.preflight import print_report, run_preflight
    from rlcockpit.preflight.checks import load_cfg

    cfg = load_cfg(preset=args.preset, config_file=args.config, overrides=args.overrides)
    results = run_preflight(cfg, skip=args.skip, backup_dir=args.backup_dir)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        print_report(results)
    return 1 if any(r.status == "fail" for r in results) else 0
