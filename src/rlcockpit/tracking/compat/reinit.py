"""What ``init()`` does while another run is still active: W&B's ``reinit`` setting.

W&B (0.19.10 and later; ``reinit`` in ``wandb/sdk/wandb_settings.py``, applied in ``wandb_init.py``):

* ``"default"`` (also ``None``): ``"finish_previous"`` in a notebook, ``"return_previous"`` in a script;
* ``"return_previous"`` (also ``False``): the most recent active run is returned, this call's arguments
  are not applied (W&B prints one line saying so; here it is a warning that names what was not applied);
  with ``resume="must"`` it is an error instead (a run cannot be resumed while another is active);
* ``"finish_previous"`` (also ``True``): every active run is finished, then a new run is started;
* ``"create_new"``: a new run beside the active ones; it does not become ``wandb.run`` and the
  module-level calls (``wandb.log``...) keep going to the current run.

The current run is the only one W&B's module-level calls reach, and nothing is lost by returning it:
its data stays, as logged. rlcockpit's own integrations (trainer, verl/TRL loggers, importer, watcher)
always start a run of their own and make it current: they pass :data:`OWN_RUN`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger("rlcockpit")

#: ``init(reinit=OWN_RUN)``: a new run beside any active one, made the current run (rlcockpit's integrations)
OWN_RUN: Any = object()
MODES = ("default", "return_previous", "finish_previous", "create_new")


def in_notebook() -> bool:
    """Inside a Jupyter/Colab kernel (W&B's ``in_notebook``): IPython's kernel shell, not a terminal IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and (hasattr(shell, "kernel") or "google.colab" in sys.modules)


def mode_of(reinit: Any) -> str:
    """``reinit`` as one of :data:`MODES` resolved for this process (``"default"`` never comes back)."""
    if reinit is OWN_RUN:
        return "own"
    if reinit is None or reinit == "default":
        return "finish_previous" if in_notebook() else "return_previous"
    if reinit is True:
        return "finish_previous"
    if reinit is False:
        return "return_previous"
    if reinit not in MODES:
        raise ValueError(f"init(reinit={reinit!r}): expected one of {', '.join(map(repr, MODES))} or a bool")
    return str(reinit)


def active_runs(current: Any, live: list[Any]) -> list[Any]:
    """The runs not finished yet, oldest first: the most recently created is last, as W&B's
    ``most_recent_active_run`` (a ``create_new`` run made after the current one is newer)."""
    runs = [r for r in live if getattr(r, "finished", True) is False]
    if current is not None and getattr(current, "finished", True) is False and current not in runs:
        runs.append(current)
    return runs


def previous_run(reinit: Any, current: Any, live: list[Any], resume: Any, args: Mapping[str, Any]) -> Any:
    """Before a new run is made: the run ``init`` returns instead (``return_previous``), else ``None``
    (having finished the active runs for ``finish_previous``). ``args``: the call's arguments, to name
    the ones a returned run does not take."""
    mode = mode_of(reinit)
    runs = active_runs(current, live)
    if not runs or mode in ("own", "create_new"):
        return None
    if mode == "finish_previous":
        for run in reversed(runs):
            run.finish()
        return None
    previous = runs[-1]
    if resume == "must":
        raise _error(f"init(resume='must'): run {previous.id} is still active; finish it (run.finish()) first, "
                     "or pass reinit='create_new' (W&B raises an error here too)")
    given = sorted(k for k, v in args.items() if v not in (None, {}, (), []) and getattr(previous, k, None) != v)
    not_applied = f"; this call's {', '.join(given)} {'is' if len(given) == 1 else 'are'} not applied" if given else ""
    logger.warning("rlcockpit: init() called while run %s is active and reinit is %r: returning that run (W&B's "
                   "default in a script)%s. Pass reinit='finish_previous' to finish it and start a new run, or "
                   "reinit='create_new' for a second run beside it.", previous.id,
                   "default" if reinit is None else reinit, not_applied)
    return previous


def _error(message: str) -> Exception:
    from rlcockpit.tracking.compat.wandb_env import UsageError

    return UsageError(message)
