"""``rlcockpit preflight``: check data, reward, model, memory, loggers and batch sizes before training.

It takes the same configuration arguments as ``rlcockpit train``. Heavy imports stay inside the handler
so ``rlcockpit --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check data, reward, model, memory, loggers, batch sizes before training")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--backup-dir", help="write the resolved config, command, git state and packages here")
    p.add_argument("--skip", nargs="*", default=[], help="checks to skip (data reward model memory logging batch "
                                                        "backup)")
    from rlcockpit.trainer.cli import add_config_arguments  # the same arguments as `rlcockpit train`

    add_config_arguments(p)
    p.set_defaults(func=cmd_preflight, _parser=p)


def cmd_preflight(args: argparse.Namespace) -> int:
    from rlcockpit.preflight import print_report, run_preflight
    from rlcockpit.preflight.checks import load_cfg
    from rlcockpit.trainer.cli import HYDRA_OPTIONS, config_file, config_overrides

    options = {"--preset": 1, "--config": 1, "--json": 0, "--backup-dir": 1, "--skip": -1, **HYDRA_OPTIONS}
    overrides = config_overrides(args, args._parser, options)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print  # --json: stdout is the JSON only
    cfg = load_cfg(preset=args.preset, config_file=config_file(args, args._parser, log=log), overrides=overrides,
                   log=log)
    results = run_preflight(cfg, skip=args.skip, backup_dir=args.backup_dir)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        print_report(results)
    return 1 if any(r.status == "fail" for r in results) else 0
