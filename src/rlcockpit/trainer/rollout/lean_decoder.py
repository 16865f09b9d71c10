"""The rollout's forward for Llama-family models (Qwen2, Qwen3, Llama, Mistral) without transformers' glue.

Why: a decode step of a small model is mostly overhead, not arithmetic.  Profiled at the realistic
benchmark's shape (13M Qwen2, 32 rows, one thread), the matmuls and attention were ~1 s of a 2 s
rollout; the rest went to what ``Qwen2Model.forward`` does around them on every token: building a 4-D
causal mask from the 2-D one (``create_causal_mask``), output-capture and kwarg decorators, cache
bookkeeping, repeating the grouped K/V heads for attention.  This module runs the same layers with the
same weights and the same submodules (the RMSNorms, the MLP, the rotary embedding are called as they
are), and does only the glue itself: one boolean mask per step, grouped-query attention as a
``(rows, kv_heads, group, head_dim)`` query against the unrepeated cache (exact: every query head of a
group reads the same K/V), the cache written in place (``rollout/kv_cache.py``).

Each rollout also lays the weights out for a decode step's few-row inputs (:class:`_Proj`, built per
``lean_forward`` call, i.e. per rollout, so they follow every update): q/k/v as one projection, and on a
CPU, while the copies fit ``TRANSPOSED_BYTES``, each fp32 matrix pre-packed for MKL's GEMM
(``mkl::_mkl_linear``, what inductor's CPU freezing uses) or, where torch has no MKL, stored transposed
and contiguous.  Why: a decode step multiplies 32 rows by every weight once, and for so few rows the
GEMM's own packing of ``W`` on each call is a large part of the work.  Packed once per rollout, the
13M Qwen2's 32-row products took 345 against 421 us (transposed copy) and 446 us (``F.linear``), and
150 against 240 us for 8 rows (1 thread, weights cold as in a decode step; the output is bit-identical
to ``x @ W^T`` there).  MKL's packed buffer is allocated at ~9 MB more than the matrix per weight, but
only the matrix's bytes are written, so resident memory grows as with the transposed copies.  RMSNorm
runs as one ``F.rms_norm`` call (the same formula: identical output, fewer Python-level ops) and the
rotary cos/sin as a table indexed by position.

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

from rlcockpit.trainer.update.fused_logprobs import has_forward_hooks

FAMILIES = frozenset({"qwen2", "qwen3", "llama", "mistral"})
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
TRANSPOSED_BYTES = 512 * 2**20  # per rollout, on CPU: transposed weight copies up to this size, else F.linear

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


def lean_forward(model: Any, rows: int = 32) -> LeanForward | None:
    """The rollout's forward for ``model`` (last-position logits), or None when only the model's own
    forward is exact for it (see the module docstring).  ``rows``: how many rows a decode step multiplies
    (the rollout's batch), which the packed weights are blocked for."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if model is not base or has_forward_hooks(model) or _unsupported(base) is not None:
        return None
    if getattr(base, "training", False):
        return None
    plan = _Plan(base, rows)
    return lambda ids, mask, pos, cache: _forward(plan, ids, mask, pos, cache)


def _mkl_packing() -> bool:
    """Whether this torch has MKL's pre-packed GEMM (x86 builds; not aarch64's)."""
    return torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")


class _Proj:
    """``x @ W^T + b`` for 2-D inputs.  ``layout``: ``"packed"`` (``W`` pre-packed for MKL; fp32 weights),
    ``"transposed"`` (``W^T`` held contiguous) or ``"model"`` (the model's own tensors, no copy); see the
    module docstring.  Inputs of another dtype than the weight (autocast) take ``F.linear``."""

    __slots__ = ("weight", "bias", "layout", "packed")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, layout: str, rows: int = 32) -> None:
        if layout == "packed" and weight.dtype != torch.float32:
            layout = "transposed"
        self.layout, self.bias, self.packed = layout, bias, None
        self.weight = weight.t().contiguous() if layout == "transposed" else weight
        if layout == "packed":  # blocked for ``rows`` (the decode step's); any other count still multiplies right
            self.packed = torch.ops.mkl._mkl_reorder_linear_weight(weight.detach(), rows)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout == "packed" and x.dtype == torch.float32:
            # the batch-size argument must be x's own rows: another value means "not packed for this"
            return torch.ops.mkl._mkl_linear(x, self.packed, self.weight, self.bias, x.size(0))
        if self.layout != "transposed":
            return F.linear(x, self.weight, self.bias)
        return torch.mm(x, self.weight) if self.bias is None else torch.addmm(self.bias, x, self.weight)


def _qkv(attn: Any, layout: str, rows: int) -> _Proj:
    """q, k and v as one projection (their weights stacked): one matmul per layer and step instead of three."""
    projs = [attn.q_proj, attn.k_proj, attn.v_proj]
    weight = torch.cat([p.weight for p in projs])
    if all(p.bias is None for p in projs):
        return _Proj(weight, None, layout, rows)
    bias = torch.cat([p.bias if p.bias is not None else p.weight.new_zeros(p.out_features) for p in projs])
    return _Proj(weight, bias, layout, rows)


