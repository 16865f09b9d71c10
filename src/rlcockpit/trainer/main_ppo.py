"""``python -m rlcockpit.trainer.main_ppo key=value ...``: verl's entry point name, so a verl launch script
(``python3 -m verl.trainer.main_ppo \\ algorithm.adv_estimator=grpo ...``) runs here by changing one word.

Everything after the module name is what ``rlcockpit train`` takes (verl's keys, Hydra grammar,
``--config-path/--config-name``), and it runs through the same command-line entry, so a config error is the
same one line (``rlcockpit train: error: ...``, exit status 2), not a traceback."""

from __future__ import annotations

import sys

from rlcockpit.cli import main


def run(argv: list[str] | None = None) -> int:
    return main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(run())
