"""Token log-probs (and entropy) straight from the last hidden states, without holding the logits.

Why: scoring a batch needs ``log softmax(h W^T / temperature)`` at one token per position, but the plain
path materialises the logits of the whole vocabulary for every response token, (bs, T, V) in fp32, plus
4-5 temporaries of that size (max shift, exp, softmax, the entropy's product, the gradient) - 67 MB each at
the realistic benchmark's shape (32 x 64 tokens, 8k vocabulary), 1.2 GB each for 2k tokens of Qwen2.5's
152k vocabulary.  On a CPU each such tensor is a fresh ``mmap`` whose pages fault in one by one
(measured ~50 ms per 67 MB tensor), and on any device they are the largest block of the update's memory.
verl calls this a fused linear-cross-entropy kernel (``use_fused_kernels``); TRL and Liger compute it in
chunks too.

Here the output layer runs over row chunks whose logits fit a bounded buffer: the forward keeps only each
row's log-sum-exp, the backward recomputes the chunk's logits and forms the gradient
``(onehot - softmax) / temperature`` there.  Same function, same gradient (up to float rounding: one
extra output-layer matmul per chunk in the backward is the price; while the whole log-softmax fits
``SAVE_BYTES`` the forward keeps it instead and the backward has no extra matmul).  The entropy (verl's ``actor/entropy``)
comes from the same pass; its gradient (``entropy_coeff != 0``) is ``-p (log p + H)``.

Only for model families whose logits are exactly ``lm_head(hidden)`` (no soft-capping or scaling):
:func:`output_head` returns None for anything else, and the caller keeps the plain path.
"""

from __future__ import annotations

from typing import Any

import torch

# families whose CausalLM forward is `logits = lm_head(decoder(...).last_hidden_state)`, nothing after it
FUSED_MODEL_TYPES = frozenset({"qwen2", "qwen3", "llama", "mistral"})
CHUNK_BYTES = 16 * 2**20  # fp32 logits per chunk buffer
# up to this size the forward keeps the log-softmax for the backward instead of recomputing the logits
# (one output-layer matmul less: ~4% of the realistic benchmark's update); beyond it, memory wins
SAVE_BYTES = 128 * 2**20
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 128, 1024


def has_forward_hooks(module: Any) -> bool:
    """Whether calling around ``module``'s own forward would skip hooks someone put on it (FSDP2's
    unshard, a user's or a profiler's hook): those models keep the plain path."""
    return bool(getattr(module, "_forward_hooks", None) or getattr(module, "_forward_pre_hooks", None))


