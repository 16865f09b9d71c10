"""``rlcockpit train`` and ``rlcockpit demo`` (torch and transformers are imported inside the handlers)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("train", help="train a model with RL (verl-style config keys)",
                              description="Train with RL. Config = defaults <- --preset <- --config <- key=value overrides, "
                                          "e.g. `rlcockpit train --preset arith-grpo algorithm.adv_estimator=rloo actor.optim.lr=3e-5`.")
    p.add_argument("--preset", help="a preset shipped with rlcockpit (arith-grpo, arith-collapse, ...)")
    p.add_argument("--config", help="a YAML config file")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument("--kl_coef", type=float, default=None, help="alias of algorithm.kl_ctrl.kl_coef")
    p.add_argument("--use_wandb", action="store_true", help="alias: add wandb to trainer.logger")
    p.add_argument("overrides", nargs="*", help="dotted overrides: actor.optim.lr=3e-5 trainer.logger=[console,rlcockpit]")
    p.set_defaults(func=_train)

    d = subparsers.add_parser("demo", help="train the built-in tiny model on 2-digit addition and show it learn")
    d.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the preset's)")
    d.add_argument("--dir", default=None, help="tracking store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    d.add_argument("--preset", default="arith-grpo", help="preset to run (default arith-grpo)")
    d.add_argument("overrides", nargs="*", help="extra dotted overrides")
    d.set_defaults(func=_demo)


def _train(args: argparse.Namespace) -> int:
    import yaml

    from rlcockpit.trainer.config import load_config, to_dict
    from rlcockpit.trainer.loop import train

    overrides = list(args.overrides)
    if args.kl_coef is not None:
        overrides.append(f"kl_coef={args.kl_coef}")
    if args.use_wandb:
        overrides.append("use_wandb=true")
    cfg = load_config(preset=args.preset, config_file=args.config, overrides=overrides)
    if args.print_config:
        print(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        return 0
    result = train(cfg)
    if result.val:
        print(f"[rlcockpit] validation accuracy {result.val[0][1]:.3f} (step {result.val[0][0]}) -> "
              f"{result.val[-1][1]:.3f} (step {result.val[-1][0]})")
    print(f"[rlcockpit] run {result.run_id}: {result.status} after {result.steps} steps in {result.wall_s:.0f}s"
          + (f" ({result.reason})" if result.reason else ""))
    return 0 if result.status == "finished" else 1


def _demo(args: argparse.Namespace) -> int:
    from rlcockpit.trainer.demo import run_demo

    return run_demo(steps=args.steps, store_dir=args.dir, preset=args.preset, overrides=list(args.overrides))
