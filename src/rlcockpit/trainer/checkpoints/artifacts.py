"""Every trainer checkpoint is also a ``policy`` model artifact, and ``policy:best`` follows validation.

Called once per saved checkpoint. The actor folder (Hugging Face format) is registered with hard links into
the content-addressed store — no copy, no extra disk; rotation (``trainer.max_actor_ckpt_to_keep``) deletes the
run's older versions the same way it deletes the folders, except versions holding an alias such as ``best``.
``best`` moves only when the checkpoint's validation accuracy (``val_acc``, the step's mean of
``val-core/*/acc/mean@N``) beats the one recorded on the version that holds it — across runs, so after a
sweep ``rlcockpit generate --artifact policy:best`` loads the best checkpoint of every trial. A failure here
(disk full) is a warning and a run event; it never stops training.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger("rlcockpit")
ARTIFACT = "policy"
BEST_KEY = "val_acc"
_last: dict[str, Any] = {}  # run id -> the version its latest checkpoint became


def register_checkpoint(run: Any, st: Any, path: str | Path) -> Any:
    """Register ``path`` (a ``global_step_N`` folder) as the next ``policy`` version; None if it failed."""
    from rlcockpit.tracking.artifacts import log_checkpoint

    path = Path(path)
    actor = path / "actor" if (path / "actor").is_dir() else path
    val = getattr(st, "last_val", None)
    metrics = {BEST_KEY: val[1]} if val is not None and val[0] == st.step else {}
    try:
        version = log_checkpoint(run, actor, step=st.step, metrics=metrics, name=ARTIFACT, best_key=BEST_KEY,
                                 goal="max", link=True, keep=st.cfg.trainer.max_actor_ckpt_to_keep)
    except Exception as exc:  # noqa: BLE001 - the checkpoint itself is saved; only its registration failed
        _failed(run, st, path, exc)
        return None
    _last[run.id] = version
    return version


def note_validation(run: Any, st: Any) -> None:
    """A validation that ran after the checkpoint of the same step was saved (the last step): record its
    accuracy on that version and let it compete for ``best``."""
    from rlcockpit.tracking.artifacts import artifact_registry

    version, val = _last.get(run.id), getattr(st, "last_val", None)
    if version is None or val is None or version.metadata.get("step") != val[0] or BEST_KEY in version.metadata:
        return
    try:
        reg = artifact_registry(run)
        reg.update_metadata(version, {BEST_KEY: float(val[1])})
        if reg.set_alias_if_better(version, "best", BEST_KEY, maximize=True):
            run.log_event("artifact", {"op": "best", "artifact": version.qualified_name, BEST_KEY: float(val[1])})
    except Exception as exc:  # noqa: BLE001
        _failed(run, st, None, exc)


def _failed(run: Any, st: Any, path: Path | None, exc: Exception) -> None:
    logger.warning("rlcockpit: checkpoint %s was saved but its artifact could not be recorded: %s: %s", path or "",
                   type(exc).__name__, exc)
    run.log_event("artifact_failed", {"path": str(path or ""), "step": st.step, "error": f"{type(exc).__name__}: {exc}"})