def output_head(model: Any) -> tuple[Any, torch.nn.Linear] | None:
    """(decoder, lm_head) when ``model``'s logits are ``lm_head(decoder(...).last_hidden_state)``; else None
    (also when hooks sit on the model's forward, which the fused path would bypass)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if has_forward_hooks(model) or has_forward_hooks(base):
        return None
    cfg = getattr(base, "config", None)
    if getattr(cfg, "model_type", None) not in FUSED_MODEL_TYPES:
        return None
    for key in ("final_logit_softcapping", "logit_scale", "logits_scaling"):
        if getattr(cfg, key, None) not in (None, 1, 1.0):
            return None
    head = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    decoder = getattr(base, "model", None)
    if type(head) is not torch.nn.Linear or decoder is None:  # a LoRA-wrapped head is not a plain Linear
        return None
    return decoder, head


def chunk_rows(vocab: int, rows: int) -> int:
    """Rows per chunk: logits of about ``CHUNK_BYTES``, at least ``MIN_CHUNK_ROWS`` so a big vocabulary's
    weight is still read in few passes."""
    return max(1, min(rows, max(MIN_CHUNK_ROWS, min(MAX_CHUNK_ROWS, CHUNK_BYTES // (4 * max(1, vocab))))))


def _logits(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, temperature: float) -> torch.Tensor:
    """fp32 logits of one chunk, divided by the temperature (h and w already in the matmul dtype)."""
    z = torch.mm(h, w.t())
    z = z.float() if z.dtype != torch.float32 else z
    if b is not None:
        z += b.float()
    if temperature != 1.0:
        z /= temperature
    return z


class _TokenLogProbs(torch.autograd.Function):
    """(hidden (N, H), weight (V, H), bias, labels (N,)) -> log p(label) (N,), entropy (N,) or empty."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, labels: torch.Tensor,
                temperature: float, entropy: str, mm_dtype: torch.dtype, backward: bool
                ) -> tuple[torch.Tensor, torch.Tensor]:
        n = hidden.size(0)
        h, w = hidden.to(mm_dtype), weight.to(mm_dtype)
        logp = hidden.new_empty(n, dtype=torch.float32)
        lse = torch.empty_like(logp)
        ent = torch.empty_like(logp) if entropy != "none" else logp.new_empty(0)
        step = chunk_rows(weight.size(0), n)
        keep = backward and n * weight.size(0) * 4 <= SAVE_BYTES
        logq_all = hidden.new_empty((n, weight.size(0)), dtype=torch.float32) if keep else lse.new_empty(0)
        for s in range(0, n, step):
            z = _logits(h[s:s + step], w, bias, temperature)
            m = z.amax(-1, keepdim=True)
            z -= m
            ez = torch.exp(z)
            se = ez.sum(-1)
            log_se = se.log()
            logp[s:s + step] = z.gather(-1, labels[s:s + step, None]).squeeze(-1) - log_se
            lse[s:s + step] = log_se + m.squeeze(-1)
            if entropy != "none":
                ent[s:s + step] = log_se - ez.mul_(z).sum(-1) / se
            if keep:
                torch.sub(z, log_se[:, None], out=logq_all[s:s + step])
        ctx.save_for_backward(hidden, weight, bias, labels, lse, ent if entropy == "grad" else ent.new_empty(0),
                              logq_all)
        ctx.temperature, ctx.mm_dtype, ctx.entropy = temperature, mm_dtype, entropy
        if entropy != "grad":
            ctx.mark_non_differentiable(ent)
        return logp, ent

    @staticmethod
    def backward(ctx: Any, g_logp: torch.Tensor, g_ent: torch.Tensor | None) -> tuple[Any, ...]:
        hidden, weight, bias, labels, lse, ent, logq_all = ctx.saved_tensors
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        h, w = hidden.to(ctx.mm_dtype), weight.to(ctx.mm_dtype)
        dh = torch.empty_like(hidden) if need_h else None
        dw = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None
        db = torch.zeros(weight.size(0), dtype=torch.float32, device=weight.device) if need_b else None
        with_ent = ctx.entropy == "grad" and g_ent is not None and g_ent.numel() > 0
        step = chunk_rows(weight.size(0), hidden.size(0))
        for s in range(0, hidden.size(0), step):
            e = min(s + step, hidden.size(0))
            g = g_logp[s:e, None].float()
            if logq_all.numel():
                logq = logq_all[s:e]
            else:  # recompute the chunk's logits: log softmax = z - log-sum-exp
                logq = _logits(h[s:e], w, bias, ctx.temperature)
                logq -= lse[s:e, None]
            p = torch.exp(logq)
            # d log p(y) / dz = onehot(y) - p;  d H / dz = -p (log p + H)
            coef = -g if not with_ent else -g - g_ent[s:e, None].float() * (logq + ent[s:e, None])
            dz = p.mul_(coef)
            dz.scatter_add_(-1, labels[s:e, None], g)
            if ctx.temperature != 1.0:
                dz /= ctx.temperature
            dzm = dz.to(ctx.mm_dtype)
            if need_h:
                dh[s:e] = torch.mm(dzm, w).to(dh.dtype)
            if need_w:
                dw += torch.mm(dzm.t(), h[s:e]).float()
            if need_b:
                db += dz.sum(0)
        return (dh, None if dw is None else dw.to(weight.dtype), None if db is None else db.to(bias.dtype),
                None, None, None, None, None)


def token_logprobs(hidden: torch.Tensor, head: torch.nn.Linear, labels: torch.Tensor, *, temperature: float = 1.0,
                   with_entropy: str = "none") -> dict[str, torch.Tensor]:
    """``log_probs`` (bs, T) of ``labels`` under ``softmax(head(hidden) / temperature)`` and, unless
    ``with_entropy="none"``, the ``entropy`` (bs, T) (``grad``: differentiable; ``nograd``: for the metric).
    ``hidden`` (bs, T, H) are the states that predict ``labels``.  Under autocast the output-layer matmuls
    run in the autocast dtype, as ``head(hidden)`` would; the softmax math is fp32."""
    dev = hidden.device.type
    mm_dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else head.weight.dtype
    bs, T, H = hidden.shape
    with torch.autocast(dev, enabled=False):
        logp, ent = _TokenLogProbs.apply(hidden.reshape(bs * T, H), head.weight, head.bias,
                                         labels.reshape(bs * T).long(), float(temperature or 1.0), with_entropy,
                                         mm_dtype, torch.is_grad_enabled() and (hidden.requires_grad
                                                                               or head.weight.requires_grad))
    out = {"log_probs": logp.view(bs, T)}
    if with_entropy != "none":
        out["entropy"] = ent.view(bs, T)
    return out
