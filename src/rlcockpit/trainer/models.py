"""Loading the actor, reference and critic models, and the one forward pass everything uses.

Any Hugging Face causal LM from a local directory works; nothing is downloaded (the HF offline
switches are set here, so a wrong path fails at once instead of trying the network).  With LoRA
the reference policy is the same model with its adapters disabled, so no second copy is held.
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rlcockpit.algos import entropy_from_logits, logprobs_from_logits
from rlcockpit.trainer.config import Config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("trainer.device=cuda but torch sees no CUDA device")
    return torch.device(name)


def autocast_factory(dtype: str, device: torch.device) -> Callable[[], contextlib.AbstractContextManager]:
    """bf16 = autocast (on CPU it runs matmuls in bf16, 1.6-2.3x faster on recent Xeons)."""
    if dtype != "bf16":
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch.bfloat16)


def _check_local(path: str, what: str) -> None:
    if not Path(path).is_dir() or not (Path(path) / "config.json").is_file():
        raise FileNotFoundError(
            f"{what}={path!r} is not a local Hugging Face model directory (no config.json); "
            "rlcockpit never downloads weights: pass a local path, or 'tiny' for the built-in demo model"
        )


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_actor_and_ref(cfg: Config, path: str, device: torch.device) -> tuple[Any, Any | None]:
    """The trainable policy and a frozen reference (``None`` when LoRA: adapters off = reference)."""
    from transformers import AutoModelForCausalLM

    _check_local(path, "actor.model.path")
    m = cfg.actor.model
    # the trained weights stay fp32 (Adam on bf16 weights loses small updates); bf16 = autocast
    actor = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True).to(device)
    if m.enable_gradient_checkpointing:
        actor.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        actor.config.use_cache = False
    ref = None
    if m.lora_rank > 0:
        from peft import LoraConfig, get_peft_model

        if m.enable_gradient_checkpointing:
            actor.enable_input_require_grads()
        actor = get_peft_model(actor, LoraConfig(r=m.lora_rank, lora_alpha=m.lora_alpha,
                                                 target_modules=list(m.target_modules), task_type="CAUSAL_LM"))
    elif needs_reference(cfg):
        ref = copy.deepcopy(actor).eval()
        if m.dtype == "bf16" and device.type == "cuda":
            ref = ref.to(torch.bfloat16)  # the frozen reference needs no fp32 master copy
        for p in ref.parameters():
            p.requires_grad_(False)
    return actor, ref


def needs_reference(cfg: Config) -> bool:
    return cfg.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward


def load_critic(cfg: Config, actor_path: str, device: torch.device) -> Any:
    """A value head (token classification, 1 label) on ``critic.model_path`` or the actor's weights."""
    from transformers import AutoModelForTokenClassification

    path = cfg.critic.model_path or actor_path
    _check_local(path, "critic.model_path")
    critic = AutoModelForTokenClassification.from_pretrained(path, num_labels=1, local_files_only=True).to(device)
    if cfg.actor.model.enable_gradient_checkpointing:
        critic.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return critic


def reference_context(actor: Any, ref: Any | None) -> tuple[Any, contextlib.AbstractContextManager]:
    """(model, context) that computes the reference policy: the frozen copy, or adapters disabled."""
    if ref is not None:
        return ref, contextlib.nullcontext()
    return actor, actor.disable_adapter()


def forward_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                     *, temperature: float = 1.0, with_entropy: str = "none") -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (and entropy: ``none|nograd|grad``) of the last ``response_len`` tokens, (bs, T).

    Only the logits that predict response tokens are computed (``logits_to_keep``): with a large
    vocabulary that is most of the memory of the forward pass.
    """
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions,
                   use_cache=False, logits_to_keep=response_len + 1).logits[:, :-1]
    logits = logits.float()
    if temperature and temperature != 1.0:
        logits = logits / temperature  # score the distribution the rollout sampled from, as verl
    labels = input_ids[:, -response_len:]
    logp = logprobs_from_logits(logits, labels)
    ent = None
    if with_entropy == "grad":
        ent = entropy_from_logits(logits)
    elif with_entropy == "nograd":  # for the metric only: no graph through the (bs, T, V) softmax
        with torch.no_grad():
            ent = entropy_from_logits(logits.detach())
    return logp, ent


def forward_values(critic: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int) -> torch.Tensor:
    """Value of each response token's state, (bs, T): the value head at the position before it."""
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    out = critic(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, use_cache=False)
    return out.logits[:, -response_len - 1: -1, 0].float()
