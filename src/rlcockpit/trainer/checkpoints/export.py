"""``rlcockpit export-model CHECKPOINT OUT [--merge-lora]``: a trained policy as a plain Hugging Face folder.

CHECKPOINT is a ``global_step_N`` folder, its ``actor`` folder, or a ``trainer.default_local_dir`` (the
latest checkpoint there). A full-weight actor is copied; a LoRA adapter is copied as a peft adapter (its
``adapter_config.json`` names the local base model, so ``AutoModelForCausalLM.from_pretrained(OUT)`` loads
base + adapter) or, with ``--merge-lora``, merged into the base weights (no peft needed to load it).
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any


def actor_dir(checkpoint: str | Path) -> Path:
    """The actor folder inside whatever the user pointed at."""
    from rlcockpit.trainer.checkpoints import checkpoint as ckpt

    p = Path(checkpoint).expanduser()
    if (p / "config.json").is_file() or (p / "adapter_config.json").is_file():
        return p
    if (p / "actor").is_dir():
        return p / "actor"
    latest = ckpt.find_latest(p)
    if latest is not None and (latest / "actor").is_dir():
        return latest / "actor"
    raise FileNotFoundError(f"{p}: not a checkpoint (expected global_step_N/actor, an actor folder, or a "
                            "trainer.default_local_dir with checkpoints)")


def export_model(checkpoint: str | Path, out: str | Path, *, merge_lora: bool = False,
                 base: str | None = None) -> dict[str, Any]:
    """Write the policy in ``checkpoint`` to ``out``; returns what was written (``kind``: full | adapter | merged)."""
    src, out = actor_dir(checkpoint), Path(out)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"export-model: {out} exists and is not empty")
    adapter = (src / "adapter_config.json").is_file()
    if not adapter or not merge_lora:
        shutil.copytree(src, out, dirs_exist_ok=True)
        return {"kind": "adapter" if adapter else "full", "source": str(src), "out": str(out)}
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base_path = base or json.loads((src / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base_path or not Path(base_path).expanduser().is_dir():
        raise FileNotFoundError(f"the adapter's base model {base_path!r} is not a local folder: pass --base PATH")
    model = AutoModelForCausalLM.from_pretrained(str(Path(base_path).expanduser()), dtype=torch.float32,
                                                 local_files_only=True)
    merged = PeftModel.from_pretrained(model, str(src)).merge_and_unload()
    merged.save_pretrained(out, safe_serialization=True)
    tok_src = src if (src / "tokenizer_config.json").is_file() else Path(base_path).expanduser()
    AutoTokenizer.from_pretrained(str(tok_src), local_files_only=True).save_pretrained(out)
    return {"kind": "merged", "source": str(src), "base": str(base_path), "out": str(out)}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("export-model", help="write a checkpoint's policy as a Hugging Face model folder",
                              description="Export the actor of a checkpoint (global_step_N, its actor folder, or a "
                                          "checkpoint directory: the latest) so AutoModelForCausalLM.from_pretrained "
                                          "loads it.")
    p.add_argument("checkpoint", metavar="CHECKPOINT")
    p.add_argument("out", metavar="OUT", help="output folder (must not exist or be empty)")
    p.add_argument("--merge-lora", action="store_true", help="merge a LoRA adapter into its base model")
    p.add_argument("--base", help="base model folder for --merge-lora (default: the adapter's base_model_name_or_path)")
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    info = export_model(args.checkpoint, args.out, merge_lora=args.merge_lora, base=args.base)
    what = {"full": "full model", "adapter": "LoRA adapter (base: see adapter_config.json; --merge-lora merges it)",
            "merged": f"LoRA merged into {info.get('base')}"}[info["kind"]]
    print(f"exported {info['source']} -> {info['out']}: {what}\n"
          f"load it: AutoModelForCausalLM.from_pretrained({info['out']!r})")
    return 0
