"""rlcockpit: RL post-training for LLMs with a cockpit built in.

Tracking API (wandb-shaped)::

    import rlcockpit
    run = rlcockpit.init(project="arith", name="grpo-1", config={"lr": 1e-5})
    run.log({"actor/pg_loss": 0.1}, step=1)
    run.finish()
"""

from __future__ import annotations

__version__ = "0.1.0"

from rlcockpit import defaults  # noqa: E402, F401 - registers the health observer and the alerts hook
from rlcockpit.tracking import plot  # noqa: E402 - wandb.plot.line(...) and the other preset charts
from rlcockpit.tracking.api import Api  # noqa: E402
from rlcockpit.tracking.artifacts import Artifact  # noqa: E402
from rlcockpit.tracking.media import Audio, Histogram, Html, Image, Molecule, Object3D, Table, Video  # noqa: E402
from rlcockpit.tracking.module_api import (  # noqa: E402
    alert,
    define_metric,
    finish,
    join,
    log,
    log_artifact,
    log_model,
    log_samples,
    mark_preempting,
    unwatch,
    use_artifact,
    use_model,
)
from rlcockpit.tracking.plot import plot_table  # noqa: E402
from rlcockpit.tracking.run import Run, init  # noqa: E402
from rlcockpit.tracking.wandb_compat import Config  # noqa: E402
from rlcockpit.tracking.wandb_env import (  # noqa: E402 - the rest of W&B's module namespace
    AlertLevel,
    CommError,
    Error,
    Settings,
    UsageError,
    errors,
    require,
    restore,
    setup,
    teardown,
    termerror,
    termlog,
    termwarn,
    util,
)


def __getattr__(name: str):  # noqa: ANN202 - PEP 562: W&B's module attributes, read when asked
    """``rlcockpit.run`` (the current run or ``None``), ``rlcockpit.config`` and ``rlcockpit.summary`` (the
    current run's), as ``wandb.run`` / ``wandb.config`` / ``wandb.summary``."""
    from rlcockpit.tracking import run as _run_module

    current = _run_module._current
    if name == "run":
        return current
    if name == "config":
        return current.config if current is not None else Config()
    if name == "summary":
        return current.summary if current is not None else {}
    raise AttributeError(f"module 'rlcockpit' has no attribute {name!r}")


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
