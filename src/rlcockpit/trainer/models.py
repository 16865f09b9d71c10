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
from rlcockpit.trainer.update.fused_logprobs import output_head, token_logprobs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def resolve_device(name: str, log: Callable[[str], None] | None = print) -> torch.device:
    """``auto`` picks CUDA when present; ``cuda`` without a GPU (verl's YAML says cuda) runs on CPU, said once."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        if log is not None:
            log("[rlcockpit] trainer.device=cuda but torch sees no CUDA device: running on cpu")
        return torch.device("cpu")
    return torch.device(name)


def autocast_factory(dtype: str, device: torch.device) -> Callable[[], contextlib.AbstractContextManager]:
    """bf16 = autocast (on CPU it runs matmuls in bf16, 1.6-2.3x faster on recent Xeons)."""
    if dtype != "bf16":
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch.bfloat16)


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


def model_dir_problems(path: str, what: str = "actor_rollout_ref.model.path", *, tokenizer: bool = True) -> list[str]:
    """What is missing for ``path`` to load as a local HF model (config, weights, tokenizer); [] when fine."""
    p = Path(path).expanduser()
    if not p.is_dir():
        return [f"{what}={path!r} is not a local directory (rlcockpit never downloads weights: pass a local "
                "path, or 'tiny' for the built-in demo model)"]
    problems = []
    if not (p / "config.json").is_file():
        problems.append(f"{what}={path!r} has no config.json")
    if not any((p / f).is_file() for f in WEIGHT_FILES) and not (p / "adapter_config.json").is_file():
        problems.append(f"{what}={path!r} has no weights ({' / '.join(WEIGHT_FILES[::2])})")
    if tokenizer and not any((p / f).is_file() for f in TOKENIZER_FILES):
        problems.append(f"{what}={path!r} has no tokenizer (tokenizer.json / tokenizer_config.json)")
    return problems


def _check_local(path: str, what: str, *, tokenizer: bool = False) -> None:
    problems = model_dir_problems(path, what, tokenizer=tokenizer)
    if problems:
        raise FileNotFoundError("; ".join(problems))


def tokenizer_path(cfg: Config, model_path: str) -> str:
    return cfg.model.tokenizer_path or cfg.data.tokenizer or model_path


def load_tokenizer(path: str, *, trust_remote_code: bool = False, chat_template: str | None = None) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(Path(path).expanduser()), local_files_only=True,
                                        trust_remote_code=trust_remote_code)
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if chat_template:
        tok.chat_template = chat_template
    return tok


def import_external_lib(cfg: Config) -> None:
    """``actor_rollout_ref.model.external_lib``: a module that registers custom model classes (as verl)."""
    if cfg.model.external_lib:
        import importlib

        importlib.import_module(cfg.model.external_lib)


def load_causal_lm(cfg: Config, path: str, device: torch.device) -> Any:
    """The policy; a vision-language config (Qwen2-VL, Qwen2.5-VL) loads as transformers' image-text-to-text
    model (its causal LM with the vision tower)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    from rlcockpit.trainer.vision.model import vl_family

    m = cfg.model
    folder = Path(path).expanduser()
    vl = (folder / "config.json").is_file() and vl_family(AutoConfig.from_pretrained(
        str(folder), local_files_only=True, trust_remote_code=m.trust_remote_code)) is not None
    auto = AutoModelForImageTextToText if vl else AutoModelForCausalLM  # (a PEFT adapter folder has no config.json)
    # the trained weights stay fp32 (Adam on bf16 weights loses small updates); bf16 = autocast
    return auto.from_pretrained(str(folder), dtype=torch.float32, local_files_only=True,
                                trust_remote_code=m.trust_remote_code, **dict(m.override_config)).to(device)


