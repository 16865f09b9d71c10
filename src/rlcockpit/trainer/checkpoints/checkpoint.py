"""Checkpoints in verl's layout, usable outside rlcockpit.

    <trainer.default_local_dir>/
      global_step_20/
        actor/              Hugging Face format: config.json, model.safetensors, tokenizer files
                            (LoRA: a peft adapter, adapter_config.json + adapter_model.safetensors)
        critic/             the value model (GAE), same format
        trainer_state.pt    optimizer and scheduler states, RNG, data position, KL coefficient, run id
        meta.json           {"step", "run_id"}: which run wrote it
      latest_checkpointed_iteration.txt

``AutoModelForCausalLM.from_pretrained("global_step_20/actor")`` loads the policy directly;
``rlcockpit export-model`` merges a LoRA adapter into its base model. A checkpoint is written to a
temporary folder and renamed, so a crash never leaves a half-written ``global_step_N``; rotation
(``trainer.max_actor_ckpt_to_keep``) only ever removes checkpoints of the run that is saving.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import torch

LATEST = "latest_checkpointed_iteration.txt"
STATE = "trainer_state.pt"
META = "meta.json"


def is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config")


def save_model(model: Any, out: Path, tokenizer: Any = None) -> None:
    """``save_pretrained`` (peft: the adapter only) plus the tokenizer, so the folder loads on its own; a plain
    torch module (no ``save_pretrained``) gets its state dict as ``model.safetensors``."""
    if not hasattr(model, "save_pretrained"):
        from safetensors.torch import save_file

        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, out / "model.safetensors")
        return
    model.save_pretrained(out, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(out)


def load_model_weights(model: Any, folder: Path) -> None:
    """Load a folder written by :func:`save_model` into ``model`` in place (optimizers keep their params)."""
    from safetensors.torch import load_file

    if is_peft(model):
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(model, load_file(folder / "adapter_model.safetensors"))
        return
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors weights in {folder}")
    state: dict[str, torch.Tensor] = {}
    for f in files:
        state.update(load_file(f))
    missing, unexpected = model.load_state_dict(state, strict=False)
    loaded = {p.data_ptr() for name, p in model.state_dict().items() if name in state}
    params = model.state_dict()
    untied = [k for k in missing if params[k].data_ptr() not in loaded]  # tied weights are saved once
    if untied or unexpected:
        raise RuntimeError(f"checkpoint {folder} does not match the model: missing {untied[:5]}, "
                           f"unexpected {list(unexpected)[:5]}")


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
                    schedulers: dict[str, Any], trainer_state: dict[str, Any], tokenizer: Any = None,
                    keep: int | None = None, protect: Collection[int] = ()) -> Path:
    """Write ``root/global_step_{step}``; ``trainer_state`` carries run id, loader position, KL coef...

    ``keep`` rotates out all but the newest ``keep`` checkpoints *of this run* (``trainer_state["run_id"]``),
    except the steps in ``protect``: the guardrails' last known-healthy checkpoint must survive rotation,
    or a rollback would land on a checkpoint saved after the trouble began."""
    root = Path(root)
    run_id = trainer_state.get("run_id")
    path = root / f"global_step_{step}"
    tmp = root / f".tmp_global_step_{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, model in models.items():
        if model is not None:
            save_model(model, tmp / name, tokenizer if name == "actor" else None)
    torch.save({
        "step": step,
        "optimizers": {k: v.state_dict() for k, v in optimizers.items() if v is not None},
        "schedulers": {k: v.state_dict() for k, v in schedulers.items() if v is not None},
        "rng": rng_state(),
        **trainer_state,
    }, tmp / STATE)
    (tmp / META).write_text(json.dumps({"step": step, "run_id": run_id,
                                        "lora": bool(models.get("actor") is not None and is_peft(models["actor"]))}))
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)  # a crash mid-save never leaves a half-written global_step_N
    (root / LATEST).write_text(str(step))
    if keep:
        keep_steps = set(protect)
        for old in list_checkpoints(root, run_id=run_id)[:-keep]:
            if checkpoint_step(old) not in keep_steps:
                shutil.rmtree(old, ignore_errors=True)
    return path


def checkpoint_step(path: str | Path) -> int:
    """``.../global_step_12`` -> 12."""
    return int(Path(path).name.rsplit("_", 1)[1])


def checkpoint_run_id(path: str | Path) -> str | None:
    meta = Path(path) / META
    try:
        return json.loads(meta.read_text()).get("run_id")
    except (OSError, ValueError):
        return None


def remove_after(root: str | Path, step: int, run_id: str | None = None) -> list[int]:
    """Delete this run's checkpoints saved after ``step`` (an abandoned trajectory after a rollback), so that
    ``resume_mode=auto`` can never continue from one of them; returns the removed steps."""
    removed = []
    for path in list_checkpoints(root, run_id=run_id):
        if checkpoint_step(path) > step:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(checkpoint_step(path))
    remaining = list_checkpoints(root)
    if removed and remaining:
        (Path(root) / LATEST).write_text(str(checkpoint_step(remaining[-1])))
    return removed


def list_checkpoints(root: str | Path, run_id: str | None = None) -> list[Path]:
    """Complete ``global_step_N`` folders, oldest first (only those written by ``run_id`` when given)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.glob("global_step_*") if p.is_dir() and (p / STATE).is_file()]
    if run_id is not None:
        found = [p for p in found if checkpoint_run_id(p) in (run_id, None)]
    return sorted(found, key=checkpoint_step)


