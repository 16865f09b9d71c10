"""How a program launched by ``rlcockpit agent`` becomes its sweep's trial, unchanged.

The agent passes the trial through the environment (as ``wandb agent`` does with ``WANDB_RUN_ID`` and
``WANDB_SWEEP_PARAM_PATH``); the first :func:`rlcockpit.init` of the process claims it: the run gets the
trial's id, the sweep id as its group, the sweep's project and store, and the sweep's parameters in its
config — over the program's own values, so ``run.config["lr"]`` is the swept value even when the
program also passed a default. Later ``init`` calls in the same process are ordinary runs.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

ENV_SWEEP_ID = "RLCOCKPIT_SWEEP_ID"
ENV_RUN_ID = "RLCOCKPIT_RUN_ID"
ENV_PARAMS = "RLCOCKPIT_SWEEP_PARAMS"
ENV_PROJECT = "RLCOCKPIT_PROJECT"
ENV_DIR = "RLCOCKPIT_DIR"
ENV_STORE = "RLCOCKPIT_STORE"  # set by an agent whose sweep lives in a database (postgresql://...)
_claimed = False


@dataclass(frozen=True)
class Trial:
    sweep_id: str
    run_id: str
    params: dict[str, Any]
    project: str | None
    dir: str | None
    store: str | None = None

    def apply(self, project: str | None, group: str | None, id: str | None, dir: Any,
              config: dict[str, Any]) -> tuple[str | None, str, str, Any, dict[str, Any]]:
        """``(project, group, id, dir, config)`` for this trial's run, with one note for what it overrode."""
        changed = []
        if project and self.project and project != self.project:
            changed.append(f"project {project!r} -> {self.project!r}")
        if group and group != self.sweep_id:
            changed.append(f"group {group!r} -> {self.sweep_id!r}")
        if dir is not None and self.dir and os.path.abspath(str(dir)) != os.path.abspath(self.dir):
            changed.append(f"store {dir} -> {self.dir}")
        overridden = [k for k, v in self.params.items() if k in config and config[k] != v]
        if overridden:
            changed.append("config " + ", ".join(overridden) + " set by the sweep")
        if changed:
            print(f"rlcockpit: sweep {self.sweep_id} trial run {self.run_id}: " + "; ".join(changed),
                  file=sys.stderr)
        merged = {**config, **self.params}
        return (self.project or project, self.sweep_id, self.run_id, self.dir or dir, merged)


def claim_trial() -> Trial | None:
    """The trial this process runs, the first time it is asked (None outside an agent)."""
    global _claimed
    if _claimed or not os.environ.get(ENV_RUN_ID) or not os.environ.get(ENV_SWEEP_ID):
        return None
    _claimed = True
    try:
        params = json.loads(os.environ.get(ENV_PARAMS) or "{}")
    except json.JSONDecodeError:
        params = {}
    return Trial(sweep_id=os.environ[ENV_SWEEP_ID], run_id=os.environ[ENV_RUN_ID],
                 params=params if isinstance(params, dict) else {}, project=os.environ.get(ENV_PROJECT),
                 dir=os.environ.get(ENV_DIR), store=os.environ.get(ENV_STORE) or None)


def taken_elsewhere(trial: Trial, dir: Any, store: Any, server: str | None) -> bool:
    """True when the trial's run exists already: another process of the same trial holds it — W&B's
    cross-validation sweep example forks its fold workers before the parent's ``init``, so every worker
    inherits the trial's environment. Such a process logs an ordinary run (as the W&B example means its
    workers to, after clearing W&B's variables) instead of failing on the trial's run id. Not checked through
    a team server (``RLCOCKPIT_SERVER``): its spool is written before the server is asked."""
    if server or os.environ.get("RLCOCKPIT_SERVER"):
        return False
    from rlcockpit.store.base import Store, resolve_dir
    from rlcockpit.store.urls import open_run_store

    where = trial.dir or dir
    target = trial.store or store
    opened = open_run_store(resolve_dir(where), dir_given=where is not None, store=target)
    try:
        opened.get_run(trial.run_id)
        return True
    except KeyError:
        return False
    finally:
        if not isinstance(target, Store):
            opened.close()


def trial_run_id() -> str | None:
    """The run id this process's trial will get, before ``init`` claims it (a trainer names its checkpoint
    folder after the run id first)."""
    return None if _claimed else (os.environ.get(ENV_RUN_ID) if os.environ.get(ENV_SWEEP_ID) else None)


def reset_claim() -> None:
    """Let the next ``init`` claim a trial again (in-process function agents run several trials)."""
    global _claimed
    _claimed = False
