"""The rollout's forward for Llama-family models (Qwen2, Qwen3, Llama, Mistral) without transformers' glue.

Why: a decode step of a small model is mostly overhead, not arithmetic.  Profiled at the realistic
benchmark's shape (13M Qwen2, 32 rows, one thread), the matmuls and attention were ~1 s of a 2 s
rollout; the rest went to what ``Qwen2Model.forward`` does around them on every token: building a 4-D
causal mask from the 2-D one (``create_causal_mask``), output-capture and kwarg decorators, cache
bookkeeping, repeating the grouped K/V heads for attention.  This module runs the same layers with the
same weights and the same submodules (the RMSNorms, the MLP, the rotary embedding are called as they
are), and does only the glue itself: one boolean mask per step, grouped-query attention as a
``(rows, kv_heads, group, head_dim)`` query against the unrepeated cache (exact: every query head of a
group reads the same K/V), the cache written in place (``kv_cache.py``).

The logits are those of the model's own forward up to float rounding (a test holds them to 1e-5);
anything this code does not know exactly (another family, sliding-window layers, hooks on the model, a
LoRA-wrapped projection) gets ``None`` from :func:`lean_forward` and the rollout calls the model.
Inference only: there is no dropout and no autograd graph here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from rlcockpit.trainer.fused_logprobs import has_forward_hooks

FAMILIES = frozenset({"qwen2", "qwen3", "llama", "mistral"})
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")

# (input_ids (B, L), attention_mask (B, S) over the cache + new tokens, position_ids (B, L), cache) -> logits (B, V)
LeanForward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any], torch.Tensor]


def _unsupported(base: Any) -> str | None:
    """Why the lean forward cannot stand in for ``base``'s own (None: it can)."""
    cfg = getattr(base, "config", None)
    if getattr(cfg, "model_type", None) not in FAMILIES:
        return f"model type {getattr(cfg, 'model_type', None)!r}"
    if any(t != "full_attention" for t in (getattr(cfg, "layer_types", None) or [])):
        return "sliding-window layers"
    if getattr(cfg, "model_type", None) == "mistral" and getattr(cfg, "sliding_window", None):
        return "sliding window"
    if getattr(cfg, "hidden_act", "silu") != "silu" or getattr(cfg, "pretraining_tp", 1) != 1:
        return "activation / tensor-parallel layout"
    decoder, head = getattr(base, "model", None), getattr(base, "lm_head", None)
    if decoder is None or type(head) is not torch.nn.Linear or not hasattr(decoder, "rotary_emb"):
        return "layout"
    for layer in decoder.layers:
        attn = getattr(layer, "self_attn", None)
        if attn is None or any(type(getattr(attn, p, None)) is not torch.nn.Linear for p in _PROJECTIONS):
            return "attention projections (adapters?)"
        if any(type(getattr(layer.mlp, p, None)) is not torch.nn.Linear for p in ("gate_proj", "up_proj", "down_proj")):
            return "MLP projections (adapters?)"
        if has_forward_hooks(layer) or has_forward_hooks(attn):
            return "hooks on a layer"
    if getattr(cfg, "_attn_implementation", "sdpa") not in ("sdpa", "eager", None):
        return f"attention implementation {cfg._attn_implementation!r}"
    return None


def lean_forward(model: Any) -> LeanForward | None:
    """The rollout's forward for ``model`` (last-position logits), or None when only the model's own
    forward is exact for it (see the module docstring)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if model is not base or has_forward_hooks(model) or _unsupported(base) is not None:
        return None
    if getattr(base, "training", False):
        return None
    return lambda ids, mask, pos, cache: _forward(base, ids, mask, pos, cache)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``apply_rotary_pos_emb`` for one tensor (B, H, L, d), cos/sin (B, 1, L, d)."""
    half = x.shape[-1] // 2
    return (x * cos) + (torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    """Attention (B, Hq, L, d) of queries over the cached keys/values (B, Hkv, S, d); ``mask`` (B, 1, L, S)."""
    B, Hq, L, d = q.shape
    group = Hq // k.size(1)
    mask = mask if mask.dtype == q.dtype else mask.to(q.dtype)  # autocast: queries in bf16
    if L == 1:  # decode: a group's query heads are one "sequence" of `group` queries against its K/V
        out = F.scaled_dot_product_attention(q.view(B, k.size(1), group, d), k, v, attn_mask=mask, scale=scale)
        return out.view(B, Hq, 1, d)
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)


def step_mask(attention_mask: torch.Tensor, new: int, dtype: torch.dtype) -> torch.Tensor:
    """(B, 1, new, S) additive mask (0 / -inf; sdpa's CPU kernels take it faster than a boolean one) for
    ``new`` tokens appended to a cache of ``S - new`` columns: causal, padding columns off, and each
    position always sees itself (a left-padding position would otherwise attend to nothing and turn into
    NaN, which its masked-out keys would then spread)."""
    S = attention_mask.size(1)
    keep = attention_mask.bool()[:, None, None, :]
    if new > 1:
        rows = torch.arange(S - new, S, device=attention_mask.device)[:, None]
        cols = torch.arange(S, device=attention_mask.device)[None, :]
        keep = (keep & (cols <= rows)) | (cols == rows)
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill_(~keep, float("-inf"))


def _forward(base: Any, ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
             cache: Any) -> torch.Tensor:
    decoder = base.model
    B, L = ids.shape
    x = decoder.embed_tokens(ids)
    cos, sin = decoder.rotary_emb(x, position_ids)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    mask = step_mask(attention_mask, L, x.dtype)
    for i, layer in enumerate(decoder.layers[: base.config.num_hidden_layers]):
        attn = layer.self_attn
        h = layer.input_layernorm(x)
        q = F.linear(h, attn.q_proj.weight, attn.q_proj.bias).view(B, L, -1, attn.head_dim)
        k = F.linear(h, attn.k_proj.weight, attn.k_proj.bias).view(B, L, -1, attn.head_dim)
        v = F.linear(h, attn.v_proj.weight, attn.v_proj.bias).view(B, L, -1, attn.head_dim).transpose(1, 2)
        if hasattr(attn, "q_norm"):  # Qwen3: RMSNorm over each head before the rotation
            q, k = attn.q_norm(q), attn.k_norm(k)
        q, k = _rope(q.transpose(1, 2), cos, sin), _rope(k.transpose(1, 2), cos, sin)
        k, v = cache.update(k, v, i)
        o = _attend(q, k, v, mask, attn.scaling).transpose(1, 2).reshape(B, L, -1)
        x = x + F.linear(o, attn.o_proj.weight, attn.o_proj.bias)
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    last = decoder.norm(x[:, -1])
    return F.linear(last, base.lm_head.weight, base.lm_head.bias)