def load_actor_and_ref(cfg: Config, path: str, device: torch.device) -> tuple[Any, Any | None]:
    """The trainable policy and a frozen reference (``None`` when LoRA: adapters off = reference)."""
    _check_local(path, "actor_rollout_ref.model.path")
    m = cfg.model
    actor = load_causal_lm(cfg, path, device)
    if m.enable_gradient_checkpointing:
        actor.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        actor.config.use_cache = False
    ref = None
    if m.lora_rank > 0 or m.lora_adapter_path:
        actor = wrap_lora(cfg, actor)
    elif needs_reference(cfg):
        ref = copy.deepcopy(actor).eval()
        if m.dtype == "bf16" and device.type == "cuda":
            ref = ref.to(torch.bfloat16)  # the frozen reference needs no fp32 master copy
        for p in ref.parameters():
            p.requires_grad_(False)
    return actor, ref


def wrap_lora(cfg: Config, model: Any) -> Any:
    """A peft LoRA model: a fresh adapter (``lora_rank``/``lora_alpha``/``target_modules``) or the saved one
    at ``lora_adapter_path``, trainable."""
    from peft import LoraConfig, PeftModel, get_peft_model

    m = cfg.model
    if m.enable_gradient_checkpointing:
        model.enable_input_require_grads()
    if m.lora_adapter_path:
        return PeftModel.from_pretrained(model, str(Path(m.lora_adapter_path).expanduser()), is_trainable=True)
    targets = m.target_modules if isinstance(m.target_modules, str) else list(m.target_modules)
    exclude = m.exclude_modules if isinstance(m.exclude_modules, (str, type(None))) else list(m.exclude_modules)
    return get_peft_model(model, LoraConfig(r=m.lora_rank, lora_alpha=m.lora_alpha, target_modules=targets,
                                            exclude_modules=exclude, task_type="CAUSAL_LM"))


def needs_reference(cfg: Config) -> bool:
    return cfg.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward


def load_critic(cfg: Config, actor_path: str, device: torch.device) -> Any:
    """A value head (token classification, 1 label) on ``critic.model.path`` or the actor's weights."""
    from transformers import AutoModelForTokenClassification

    path = cfg.critic.model.path or actor_path
    _check_local(path, "critic.model.path")
    critic = AutoModelForTokenClassification.from_pretrained(str(Path(path).expanduser()), num_labels=1,
                                                             local_files_only=True,
                                                             trust_remote_code=cfg.model.trust_remote_code).to(device)
    if cfg.model.enable_gradient_checkpointing:
        critic.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return critic


def reference_context(actor: Any, ref: Any | None) -> tuple[Any, contextlib.AbstractContextManager]:
    """(model, context) that computes the reference policy: the frozen copy, or adapters disabled."""
    if ref is not None:
        return ref, contextlib.nullcontext()
    return actor, actor.disable_adapter()


