"""rlcockpit: RL post-training for LLMs with a cockpit built in.

Tracking API (wandb-shaped)::

    import rlcockpit
    run = rlcockpit.init(project="arith", name="grpo-1", config={"lr": 1e-5})
    run.log({"actor/pg_loss": 0.1}, step=1)
    run.finish()
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from rlcockpit.version import __version__

# The public API, loaded when first used (PEP 562): ``import rlcockpit.registry`` (the ground floor) or
# ``rlcockpit.version`` must not pull in tracking and the store. Name -> the module that defines it.
_PUBLIC: dict[str, str] = {
    "plot": "rlcockpit.tracking.media.plot",  # a module: ``wandb.plot.line(...)`` and the other preset charts
    "Api": "rlcockpit.tracking.read.api",
    "Artifact": "rlcockpit.tracking.artifacts",
    **dict.fromkeys(("Audio", "Histogram", "Html", "Image", "Molecule", "Object3D", "Table", "Video"),
                    "rlcockpit.tracking.media.rich"),
    **dict.fromkeys(("alert", "define_metric", "finish", "join", "log", "log_artifact", "log_model", "log_samples",
                     "mark_preempting", "unwatch", "use_artifact", "use_model"), "rlcockpit.tracking.module_api"),
    "plot_table": "rlcockpit.tracking.media.plot",
    "Run": "rlcockpit.tracking.run",
    "init": "rlcockpit.tracking.run",
    "Config": "rlcockpit.tracking.compat.wandb_compat",
    **dict.fromkeys(("AlertLevel", "CommError", "Error", "Settings", "UsageError", "errors", "require", "restore",
                     "setup", "teardown", "termerror", "termlog", "termwarn", "util"), "rlcockpit.tracking.compat.wandb_env"),
}


def __getattr__(name: str) -> Any:
    """The public API on first use (then cached in the module), and W&B's module attributes read when asked:
    ``rlcockpit.run`` (the current run or ``None``), ``rlcockpit.config`` and ``rlcockpit.summary`` (the
    current run's), as ``wandb.run`` / ``wandb.config`` / ``wandb.summary``."""
    if name in _PUBLIC:
        module = import_module(_PUBLIC[name])
        value = module if module.__name__.endswith("." + name) else getattr(module, name)
        globals()[name] = value
        return value
    if name in ("run", "config", "summary"):
        current = import_module("rlcockpit.tracking.run")._current
        if name == "run":
            return current
        if name == "config":
            return current.config if current is not None else __getattr__("Config")()
        return current.summary if current is not None else {}
    raise AttributeError(f"module 'rlcockpit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | {"run", "config", "summary"})


def login(*args, **kwargs) -> bool:  # noqa: ANN002, ANN003 - W&B's signature
    """``wandb.login``: nothing to log in to offline (a team server reads ``RLCOCKPIT_TOKEN``)."""
    return True


def watch(*args, **kwargs) -> None:  # noqa: ANN002, ANN003 - W&B's signature
    """``wandb.watch``: accepted; gradient histograms are not logged."""


def save(*args, **kwargs) -> None:  # noqa: ANN002, ANN003 - W&B's signature
    """``wandb.save``: accepted; files go in artifacts (``log_artifact``)."""


def sweep(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - see rlcockpit.sweeps.sweep
    """Register a sweep (as ``wandb.sweep``); see :func:`rlcockpit.sweeps.sweep`."""
    from rlcockpit.sweeps import sweep as _sweep

    return _sweep(*args, **kwargs)


def agent(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - see rlcockpit.sweeps.agent
    """Run sweep trials (as ``wandb.agent``); see :func:`rlcockpit.sweeps.agent`."""
    from rlcockpit.sweeps import agent as _agent

    return _agent(*args, **kwargs)


__all__ = ["AlertLevel", "Api", "Artifact", "Audio", "CommError", "Config", "Error", "Histogram", "Html", "Image",
           "Molecule", "Object3D", "Run", "Settings", "Table", "UsageError", "Video", "__version__", "agent", "alert",
           "define_metric", "errors", "finish", "init", "join", "log", "log_artifact", "log_model", "log_samples", "login",
           "mark_preempting", "plot", "plot_table", "require", "restore", "save", "setup", "sweep", "teardown",
           "termerror", "termlog", "termwarn", "unwatch", "use_artifact", "use_model", "util", "watch"]
