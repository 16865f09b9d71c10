"""The run-level side of data-parallel training: who tracks, who checkpoints, who decides.

Rank 0 owns the run (tracking, store, health, checkpoints, console); the other ranks hold a
:class:`NullRun` and replay what rank 0's guardrails did (:class:`GuardrailMirror`), so every rank
keeps the same weights, config and stop decision.  Each rank's process figures reach rank 0's run as
``system/rank{r}/...`` (:func:`rank_metrics`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rlcockpit.trainer.config import set_key
from rlcockpit.trainer.distributed.group import Dist


def env_rank() -> int:
    """This process's rank as torchrun set it (0 outside torchrun), readable before the group exists."""
    return int(os.environ.get("RANK", "0") or 0) if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1 else 0


def quiet(*_: Any, **__: Any) -> None:
    """The console of ranks > 0: rank 0 speaks for the run."""


class _Summary(dict):
    pass


class NullStream:
    """The progress stream of ranks > 0."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


class NullRun:
    """What ranks > 0 log into: nothing (rank 0's run has the metrics; collectives keep them in step)."""

    guardrails = None

    def __init__(self, run_id: str, run_dir: str) -> None:
        self.id, self.dir = run_id, run_dir
        self.summary = _Summary()

    def __getattr__(self, name: str) -> Callable[..., None]:
        return quiet


class GuardrailMirror:
    """Records the guardrail actions taken on rank 0 (rollbacks, live config changes, stop) and replays
    them on the other ranks after each ``guard.poll`` (:meth:`sync`)."""

    def __init__(self, dist: Dist, cfg: Any, rollback: Callable[[int], int | None],
                 apply_live: Callable[[str, Any], None]) -> None:
        self.dist, self.cfg = dist, cfg
        self._rollback, self._apply_live = rollback, apply_live
        self.actions: list[tuple[Any, ...]] = []

    def rollback(self, before_step: int) -> int | None:
        self.actions.append(("rollback", before_step))
        return self._rollback(before_step)

    def apply_live(self, key: str, value: Any) -> None:
        self.actions.append(("set", key, value))  # the guardrail has already set it in rank 0's config
        self._apply_live(key, value)

    def sync(self, guard: Any) -> None:
        if not self.dist.enabled:
            return
        mine = (self.actions, guard.stop_requested, list(guard.handled)) if self.dist.is_main else None
        actions, stop, handled = self.dist.broadcast_object(mine)
        self.actions = []
        if self.dist.is_main:
            return
        for action in actions:
            if action[0] == "rollback":
                self._rollback(action[1])
            else:
                set_key(self.cfg, action[1], action[2])
                self._apply_live(action[1], action[2])
        guard.stop_requested, guard.handled = stop, handled


_PROC: Any = None


def _process_figures(step_s: float) -> dict[str, float]:
    global _PROC
    import psutil
    import torch

    if _PROC is None:
        _PROC = psutil.Process()
        _PROC.cpu_percent(None)
    out = {"proc_rss_gb": _PROC.memory_info().rss / 2**30, "proc_cpu_percent": _PROC.cpu_percent(None),
           "step_s": step_s}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda_allocated_gb"] = torch.cuda.memory_allocated() / 2**30
        out["cuda_max_allocated_gb"] = torch.cuda.max_memory_allocated() / 2**30
    return out


def rank_metrics(dist: Dist, step_s: float) -> dict[str, float]:
    """``system/rank{r}/{proc_rss_gb,proc_cpu_percent,step_s,cuda_*}`` of every rank (on rank 0; {} alone)."""
    if not dist.enabled:
        return {}
    t0 = time.perf_counter()
    parts = dist.all_gather_object(_process_figures(step_s))
    out = {f"system/rank{r}/{k}": float(v) for r, figures in enumerate(parts) for k, v in figures.items()}
    out["timing_s/rank_sync"] = time.perf_counter() - t0
    return out
