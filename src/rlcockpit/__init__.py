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
from rlcockpit.tracking.api import Api  # noqa: E402
from rlcockpit.tracking.artifacts import Artifact  # noqa: E402
from rlcockpit.tracking.run import (  # noqa: E402
    Run,
    alert,
    finish,
    init,
    log,
    log_artifact,
    log_samples,
    use_artifact,
)


def sweep(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - see rlcockpit.sweeps.sweep
    """Register a sweep (as ``wandb.sweep``); see :func:`rlcockpit.sweeps.sweep`."""
    from rlcockpit.sweeps import sweep as _sweep

    return _sweep(*args, **kwargs)


def agent(*args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - see rlcockpit.sweeps.agent
    """Run sweep trials (as ``wandb.agent``); see :func:`rlcockpit.sweeps.agent`."""
    from rlcockpit.sweeps import agent as _agent

    return _agent(*args, **kwargs)


__all__ = ["Api", "Artifact", "Run", "__version__", "agent", "alert", "finish", "init", "log", "log_artifact",
           "log_samples", "sweep", "use_artifact"]
