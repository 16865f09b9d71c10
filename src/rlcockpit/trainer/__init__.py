"""rlcockpit's RL trainer: verl's algorithms and config names, a loop you can read top to bottom.

    from rlcockpit.trainer import load_config, train
    result = train(load_config(preset="arith-grpo", overrides=["actor.optim.lr=3e-5"]))

Heavy modules (torch, transformers) load on first use so ``rlcockpit --help`` stays fast.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Config", "ConfigError", "TrainResult", "load_config", "run_demo", "train"]


def __getattr__(name: str) -> Any:
    if name in ("Config", "ConfigError", "load_config"):
        from rlcockpit.trainer import config

        return getattr(config, name)
    if name in ("train", "TrainResult"):
        from rlcockpit.trainer import loop

        return getattr(loop, name)
    if name == "run_demo":
        from rlcockpit.trainer.demo import run_demo

        return run_demo
    raise AttributeError(name)
