"""Sweeps (W&B's sweep files, offline): config, search, controller state in the store, agents, importance.

``rlcockpit sweep SWEEP.yaml`` registers a sweep, ``rlcockpit agent ID`` runs its trials; in Python
:func:`sweep` and :func:`agent` mirror ``wandb.sweep`` / ``wandb.agent``. Heavy libraries (optuna,
scikit-learn) are imported only when a suggestion or an importance is computed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlcockpit.sweeps.agent import Agent, agent


def sweep(config: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None, project: str | None = None, *,
          sweep: Mapping[str, Any] | None = None, entity: str | None = None, prior_runs: Any = None,
          dir: str | os.PathLike[str] | None = None, seed: int | None = None, sampler: str = "auto",
          base_args: Sequence[str] = ()) -> str:
    """Register a sweep from a config mapping; returns its id. W&B's forms work: ``wandb.sweep(sweep=cfg,
    project=..., entity=...)`` and a function returning the config (``entity`` has no effect offline;
    ``prior_runs`` is not supported and says so)."""
    from rlcockpit.store.sql import open_database
    from rlcockpit.sweeps.config import parse_sweep
    from rlcockpit.sweeps.controller import create_sweep
    from rlcockpit.sweeps.state import SweepState

    if config is None:
        config = sweep
    if config is None:
        raise TypeError("sweep() needs the sweep config (a dict, as in wandb.sweep(sweep=config))")
    if prior_runs:
        raise ValueError("sweep(prior_runs=...) is not supported: trials of an rlcockpit sweep are its own runs")
    cfg = parse_sweep(config() if callable(config) else config)
    project = project or cfg.project or os.environ.get("RLCOCKPIT_PROJECT") or "default"
    return create_sweep(SweepState(open_database(dir)), cfg, project=project, seed=seed, sampler=sampler,
                        base_args=base_args)


__all__ = ["Agent", "agent", "sweep"]
