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
from rlcockpit.tracking.run import Run, alert, finish, init, log, log_samples  # noqa: E402

__all__ = ["Api", "Run", "__version__", "alert", "finish", "init", "log", "log_samples"]