def is_verl_checkpoint(path: str | Path) -> bool:
    """A ``global_step_N`` written by verl itself (FSDP shards ``actor/model_world_size_W_rank_R.pt``, or
    Megatron's ``actor/dist_ckpt``), which rlcockpit cannot continue from."""
    actor = Path(path) / "actor"
    return not (Path(path) / STATE).is_file() and actor.is_dir() and (
        any(actor.glob("model_world_size_*_rank_*.pt")) or (actor / "dist_ckpt").is_dir())


class ForeignCheckpointError(ValueError):
    """``resume_mode=auto`` found verl's own checkpoint: continuing it would silently be a fresh run."""


def find_latest(root: str | Path) -> Path | None:
    """What verl's ``resume_mode=auto`` picks: the step in ``latest_checkpointed_iteration.txt`` when that
    checkpoint is complete, else the newest complete one. A latest checkpoint written by verl itself raises
    :class:`ForeignCheckpointError` saying what to do instead of quietly starting from step 0."""
    root = Path(root)
    try:
        step = int((root / LATEST).read_text().strip())
        named = root / f"global_step_{step}"
        if (named / STATE).is_file():
            return named
        if is_verl_checkpoint(named):
            hf = named / "actor" / "huggingface"
            raise ForeignCheckpointError(
                f"trainer.resume_mode=auto: {named} is a checkpoint verl wrote (sharded model and optimizer "
                "states): rlcockpit cannot continue it. Start from its weights with actor_rollout_ref.model.path="
                f"{hf if (hf / 'config.json').is_file() else named / 'actor'} (a Hugging Face folder, e.g. verl's "
                "actor/huggingface with checkpoint.contents incl. hf_model, or verl's model_merger output), "
                "a new trainer.default_local_dir and trainer.resume_mode=disable")
    except (OSError, ValueError) as exc:
        if isinstance(exc, ForeignCheckpointError):
            raise
    ckpts = list_checkpoints(root)
    return ckpts[-1] if ckpts else None


def find_before(root: str | Path, step: int, run_id: str | None = None) -> Path | None:
    """The newest checkpoint strictly before ``step`` (the last healthy one for a rollback)."""
    ckpts = [p for p in list_checkpoints(root, run_id=run_id) if checkpoint_step(p) < step]
    return ckpts[-1] if ckpts else None


def load_checkpoint(path: str | Path, *, models: dict[str, Any], optimizers: dict[str, Any],
                    schedulers: dict[str, Any], restore_rng: bool = True) -> dict[str, Any]:
    """Restore in place; returns the trainer state dict (step, run_id, loader, kl_coef, ...)."""
    path = Path(path)
    if not (path / STATE).is_file():
        raise FileNotFoundError(f"not a checkpoint directory (no {STATE}): {path}")
    for name, model in models.items():
        if model is not None:
            load_model_weights(model, path / name)
    state = torch.load(path / STATE, map_location="cpu", weights_only=False)
    for k, opt in optimizers.items():
        if opt is not None and k in state["optimizers"]:
            opt.load_state_dict(state["optimizers"][k])
    for k, sched in schedulers.items():
        if sched is not None and k in state["schedulers"]:
            sched.load_state_dict(state["schedulers"][k])
    if restore_rng:
        set_rng_state(state["rng"])
    return state


def claim_dir(root: str | Path, run_id: str, *, resuming: bool) -> Path:
    """The checkpoint folder this run may write: ``root``, unless ``root`` already holds checkpoints of
    another run and this one is not resuming it; then ``<root>-<run_id>`` (two runs with the same
    project/name never overwrite or rotate each other's checkpoints)."""
    root = Path(root)
    others = [p for p in list_checkpoints(root) if checkpoint_run_id(p) != run_id]
    others += [p for p in root.glob("global_step_*") if is_verl_checkpoint(p)]  # never write into verl's folder
    if resuming or not others:
        return root
    return root.with_name(f"{root.name}-{run_id}")
