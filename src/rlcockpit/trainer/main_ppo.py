"""``python -m rlcockpit.trainer.main_ppo key=value ...``: verl's entry point name, so a verl launch script
(``python3 -m verl.trainer.main_ppo \\ algorithm.adv_estimator=grpo ...``) runs here by changing one word.

Everything after the module name is what ``rlcockpit train`` takes (verl's keys, Hydra grammar,
``--config-path/--config-name``)."""

from __future__ import annotations

import argparse
import os
import sys

from rlcockpit.trainer.cli import register


def run(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # as the rlcockpit command: nothing comes from a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = argparse.ArgumentParser(prog="python -m rlcockpit.trainer.main_ppo")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["train", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())