def _norm(module: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """The family's RMSNorm (``weight * x / sqrt(mean(x^2) + eps)`` in fp32) as ``F.rms_norm`` when the input
    has the weight's dtype (identical output, one kernel); the module itself otherwise (autocast inputs)."""
    weight, eps = module.weight, module.variance_epsilon

    def norm(x: torch.Tensor) -> torch.Tensor:
        if x.dtype != weight.dtype:
            return module(x)
        return F.rms_norm(x, (x.size(-1),), weight, eps)

    return norm


class _Plan:
    """One rollout's view of the model: per layer its projections, norms and head layout; the rotary table."""

    def __init__(self, base: Any, rows: int = 32) -> None:
        decoder = base.model
        layers = decoder.layers[: base.config.num_hidden_layers]
        weights = [p for layer in layers for p in layer.parameters()] + [base.lm_head.weight]
        size = sum(p.numel() * p.element_size() for p in weights)
        t = "model"
        if base.lm_head.weight.device.type == "cpu" and size <= TRANSPOSED_BYTES:
            t = "packed" if _mkl_packing() else "transposed"
        self.layers = [{
            "qkv": _qkv(layer.self_attn, t, rows),
            "o": _Proj(layer.self_attn.o_proj.weight, layer.self_attn.o_proj.bias, t, rows),
            "gate": _Proj(layer.mlp.gate_proj.weight, layer.mlp.gate_proj.bias, t, rows),
            "up": _Proj(layer.mlp.up_proj.weight, layer.mlp.up_proj.bias, t, rows),
            "down": _Proj(layer.mlp.down_proj.weight, layer.mlp.down_proj.bias, t, rows),
            "norm1": _norm(layer.input_layernorm), "norm2": _norm(layer.post_attention_layernorm),
            "q_norm": getattr(layer.self_attn, "q_norm", None), "k_norm": getattr(layer.self_attn, "k_norm", None),
            "heads": (layer.self_attn.q_proj.out_features // layer.self_attn.head_dim,
                      layer.self_attn.k_proj.out_features // layer.self_attn.head_dim),
            "head_dim": layer.self_attn.head_dim, "scale": layer.self_attn.scaling,
        } for layer in layers]
        self.embed = decoder.embed_tokens
        self.final_norm = _norm(decoder.norm)
        self.head = _Proj(base.lm_head.weight, base.lm_head.bias, t, rows)
        self.rotary = decoder.rotary_emb
        # dynamic RoPE types recompute their frequencies from the positions each call: no table for them
        self.static_rope = getattr(self.rotary, "rope_type", "default") not in ("dynamic", "longrope")
        self.cos: torch.Tensor | None = None
        self.sin: torch.Tensor | None = None

    def rope(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin (B, 1, L, d) for ``position_ids`` (B, L): rows of a table grown on demand (the model's
        own rotary module computes each row, so the values are its own), or the module per call."""
        if not self.static_rope:
            cos, sin = self.rotary(x, position_ids)
            return cos.unsqueeze(1), sin.unsqueeze(1)
        need = int(position_ids.max()) + 1
        if self.cos is None or self.cos.size(0) < need or self.cos.dtype != x.dtype:
            n = max(need, 2 * (0 if self.cos is None else self.cos.size(0)), 256)
            cos, sin = self.rotary(x, torch.arange(n, device=x.device)[None])
            self.cos, self.sin = cos[0], sin[0]
        return self.cos[position_ids].unsqueeze(1), self.sin[position_ids].unsqueeze(1)


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


def _forward(plan: _Plan, ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
             cache: Any) -> torch.Tensor:
    B, L = ids.shape
    x = plan.embed(ids)
    cos, sin = plan.rope(x, position_ids)
    mask = step_mask(attention_mask, L, x.dtype)
    x = x.reshape(B * L, -1)  # 2-D through the projections: one mm each, no batched-matmul reshapes
    for i, p in enumerate(plan.layers):
        nq, nkv = p["heads"]
        qkv = p["qkv"](p["norm1"](x)).view(B, L, nq + 2 * nkv, p["head_dim"]).transpose(1, 2)
        if p["q_norm"] is not None:  # Qwen3: RMSNorm over each head before the rotation
            q, k = p["q_norm"](qkv[:, :nq]), p["k_norm"](qkv[:, nq:nq + nkv])  # over head_dim, any layout
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        else:  # queries and keys rotate together
            qk = _rope(qkv[:, :nq + nkv], cos, sin)
            q, k = qk[:, :nq], qk[:, nq:]
        k, v = cache.update(k, qkv[:, nq + nkv:], i)
        o = _attend(q, k, v, mask, p["scale"]).transpose(1, 2).reshape(B * L, -1)
        x = x + p["o"](o)
        h = p["norm2"](x)
        x = x + p["down"](F.silu(p["gate"](h)) * p["up"](h))
    return plan.head(plan.final_norm(x.view(B, L, -1)[:, -1]))
