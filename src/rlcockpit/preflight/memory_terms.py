"""The terms of the memory estimate: what the trainer holds in each phase of a step, in bytes.

Why phases: the phases of one RL step do not overlap, so the peak is the static part plus the largest
phase. Each term follows the trainer's code (``trainer/rollout/engine.py``, ``step_inputs.py``, ``models.py``,
``update.py``) and was checked against the phase peaks ``bench/memory_estimate.py`` measures:

* static: actor weights (fp32: the trainer keeps fp32 weights and autocasts), the reference copy, AdamW's two
  fp32 states per trainable parameter (they exist from the first optimizer step on, so every later phase
  carries them);
* rollout: the KV cache of every row for prompt + response, one layer's copy while it grows, the prefill of
  each distinct prompt, the sampler's (rows, vocab) temporaries, and the decode step's own layout of the
  weights (``trainer/rollout/lean_decoder.py``: stacked q/k/v; on CPU transposed copies while they are small);
* old-log-prob / reference passes: no-grad forwards over the *whole* batch at once (not micro-batched), so
  (rows, response, vocab) logits with their fp32 copy and the log-sum-exp temporary, or the shared-prefix
  pass's KV cache for every row;
* actor update (one micro-batch): gradients, autocast's half-precision weight copies saved for backward,
  activations (a group's prompt counted once with ``share_prefix``), the logits with their copies and the
  entropy metric's temporaries;
* optimizer step: gradients plus AdamW's temporaries (CPU: none, the fused kernel; CUDA's foreach kernels: one
  fp32 copy of every parameter at once).

On CPU, peak RSS is above the live tensors: glibc's heap keeps what smaller freed tensors leave behind
(the trainer mmaps only tensors >= 16 MiB, ``trainer/host_memory.py``), which ``CPU_HEAP_BYTES`` models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlcockpit.preflight.memory import ModelShape, TrainShape

DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}
FP32 = 4
# CPU: what the process's heap holds above its live tensors at the step's peak, measured on the tune scenarios of
# bench/memory_estimate.py. Fitted with the 4 MiB mmap threshold (peak RSS minus the live terms below: 58-107 MiB);
# kept for the trainer's 16 MiB threshold / 32 MiB trim (trainer/host_memory.py), where it was 13-146 MiB over two
# runs, without a trend in activations, logits or weights that a term fitted on the tune split carried to the
# held-out one (BENCHMARKS.md, "Allocator settings"). Tensors below the threshold come from glibc's heap: their
# holes are reused, not returned.
CPU_HEAP_BYTES = 90 * 2**20


def static_bytes(m: ModelShape, t: TrainShape, n: int, lora: int, trainable: int) -> dict[str, int]:
    """Weights and optimizer states, held through the whole step."""
    wb = DTYPE_BYTES[t.weight_dtype]
    comp = {"actor_weights": n * wb + lora * FP32}
    comp["reference"] = n * DTYPE_BYTES[t.ref_dtype or t.weight_dtype] if (t.needs_ref and not lora) else 0
    comp["optimizer_states"] = 0 if t.offload_optimizer else trainable * t.optimizer_state_bytes
    critic_n = n - (0 if m.tie_embeddings else m.vocab * m.hidden) + m.hidden if t.needs_critic else 0
    comp["critic_weights"] = critic_n * wb
    comp["critic_optimizer"] = 0 if t.offload_optimizer else critic_n * t.optimizer_state_bytes
    return comp


def layer_activation_bytes(m: ModelShape, e: int) -> int:
    """Bytes one decoder layer saves for backward per token (Qwen2/Llama block under autograd).

    The two RMSNorms compute in fp32 whatever the compute dtype (input and normalised output each: 16·h);
    in half precision autocast casts the attention input once per projection (3·h) and the MLP input once
    per gate/up projection (2·h); rotary saves q, k and their rotated halves (2·q + 2·kv), attention saves
    q, k, v and its output (2·q + 2·kv), o_proj its input (q), and the gated MLP four (tokens, I) tensors.
    """
    q = m.heads * int(m.head_dim or 0)
    casts = (3 + 2) * m.hidden if e < FP32 else 2 * m.hidden
    return 16 * m.hidden + e * (casts + 5 * q + 4 * m.kv_dim + 4 * m.intermediate)


def activation_bytes(m: ModelShape, t: TrainShape, rows: int, prompts: int) -> int:
    """Saved activations of one training micro-batch of ``rows`` rows from ``prompts`` distinct prompts."""
    e = DTYPE_BYTES[t.compute_dtype]
    per_layer = layer_activation_bytes(m, e)
    seq = t.prompt_length + t.response_length
    if t.grad_checkpointing:
        # non-reentrant checkpointing keeps each layer's fp32 input (4·h a token); the backward recomputes one
        # layer at a time, holding that layer's activations
        return rows * seq * (4 * m.hidden * m.layers + per_layer + 12 * m.hidden)
    if t.share_prefix and prompts < rows:  # models._shared_prefix_logits: each prompt once, then the responses
        tokens = prompts * t.prompt_length + rows * t.response_length
        prompt_kv = rows * t.prompt_length * 2 * m.kv_dim * e * m.layers  # every row attends over its prompt
        return tokens * (per_layer * m.layers + 12 * m.hidden) + prompt_kv
    return rows * seq * (per_layer * m.layers + 12 * m.hidden)


def logit_bytes_per_element(e: int, t: TrainShape) -> int:
    """Bytes per (token, vocab) element alive at the update's log-prob peak.

    The model's output (``e`` bytes), its fp32 copy when computed in half precision, a divided copy when
    the temperature is not 1, and the entropy's three fp32 tensors (max-shifted logits, softmax, their
    product) that exist together while it is computed. With an entropy bonus two of them are saved for
    backward instead of freed, which does not raise the peak (measured: ~17.5 bytes per element with
    temperature 0.7 and an entropy bonus in fp32, against 20 here). The backward of the log-prob (gradient
    of the logits, ``exp(z - lse)``) needs two fp32 copies, fewer than the entropy's forward.
    """
    copies = e + (FP32 if e < FP32 else 0) + (FP32 if t.temperature not in (0, 1) else 0) + 3 * FP32
    return copies + (FP32 if t.full_vocab_kl else 0)


def uses_fused_head(m: ModelShape, t: TrainShape) -> bool:
    """Whether the trainer scores with the chunked output layer (``trainer/update/fused_logprobs.py``): the families it
    knows, unless LoRA wraps the head itself (adapters on the projections leave it a plain Linear) or the
    exact KL needs the full log-softmax."""
    if t.fused_head is not None:
        return t.fused_head
    from rlcockpit.trainer.update.fused_logprobs import FUSED_MODEL_TYPES

    lora_head = bool(t.lora_rank) and "lm_head" in t.lora_targets
    return m.model_type in FUSED_MODEL_TYPES and not t.full_vocab_kl and not lora_head


def fused_logit_bytes(m: ModelShape, tokens: int, backward: bool, e: int = FP32) -> int:
    """The chunked path's memory: a chunk's logits with the max-shift and softmax temporaries; the output
    layer's weight cast to the autocast dtype (``e`` bytes < fp32); and when a backward follows, the whole
    log-softmax kept for it (when it fits ``SAVE_BYTES``) and each chunk's weight-gradient product (in the
    matmul dtype, then its fp32 copy) before it adds into the accumulated gradient."""
    from rlcockpit.trainer.update.fused_logprobs import SAVE_BYTES, chunk_rows

    chunk = chunk_rows(m.vocab, tokens) * m.vocab * FP32
    full = tokens * m.vocab * FP32
    head = m.vocab * m.hidden
    cast = head * e if e < FP32 else 0
    if not backward:
        return 3 * chunk + cast
    return 3 * chunk + cast + (full if full <= SAVE_BYTES else 0) + head * (FP32 + (e if e < FP32 else 0))


def pass_bytes(m: ModelShape, t: TrainShape) -> int:
    """The no-grad old-log-prob / reference pass over the whole batch (``step_inputs.policy_passes``)."""
    e = DTYPE_BYTES[t.compute_dtype]
    rows, resp = t.train_batch_size * t.rollout_n, t.response_length
    elems = rows * resp * m.vocab
    # scoring: the model's logits, their fp32 (and divided) copies, logsumexp's exp temporary, the exact KL's
    scoring = elems * (e + (FP32 if e < FP32 else 0) + (FP32 if t.temperature not in (0, 1) else 0) + FP32
                       + (FP32 if t.full_vocab_kl else 0))
    fused = uses_fused_head(m, t)
    if fused:
        scoring = fused_logit_bytes(m, rows * resp, backward=False, e=e)
    forward = rows * (t.prompt_length + resp) * e * (3 * m.intermediate + 4 * m.hidden)  # one layer's transients
    if t.share_prefix and t.rollout_n > 1:
        # the response pass holds every row's KV cache; its outputs are concatenated with the first token's:
        # logits, or the hidden states the chunked output layer scores afterwards
        cache = 2 * m.layers * m.kv_dim * rows * (t.prompt_length + resp) * e
        forward = max(forward, cache + 2 * rows * resp * (m.hidden if fused else m.vocab) * e)
    return max(scoring, forward)


def rollout_bytes(m: ModelShape, t: TrainShape) -> tuple[int, int]:
    """(KV cache, transients) of generating the whole batch at once (``trainer/rollout/engine.py``)."""
    e = DTYPE_BYTES[t.compute_dtype]
    rows = t.train_batch_size * t.rollout_n
    seq = t.prompt_length + t.response_length
    per_layer = 2 * m.kv_dim * seq * rows * e
    kv = per_layer * m.layers
    prompts = rows if m.vision else t.train_batch_size  # each distinct prompt is prefilled once (VL: model.generate
    # prefills every row)
    prefill = prompts * t.prompt_length * e * (4 * m.hidden + 3 * m.intermediate)
    sampler = rows * m.vocab * (e + 3 * FP32)  # the rows' logits, tempered fp32 copy, softmax, draw
    # + one layer's copy while DynamicCache grows by cat
    return kv, per_layer + max(prefill, sampler) + decode_weight_bytes(m, t)


def decode_weight_bytes(m: ModelShape, t: TrainShape) -> int:
    """The lean decode step's weight layout for one rollout (``trainer/rollout/lean_decoder.py``, the families it
    knows): every projection and the output layer transposed on CPU while that fits ``TRANSPOSED_BYTES``,
    else only q/k/v stacked into one matrix."""
    from rlcockpit.trainer.rollout.lean_decoder import FAMILIES, TRANSPOSED_BYTES

    if m.model_type not in FAMILIES or t.lora_rank:
        return 0
    wb = DTYPE_BYTES[t.weight_dtype]
    q = m.heads * int(m.head_dim or m.hidden // max(1, m.heads))
    qkv = m.layers * m.hidden * (q + 2 * m.kv_dim) * wb
    full = qkv + (m.layers * (q * m.hidden + 3 * m.hidden * m.intermediate) + m.vocab * m.hidden) * wb
    return full if t.device != "cuda" and full <= TRANSPOSED_BYTES else qkv


def vision_bytes(m: ModelShape, t: TrainShape, rows: int, grad: bool) -> int:
    """The vision tower over ``rows`` rows' images (a VL model; ``trainer/vision/inputs.py``): every pass runs it on
    every row (no prompt sharing), at ``image_patches`` patches a prompt (the processor's ``max_pixels``).
    The step's padded ``pixel_values`` and the pass's concatenated copy (fp32), and with ``grad`` what each
    block saves for backward per patch (as a decoder layer's, at the tower's width: norms in fp32, q/k/v,
    attention output and projection inputs, the MLP's inputs and activations); without, one block's
    transients."""
    v = m.vision
    if v is None or not t.image_patches:
        return 0
    e = DTYPE_BYTES[t.compute_dtype]
    patches = rows * t.image_patches
    pixels = 2 * patches * v.patch_values * FP32
    if not grad:
        return pixels + patches * e * (4 * v.embed_dim + v.mlp)
    per_block = 16 * v.embed_dim + e * (10 * v.embed_dim + (3 if v.gated else 2) * v.mlp)
    return pixels + patches * per_block * v.depth


def optimizer_step_bytes(m: ModelShape, t: TrainShape, trainable: int) -> int:
    """AdamW's temporaries: none on a CPU (``state.make_optimizer`` takes torch's fused kernel there);
    CUDA's foreach kernels hold one fp32 copy of every parameter at once."""
    if t.offload_optimizer or t.device != "cuda":
        return 0
    return trainable * FP32


def phase_bytes(m: ModelShape, t: TrainShape, trainable: int) -> tuple[dict[str, int], dict[str, int]]:
    """(phase -> bytes above the static part, named transient components)."""
    e = DTYPE_BYTES[t.compute_dtype]
    wb = DTYPE_BYTES[t.weight_dtype]
    n = int(m.n_params or 0)
    comp: dict[str, int] = {}
    comp["kv_cache"], comp["rollout_transient"] = rollout_bytes(m, t)
    rows = t.train_batch_size * t.rollout_n
    comp["vision_rollout"] = vision_bytes(m, t, rows, grad=False)  # generate's prefill: every row's images
    phases = {"rollout": comp["kv_cache"] + comp["rollout_transient"] + comp["vision_rollout"]}
    comp["log_prob_pass"] = pass_bytes(m, t) + vision_bytes(m, t, rows, grad=False) if (
        t.old_log_prob_pass or t.needs_ref) else 0
    if comp["log_prob_pass"]:
        phases["log_prob_passes"] = comp["log_prob_pass"]
    micro = max(1, t.micro_batch_size)
    prompts = -(-micro // max(1, t.rollout_n))  # a group's rows are contiguous: ceil(micro / n) prompts
    grads = 0 if t.offload_optimizer else trainable * FP32
    comp["actor_grads"] = grads
    comp["autocast_weight_cache"] = n * e if wb > e else 0  # every linear saves its half-precision weight
    comp["activations"] = activation_bytes(m, t, micro, prompts)
    comp["vision_activations"] = vision_bytes(m, t, micro, grad=True)
    if uses_fused_head(m, t):
        comp["logits"] = fused_logit_bytes(m, micro * t.response_length, backward=True, e=e)
    else:
        comp["logits"] = micro * t.response_length * m.vocab * logit_bytes_per_element(e, t)
    phases["actor_update"] = (grads + comp["autocast_weight_cache"] + comp["activations"] + comp["logits"]
                              + comp["vision_activations"])
    comp["adamw_temporaries"] = optimizer_step_bytes(m, t, trainable)
    phases["optimizer_step"] = grads + comp["adamw_temporaries"]
    if t.needs_critic:
        critic_n = n - (0 if m.tie_embeddings else m.vocab * m.hidden)
        phases["critic_update"] = (critic_n * FP32 + comp["autocast_weight_cache"]
                                   + activation_bytes(m, t, micro, micro))
    return phases, comp
