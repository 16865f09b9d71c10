"""The module-level run API (``rlcockpit.log``, ``rlcockpit.finish`` …, as ``wandb.log``): each call goes to the
current run that :func:`rlcockpit.tracking.run.init` set.

Kept apart from ``run.py`` so the Run's own lifecycle stays readable there; the current run is read from that
module at call time (tests and ``reinit`` replace it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.tracking import run as run_module
from rlcockpit.tracking.run import Run


def _require_run() -> Run:
    current = run_module._current
    if current is None:
        raise RuntimeError("rlcockpit: no active run; call rlcockpit.init() first")
    return current


def log(metrics: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    """``run.log`` on the current run."""
    _require_run().log(metrics, step=step, commit=commit)


def log_samples(rows: Sequence[Mapping[str, Any]], step: int | None = None) -> None:
    _require_run().log_samples(rows, step=step)


def alert(title: str, text: str = "", level: Any = "warning", wait_duration: Any = None) -> None:
    """``run.alert`` on the current run (as ``wandb.alert``, ``AlertLevel`` and ``wait_duration`` included)."""
    _require_run().alert(title, text, level, wait_duration)


def log_artifact(artifact_or_path: Any, name: str | None = None, type: str | None = None,
                 aliases: Sequence[str] | None = None, metadata: Mapping[str, Any] | None = None) -> Any:
    """``run.log_artifact`` on the current run (as ``wandb.log_artifact``)."""
    return _require_run().log_artifact(artifact_or_path, name=name, type=type, aliases=aliases, metadata=metadata)


def use_artifact(ref: Any, type: str | None = None) -> Any:
    """``run.use_artifact`` on the current run (as ``wandb.use_artifact``)."""
    return _require_run().use_artifact(ref, type=type)


def finish(exit_code: int = 0, quiet: bool | None = None) -> None:
    """Finish the current run (no-op when there is none)."""
    current = run_module._current
    if current is not None:
        current.finish(exit_code)


def define_metric(name: str, step_metric: Any = None, step_sync: bool | None = None, hidden: bool | None = None,
                  summary: str | None = None, goal: str | None = None, overwrite: bool | None = None) -> Any:
    """``run.define_metric`` on the current run (as ``wandb.define_metric``)."""
    return _require_run().define_metric(name, step_metric, step_sync, hidden, summary, goal, overwrite)


def log_model(path: Any, name: str | None = None, aliases: Sequence[str] | None = None) -> Any:
    """``run.log_model`` on the current run (as ``wandb.log_model``)."""
    return _require_run().log_model(path, name=name, aliases=aliases)


def use_model(name: str) -> str:
    """``run.use_model`` on the current run (as ``wandb.use_model``)."""
    return _require_run().use_model(name)


def mark_preempting() -> None:
    """``wandb.mark_preempting()``: accepted (a resumed run continues at its last step + 1 anyway)."""


def unwatch(*args: Any, **kwargs: Any) -> None:
    """``wandb.unwatch``: ``watch`` logs nothing, so there is nothing to undo."""


def join(exit_code: int = 0, quiet: bool | None = None) -> None:
    """``wandb.join()``: W&B's old name of ``finish``."""
    finish(exit_code, quiet)
