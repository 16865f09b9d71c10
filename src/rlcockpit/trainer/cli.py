"""``rlcockpit train``, ``rlcockpit demo`` and ``rlcockpit export-model`` (heavy imports inside the handlers).

``train`` takes a verl command line unchanged: Hydra overrides (``key=value``, ``+key``, ``~key``) anywhere
after the options, and the seed articles' flags (``--use_wandb True``, ``--exp_name x``, ``--kl_coef=0.01``)
as aliases. ``rlcockpit preflight`` accepts exactly the same arguments (:func:`add_config_arguments`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rlcockpit.trainer.config.keys import SEED_FLAGS

STRING_FLAGS = ("project", "group", "entity", "exp_name")


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    """``--preset``, ``--config``, the article flags and the overrides (which may be interleaved with options)."""
    p.add_argument("--preset", help="a preset shipped with rlcockpit (arith-grpo, arith-collapse, ...)")
    p.add_argument("--config", help="a YAML config in verl's shape (verl's own config files work)")
    p.add_argument("--config-path", dest="config_path", help="Hydra's form, as verl scripts pass it: the folder of "
                                                              "--config-name")
    p.add_argument("--config-name", dest="config_name", help="Hydra's form: a YAML in --config-path (verl's own "
                                                              "ppo_trainer / ppo_megatron_trainer: the defaults)")
    for flag in SEED_FLAGS:
        p.add_argument(f"--{flag}", nargs="?", const="true", default=None, metavar="VALUE",
                       help=argparse.SUPPRESS)
    p.add_argument("overrides", nargs=argparse.REMAINDER,
                   help="verl-style overrides: actor_rollout_ref.actor.optim.lr=1e-6 'trainer.logger=[console,wandb]' "
                        "+key=value ~key; the articles' flags (--use_wandb True, --exp_name NAME, --kl_coef 0.01, "
                        "--project, --group, --entity, --learning_rate, --target_kl, --rollout_batch_size, "
                        "--save_policy_model True) work as aliases")


def _flag_override(flag: str, value: str) -> str:
    return f"{flag}={json.dumps(value)}" if flag in STRING_FLAGS else f"{flag}={value}"


def config_overrides(args: argparse.Namespace, parser: argparse.ArgumentParser,
                     options: dict[str, int]) -> list[str]:
    """The override list from ``args``: article flags become alias overrides; options given after the first
    override (``options``: name -> number of values, -1 = all up to the next option) are parsed back into
    ``args`` with ``parser``."""
    overrides: list[str] = []
    for flag in SEED_FLAGS:
        value = getattr(args, flag)
        if value is None:
            continue
        if "=" in value:  # `--use_wandb key=value`: the flag had no value, that token is an override
            overrides.append(value)
            value = "true"
        overrides.insert(0, _flag_override(flag, value))
    leftovers: list[str] = []
    tokens = list(args.overrides or [])
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        if tok.startswith("--") and name[2:] in SEED_FLAGS:
            flag = name[2:]
            if eq:
                value = inline
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("-") and "=" not in tokens[i + 1]:
                i += 1
                value = tokens[i]
            else:
                value = "true"
            overrides.append(_flag_override(flag, value))
        elif tok.startswith("--") and name in options:
            leftovers.append(tok)
            count = options[name]
            while not eq and count != 0 and i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                if count > 0 and "=" in tokens[i + 1]:
                    break
                i += 1
                leftovers.append(tokens[i])
                count -= 1
        elif tok.startswith("--") and not eq:
            parser.error(f"unrecognized option {tok}")
        else:
            overrides.append(tok)  # key=value, +key=value, ~key, --key=value
        i += 1
    if leftovers:
        parser.parse_args(leftovers, namespace=args)
    return overrides


# verl's own trainer configs, named by verl scripts with --config-name and no file of the user's
VERL_CONFIG_NAMES = ("ppo_trainer", "ppo_megatron_trainer", "ppo_torchtitan_trainer", "ppo_veomni_trainer",
                     "_generated_ppo_trainer", "_generated_ppo_megatron_trainer")
HYDRA_OPTIONS = {"--config-path": 1, "--config-name": 1}


def config_file(args: argparse.Namespace, parser: argparse.ArgumentParser, log: Any = print) -> str | None:
    """The config file the arguments name: ``--config FILE``, or Hydra's ``--config-path DIR --config-name NAME``
    as verl's scripts write it (``NAME`` with or without ``.yaml``). verl's own trainer configs by name
    (``--config-name=ppo_megatron_trainer.yaml``, no file of the user's) are its defaults: rlcockpit's stand in."""
    name, folder = getattr(args, "config_name", None), getattr(args, "config_path", None)
    if name is None:
        if folder is not None:
            parser.error("--config-path needs --config-name (Hydra's form), or give the file with --config FILE")
        return args.config
    if args.config:
        parser.error("give either --config FILE or --config-path/--config-name, not both")
    from pathlib import Path

    stem = name[:-5] if name.endswith(".yaml") else name
    for cand in ([Path(folder) / f"{stem}.yaml", Path(folder) / name] if folder else []):
        if cand.is_file():
            return str(cand)
    if stem in VERL_CONFIG_NAMES:
        log(f"[rlcockpit] config: --config-name={name} is verl's own trainer config: its defaults are rlcockpit's "
            "here (under verl's keys)")
        return None
    where = f"{Path(folder) / (stem + '.yaml')}" if folder else "no --config-path given"
    parser.error(f"--config-name={name}: no such config file ({where}); verl's own configs accepted by name: "
                 + ", ".join(VERL_CONFIG_NAMES))
    return None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("train", help="train a model with RL (verl's config keys and command line)",
                              description="Train with RL. Config = defaults <- --preset <- --config <- overrides, "
                                          "e.g. `rlcockpit train --preset arith-grpo algorithm.adv_estimator=rloo "
                                          "actor_rollout_ref.actor.optim.lr=3e-5`.")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    add_config_arguments(p)
    p.set_defaults(func=_train, _parser=p)

    d = subparsers.add_parser("demo", help="train the built-in tiny model on 2-digit addition and show it learn")
    d.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the preset's)")
    d.add_argument("--dir", default=None, help="tracking store directory (default $RLCOCKPIT_DIR or ./rlcockpit)")
    d.add_argument("--preset", default=None, help="preset to run (default: the task's, arith-grpo for arith)")
    d.add_argument("--task", default="arith", choices=sorted(DEMO_TASKS),
                   help="arith: 2-digit addition (text); vision: which bar is taller, a tiny Qwen2-VL on pictures")
    d.add_argument("overrides", nargs="*", help="extra overrides")
    d.set_defaults(func=_demo)

    from rlcockpit.trainer.checkpoints.export import register as register_export

    register_export(subparsers)


DEMO_TASKS = {"arith": "arith-grpo", "vision": "vision-grpo"}  # rlcockpit demo --task NAME -> its preset
TRAIN_OPTIONS = {"--preset": 1, "--config": 1, "--print-config": 0, **HYDRA_OPTIONS}


def _train(args: argparse.Namespace) -> int:
    import yaml

    from rlcockpit.registry import PROVIDERS
    from rlcockpit.trainer.config import load_config, to_dict
    from rlcockpit.trainer.distributed.run import env_rank
    from rlcockpit.trainer.launch import finish_group, launch, needs_launch
    from rlcockpit.trainer.loop import train

    overrides = config_overrides(args, args._parser, TRAIN_OPTIONS)
    cfg = load_config(preset=args.preset, config_file=config_file(args, args._parser), overrides=overrides)
    if args.print_config:
        print(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        return 0
    if needs_launch(cfg, log=print):  # trainer.n_gpus_per_node=N outside torchrun: start N ranks running this
        return launch(cfg, ["train", *(["--preset", args.preset] if args.preset else []),
                            *(["--config", args.config] if args.config else []), *overrides])
    _, refused = PROVIDERS.get("preflight")()  # preflight's exception, handed down by the wiring
    try:
        result = train(cfg)
    except refused as exc:
        run = getattr(exc, "run_id", None)
        if env_rank() == 0:
            print(f"rlcockpit train: stopped before training: {exc}" + (f" (recorded as run {run})" if run else ""))
        return 1
    finally:
        finish_group()
    if env_rank() != 0:
        return 0 if result.status == "finished" else 1
    if result.val:
        print(f"[rlcockpit] validation accuracy {result.val[0][1]:.3f} (step {result.val[0][0]}) -> "
              f"{result.val[-1][1]:.3f} (step {result.val[-1][0]})")
    print(f"[rlcockpit] run {result.run_id}: {result.status} after {result.steps} steps in {result.wall_s:.0f}s"
          + (f" ({result.reason})" if result.reason else ""))
    return 0 if result.status == "finished" else 1


def _demo(args: argparse.Namespace) -> int:
    from rlcockpit.trainer.demo import run_demo

    return run_demo(steps=args.steps, store_dir=args.dir, preset=args.preset or DEMO_TASKS[args.task],
                    overrides=list(args.overrides))
