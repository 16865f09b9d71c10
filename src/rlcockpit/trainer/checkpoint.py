"""Checkpoints under ``trainer.default_local_dir/global_step_N`` (verl's layout).

A checkpoint holds everything needed to continue *exactly*: model (or LoRA adapter) weights,
optimizer and scheduler states, KL controller value, RNG states, the data loader's position and the
run id, so ``trainer.resume_mode=auto`` continues the same run in the same tracking record.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import torch

LATEST = "latest_checkpointed_iteration.txt"


def trainable_state(model: Any) -> dict[str, torch.Tensor]:
    """Full weights, or only the adapter weights for a peft model."""
    if hasattr(model, "peft_config"):
        from peft import get_peft_model_state_dict

        return get_peft_model_state_dict(model)
    return model.state_dict()


def load_trainable_state(model: Any, state: dict[str, torch.Tensor]) -> None:
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(model, state)
    else:
        model.load_state_dict(state)


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(root: str | Path, step: int, *, models: dict[str, Any], optimizers: dict[str, Any],
                    schedulers: dict[str, Any], trainer_state: dict[str, Any], keep: int | None = None,
                    protect: Collection[int] = ()) -> Path:
    """Write ``root/global_step_{step}``; ``trainer_state`` carries run id, loader position, KL coef...

    ``keep`` rotates out all but the newest ``keep`` checkpoints, except the steps in ``protect``: the
    guardrails' last known-healthy checkpoint must survive rotation, or a rollback would land on a
    checkpoint saved after the trouble began."""
    root = Path(root)
    path = root / f"global_step_{step}"
    tmp = root / f".tmp_global_step_{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, model in models.items():
        if model is not None:
            torch.save(trainable_state(model), tmp / f"{name}.pt")
    torch.save({
        "step": step,
        "optimizers": {k: v.state_dict() for k, v in optimizers.items() if v is not None},
        "schedulers": {k: v.state_dict() for k, v in schedulers.items() if v is not None},
        "rng": rng_state(),
        **trainer_state,
    }, tmp / "trainer_state.pt")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)  # a crash mid-save never leaves a half-written global_step_N
    (root / LATEST).write_text(str(step))
    if keep:
        keep_steps = set(protect)
        for old in list_checkpoints(root)[:-keep]:
            if checkpoint_step(old) not in keep_steps:
                shutil.rmtree(old, ignore_errors=True)
    return path


def checkpoint_step(path: str | Path) -> int:
    """``.../global_step_12`` -> 12."""
    return int(Path(path).name.rsplit("_", 1)[1])


def remove_after(root: str | Path, step: int) -> list[int]:
    """Delete the checkpoints saved after ``step`` (an abandoned trajectory after a rollback), so that
    ``resume_mode=auto`` can never continue from one of them; returns the removed steps."""
    removed = []
    for path in list_checkpoints(root):
        if checkpoint_step(path) > step:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(checkpoint_step(path))
    remaining = list_checkpoints(root)
    if removed and remaining:
        (Path(root) / LATEST).write_text(str(checkpoint_step(remaining[-1])))
    return removed


def list_checkpoints(root: str | Path) -> list[Path]:
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.glob("global_step_*") if p.is_dir() and (p / "trainer_state.pt").is_file()]
    return sorted(found, key=checkpoint_step)


def find_latest(root: str | Path) -> Path | None:
    ckpts = list_checkpoints(root)
    return ckpts[-1] if ckpts else None


def find_before(root: str | Path, step: int) -> Path | None:
    """The newest checkpoint strictly before ``step`` (the last healthy one for a rollback)."""
    ckpts = [p for p in list_checkpoints(root) if checkpoint_step(p) < step]
    return ckpts[-1] if ckpts else None


def load_checkpoint(path: str | Path, *, models: dict[str, Any], optimizers: dict[str, Any],
                    schedulers: dict[str, Any], restore_rng: bool = True) -> dict[str, Any]:
    """Restore in place; returns the trainer state dict (step, run_id, loader, kl_coef, ...)."""
    path = Path(path)
    if not (path / "trainer_state.pt").is_file():
        raise FileNotFoundError(f"not a checkpoint directory (no trainer_state.pt): {path}")
    for name, model in models.items():
        if model is not None:
            load_trainable_state(model, torch.load(path / f"{name}.pt", map_location="cpu", weights_only=True))
    state = torch.load(path / "trainer_state.pt", map_location="cpu", weights_only=False)
    for k, opt in optimizers.items():
        if opt is not None and k in state["optimizers"]:
            opt.load_state_dict(state["optimizers"][k])
    for k, sched in schedulers.items():
        if sched is not None and k in state["schedulers"]:
            sched.load_state_dict(state["schedulers"][k])
    if restore_rng:
        set_rng_state(state["rng"])
    return state
