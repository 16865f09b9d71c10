"""Sweeps (W&B's sweep files, offline): config, search, controller state in the store, agents, importance.

``rlcockpit sweep SWEEP.yaml`` registers a sweep, ``rlcockpit agent ID`` runs its trials; in Python
:func:`sweep` and :func:`agent` mirror ``wandb.sweep`` / ``wandb.agent``. Heavy libraries (optuna,
scikit-learn) are imported only when a suggestion or an importance is computed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.sweeps.agent import Agent, agent


def sweep(config: Mapping[str, Any], project: str | None = None, *, dir: str | os.PathLike[str] | None = None,
          seed: int | None = None, sampler: str = "auto", base_args: Sequence[str] = ()) -> str:
    """Register a sweep from a config mapping (as ``wandb.sweep(sweep=..., project=...)``); returns its id."""
    from rlcockpit.store.sql import open_database
    from rlcockpit.sweeps.config import parse_sweep
    from rlcockpit.sweeps.controller import create_sweep
    from rlcockpit.sweeps.state import SweepState

    cfg = parse_sweep(config)
    project = project or cfg.project or os.environ.get("RLCOCKPIT_PROJECT") or "default"
    return create_sweep(SweepState(open_database(dir)), cfg, project=project, seed=seed, sampler=sampler,
                        base_args=base_args)


__all__ = ["Agent", "agent", "sweep"]
