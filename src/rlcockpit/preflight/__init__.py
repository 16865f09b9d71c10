"""Preflight: catch data, reward, memory, logging and batch-size problems before a long run starts.

``rlcockpit preflight --preset arith-grpo`` prints a pass/warn/fail table (``--json`` too) and exits
non-zero on any failure, so it can gate a job script; ``train`` runs it first
(``trainer.preflight=strict|warn|off``) through :func:`preflight_gate`.
"""

from rlcockpit.preflight.checks import (
    CheckResult,
    check_backup,
    check_batch,
    check_data,
    check_logging,
    load_cfg,
)
from rlcockpit.preflight.memory import ModelShape, TrainShape, estimate_memory
from rlcockpit.preflight.runner import (
    CHECKS,
    PreflightFailed,
    check_memory,
    preflight_gate,
    print_report,
    run_preflight,
)
from rlcockpit.preflight.signal import check_model, check_reward

__all__ = [
    "CHECKS", "CheckResult", "ModelShape", "PreflightFailed", "TrainShape", "check_backup", "check_batch",
    "check_data", "check_logging", "check_memory", "check_model", "check_reward", "estimate_memory", "load_cfg",
    "preflight_gate", "print_report", "run_preflight",
]