def forward_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                     *, temperature: float = 1.0, with_entropy: str = "none",
                     share_prefix: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs and entropy of the response tokens; see :func:`forward_policy`."""
    out = forward_policy(model, input_ids, attention_mask, response_len, temperature=temperature,
                         with_entropy=with_entropy, share_prefix=share_prefix)
    return out["log_probs"], out.get("entropy")


def forward_policy(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                   *, temperature: float = 1.0, with_entropy: str = "none", share_prefix: bool = True,
                   sum_pi_squared: bool = False, full_log_probs: bool = False) -> dict[str, torch.Tensor]:
    """Per-token log-probs (and entropy: ``none|nograd|grad``) of the last ``response_len`` tokens, (bs, T).

    Returns a dict: ``log_probs``, ``entropy`` (unless ``none``), ``sum_pi_squared`` and ``full_log_probs``
    (bs, T, V) when asked for (see ``score_logits``).

    Only the logits that predict response tokens are computed (``logits_to_keep``): with a large
    vocabulary that is most of the memory of the forward pass.

    With ``share_prefix`` (the default) the work GRPO-style batches repeat is done once: identical
    rows (a group's samples often agree) are scored once, and a prompt shared by several responses
    is run once, its KV cache (kept in the autograd graph) copied to its responses, which then run
    only their own tokens.  The result and its gradients are the same as the plain full-sequence
    forward's (up to float rounding): every row's log-probs are still a function of that row's tokens
    alone.  A model training with dropout takes the plain path (dropout would be drawn once per unique
    row instead of once per row); with gradient checkpointing only identical rows are shared.
    """
    extras = {"sum_pi_squared": sum_pi_squared, "full_log_probs": full_log_probs}
    # log-probs/entropy straight from the hidden states where the logits are a plain output layer
    # (update/fused_logprobs.py); the vocabulary-wide extras need the logits themselves
    head = None if (sum_pi_squared or full_log_probs) else output_head(model)
    if not share_prefix or dropout_active(model):
        states = _response_states(model, input_ids, attention_mask, response_len, head)
        return _score_states(states, head, input_ids[:, -response_len:], temperature, with_entropy, extras)
    uniq_ids, uniq_mask, row_of = dedupe_rows(input_ids, attention_mask)
    states = None
    # gradient checkpointing turns the KV cache off while training
    if input_ids.size(1) > response_len and not (model.training and checkpointing_on(model)):
        states = _shared_prefix_states(model, uniq_ids, uniq_mask, response_len, head)
    if states is None:
        states = _response_states(model, uniq_ids, uniq_mask, response_len, head)
    out = _score_states(states, head, uniq_ids[:, -response_len:], temperature, with_entropy, extras)
    return out if row_of is None else {k: v[row_of] for k, v in out.items()}


def _score_states(states: torch.Tensor, head: Any, labels: torch.Tensor, temperature: float, with_entropy: str,
                  extras: dict[str, bool]) -> dict[str, torch.Tensor]:
    """Score hidden states through the fused output layer (``head`` = (decoder, lm_head)) or logits."""
    if head is None:
        return score_logits(states, labels, temperature, with_entropy, **extras)
    return token_logprobs(states, head[1], labels, temperature=temperature, with_entropy=with_entropy)


def _forward(model: Any, head: Any, keep: int, **kwargs: Any) -> torch.Tensor:
    """The last ``keep`` positions' logits, or their hidden states when ``head`` (decoder, lm_head) is set."""
    if head is None:
        return model(logits_to_keep=keep, **kwargs).logits
    return head[0](**kwargs).last_hidden_state[:, -keep:]


def _response_states(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                     head: Any = None) -> torch.Tensor:
    """The plain path: one forward over whole rows; the logits (or hidden states, with ``head``) that
    predict the response tokens, (bs, T, V|H)."""
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return _forward(model, head, response_len + 1, input_ids=input_ids, attention_mask=attention_mask,
                    position_ids=positions, use_cache=False)[:, :-1]


def score_logits(logits: torch.Tensor, labels: torch.Tensor, temperature: float, with_entropy: str, *,
           sum_pi_squared: bool = False, full_log_probs: bool = False) -> dict[str, torch.Tensor]:
    """``log_probs`` (bs, T) and, on request, ``entropy``, ``sum_pi_squared`` (bs, T; sum_v pi(v)^2, no grad, for
    the optimal-token-baseline estimators) and ``full_log_probs`` (bs, T, V; log_softmax, for the exact KL)."""
    logits = logits.float()
    if temperature and temperature != 1.0:
        logits = logits / temperature  # score the distribution the rollout sampled from, as verl
    out = {"log_probs": logprobs_from_logits(logits, labels)}
    if with_entropy == "grad":
        out["entropy"] = entropy_from_logits(logits)
    elif with_entropy == "nograd":  # for the metric only: no graph through the (bs, T, V) softmax
        with torch.no_grad():
            out["entropy"] = entropy_from_logits(logits.detach())
    if sum_pi_squared:
        with torch.no_grad():
            out["sum_pi_squared"] = torch.softmax(logits.detach(), dim=-1).square().sum(-1)
    if full_log_probs:
        out["full_log_probs"] = torch.log_softmax(logits, dim=-1)
    return out


def dedupe_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(unique ids, their masks, row -> unique index or None when every row is distinct)."""
    key = torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=1)
    uniq, row_of = torch.unique(key, dim=0, return_inverse=True)
    if uniq.size(0) == key.size(0):
        return input_ids, attention_mask, None
    width = input_ids.size(1)
    return uniq[:, :width], uniq[:, width:].to(attention_mask.dtype), row_of


def _shared_prefix_states(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                          head: Any = None) -> torch.Tensor | None:
    """Response logits (hidden states with ``head``) computed with each distinct prompt run once; None when
    that saves < 10% of tokens."""
    from rlcockpit.trainer.rollout.engine import cache_kwarg, cache_kwarg_of

    prompt_len = input_ids.size(1) - response_len
    prompts, prompt_of = torch.unique(torch.cat([input_ids[:, :prompt_len], attention_mask[:, :prompt_len].to(
        input_ids.dtype)], dim=1), dim=0, return_inverse=True)
    rows = input_ids.size(0)
    shared_tokens = prompts.size(0) * prompt_len + rows * (response_len - 1)
    if prompts.size(0) == rows or shared_tokens > 0.9 * rows * (prompt_len + response_len):
        return None  # too little shared to pay for a second forward call
    from transformers import DynamicCache

    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    p_ids, p_mask = prompts[:, :prompt_len], prompts[:, prompt_len:].to(attention_mask.dtype)
    p_pos = (p_mask.cumsum(-1) - 1).clamp(min=0)
    cache = DynamicCache()
    ck = {(cache_kwarg(model) if head is None else cache_kwarg_of(type(head[0]))): cache}
    # the logits at the last prompt position predict the first response token
    first = _forward(model, head, 1, input_ids=p_ids, attention_mask=p_mask, position_ids=p_pos, use_cache=True,
                     **ck)[:, -1:][prompt_of]
    if response_len == 1:
        return first
    cache.batch_select_indices(prompt_of)  # differentiable gather: gradients flow back into the prompt pass
    # feed response tokens 0..T-2: their logits predict tokens 1..T-1 (the last token predicts nothing)
    end = prompt_len + response_len - 1
    rest = _forward(model, head, response_len - 1, input_ids=input_ids[:, prompt_len:end],
                    attention_mask=attention_mask[:, :end], position_ids=positions[:, prompt_len:end], use_cache=True,
                    **ck)
    return torch.cat([first, rest], dim=1)


def checkpointing_on(model: Any) -> bool:
    """Activation (gradient) checkpointing is on for ``model`` (or its PEFT base)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    name = "is_activation_checkpointing" if hasattr(type(base), "is_activation_checkpointing") else "is_gradient_checkpointing"
    return bool(getattr(base, name, False))


def dropout_active(model: Any) -> bool:
    """Scoring a repeated row once is exact only when the forward pass is deterministic."""
    if not model.training:
        return False
    cfg = getattr(model, "config", None)
    for key in ("attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "attn_pdrop", "embd_pdrop",
                "hidden_dropout_prob", "attention_probs_dropout_prob"):
        value = getattr(cfg, key, 0)
        if isinstance(value, (int, float)) and value > 0:
            return True
    return any(isinstance(m, torch.nn.Dropout) and m.p > 0 for m in model.modules())


def forward_values(critic: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int) -> torch.Tensor:
    """Value of each response token's state, (bs, T): the value head at the position before it.

    Identical rows are scored once (unless dropout is active), as in :func:`forward_logprobs`.
    """
    row_of = None
    if not dropout_active(critic):
        input_ids, attention_mask, row_of = dedupe_rows(input_ids, attention_mask)
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    out = critic(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, use_cache=False)
    values = out.logits[:, -response_len - 1: -1, 0].float()
    return values if row_of is None else values[row_of]
