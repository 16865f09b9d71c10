"""Peak-memory estimate for an RL run, from shapes alone (no weights are loaded).

Why a pure function: a 7B config must be checkable on a laptop before a GPU job is queued, so the
estimate takes a Hugging Face ``config.json`` dict (or the tiny model's settings) plus the batch
settings and returns bytes per component. The phases of one RL step do not overlap, so the peak is

    static (actor weights, reference, critic, optimizer states)
    + max(rollout: KV cache + prefill,  actor update: grads + activations + logits,
          critic update: critic grads + activations)

Activation bytes per token per decoder layer follow what a Qwen2/Llama block saves for backward:
the norms' inputs/outputs and q/k/v/o inputs (≈10·h), rotated q/k and v (≈4·kv), and the gated
MLP's four intermediate tensors (4·I). Gradient checkpointing keeps only each layer's input
(measured: ≈6·h per layer in transformers) plus about two layers' activations during the recompute. The log-prob pass keeps fp32
logits and their log-softmax for the response tokens only (``logits_to_keep``), which dominates
for 150k-token vocabularies. See ``bench/memory_estimate.py`` for the measured error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GiB = 1024**3
DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}
SAFETY_MARGIN = 0.20


@dataclass
class ModelShape:
    """What the estimate needs from a decoder-only model config."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    tie_embeddings: bool = False
    head_dim: int | None = None
    attention_bias: bool = False
    n_params: int | None = None  # computed from the shape when not given

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden // self.heads
        if self.n_params is None:
            self.n_params = count_params(self)

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * int(self.head_dim or 0)

    @classmethod
    def from_hf_config(cls, cfg: Mapping[str, Any]) -> ModelShape:
        """From a Hugging Face ``config.json`` dict (Qwen2, Llama, Mistral and alike)."""
        cfg = dict(cfg.get("text_config") or cfg) if isinstance(cfg.get("text_config"), Mapping) else dict(cfg)
        try:
            hidden = int(cfg.get("hidden_size") or cfg["n_embd"])
            layers = int(cfg.get("num_hidden_layers") or cfg["n_layer"])
            heads = int(cfg.get("num_attention_heads") or cfg["n_head"])
            vocab = int(cfg["vocab_size"])
        except KeyError as exc:
            raise ValueError(f"model config has no {exc.args[0]!r}: cannot estimate memory") from None
        bias = cfg.get("attention_bias")
        if bias is None:
            bias = cfg.get("model_type") == "qwen2"
        return cls(hidden=hidden, layers=layers, heads=heads,
                   kv_heads=int(cfg.get("num_key_value_heads") or heads),
                   intermediate=int(cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * hidden),
                   vocab=vocab, tie_embeddings=bool(cfg.get("tie_word_embeddings", False)),
                   head_dim=cfg.get("head_dim"), attention_bias=bool(bias))


def count_params(m: ModelShape) -> int:
    """Parameters of a Llama/Qwen2-style decoder (embeddings, attention, gated MLP, RMSNorms, lm_head)."""
    h, kv, q = m.hidden, m.kv_dim, m.heads * int(m.head_dim or 0)
    attn = h * q + 2 * h * kv + q * h + ((q + 2 * kv) if m.attention_bias else 0)
    per_layer = attn + 3 * h * m.intermediate + 2 * h
    embed = m.vocab * h
    return embed + m.layers * per_layer + h + (0 if m.tie_embeddings else embed)


@dataclass
class TrainShape:
    """The run settings that drive memory. Lengths are tokens; batch sizes as in verl's config."""

    train_batch_size: int = 16  # prompts per step
    rollout_n: int = 8
    micro_batch_size: int = 128  # samples per forward/backward (actor.ppo_micro_batch_size)
    prompt_length: int = 512
    response_length: int = 512
    compute_dtype: str = "bf16"
    weight_dtype: str = "bf16"  # the trainer keeps fp32 weights on CPU (autocast), compute dtype on GPU
    grad_checkpointing: bool = False
    lora_rank: int = 0
    lora_targets: int = 4  # adapted projections per layer (q, k, v, o by default)
    needs_ref: bool = False  # KL loss / KL in reward without LoRA: a frozen copy of the actor
    needs_critic: bool = False  # GAE
    entropy_grad: bool = False  # entropy bonus: backward through the (tokens, vocab) softmax
    temperature: float = 1.0  # rollout temperature: the log-prob pass divides the logits by it (one more copy)
    optimizer_state_bytes: int = 8  # AdamW: fp32 exp_avg + exp_avg_sq per trainable parameter
    offload_optimizer: bool = False  # optimizer states (and fp32 grads) kept in host memory
    device: str = "cuda"  # "cuda" adds the CUDA context; "cpu" adds nothing


@dataclass
class MemoryEstimate:
    components: dict[str, int]  # bytes
    phases: dict[str, int]  # bytes at each phase's peak
    peak_bytes: int
    trainable_params: int
    n_params: int
    notes: list[str] = field(default_factory=list)

    @property
    def peak_gib(self) -> float:
        return self.peak_bytes / GiB

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "peak_gib": round(self.peak_gib, 3)}


def lora_params(m: ModelShape, rank: int, targets: int) -> int:
    """Trainable LoRA parameters: r·(in + out) per adapted projection (q/k/v/o-sized)."""
    if rank <= 0:
        return 0
    q = m.heads * int(m.head_dim or 0)
    dims = [(m.hidden, q), (m.hidden, m.kv_dim), (m.hidden, m.kv_dim), (q, m.hidden)]
    dims = (dims * ((targets + 3) // 4))[:targets]
    return m.layers * sum(rank * (i + o) for i, o in dims)


def activation_bytes_per_token(m: ModelShape, e: int, grad_ckpt: bool) -> float:
    """Bytes kept for backward per token of a training micro-batch (all layers)."""
    per_layer = e * (10 * m.hidden + 4 * m.kv_dim + 4 * m.intermediate)
    if grad_ckpt:
        # measured (transformers 5, non-reentrant): ~6·h kept per layer (input, rotary/mask tensors),
        # and the backward holds about two layers' activations (recompute + gradient buffers)
        return 6 * e * m.hidden * m.layers + 2 * per_layer + 2 * e * m.hidden
    return per_layer * m.layers + 2 * e * m.hidden


def logit_bytes_per_element(e: int, t: TrainShape) -> int:
    """Bytes per (token, vocab) element alive at the log-prob pass's peak (measured on the 32k-vocab scenario).

    The model's output (``e`` bytes), its fp32 copy when computed in half precision, a divided copy when
    the temperature is not 1, and the entropy metric's three fp32 temporaries (max-shifted logits,
    softmax, their product) that exist together while it is computed; with an entropy bonus its backward
    keeps two more.  The backward of the log-prob (gradient of the logits, ``exp(z - lse)``) needs two
    fp32 copies, fewer than the entropy's forward, so it does not set the peak.
    """
    copies = e + (4 if e < 4 else 0) + (4 if t.temperature not in (0, 1) else 0) + 3 * 4
    return copies + (8 if t.entropy_grad else 0)


def estimate_memory(m: ModelShape, t: TrainShape) -> MemoryEstimate:
    """Peak bytes of one RL step; a pure function of (model shape, run shape)."""
    wb = DTYPE_BYTES[t.weight_dtype]
    e = DTYPE_BYTES[t.compute_dtype]
    n = int(m.n_params or count_params(m))
    lora = lora_params(m, t.lora_rank, t.lora_targets)
    trainable = lora if lora else n
    notes: list[str] = []
    comp: dict[str, int] = {}
    comp["actor_weights"] = n * wb + lora * wb
    comp["reference"] = n * wb if (t.needs_ref and not lora) else 0
    if t.needs_ref and lora:
        notes.append("reference = actor with LoRA adapters disabled (no copy)")
    opt = trainable * t.optimizer_state_bytes
    comp["optimizer_states"] = 0 if t.offload_optimizer else opt
    critic_n = n - (0 if m.tie_embeddings else m.vocab * m.hidden) + m.hidden if t.needs_critic else 0
    comp["critic_weights"] = critic_n * wb
    comp["critic_optimizer"] = 0 if t.offload_optimizer else critic_n * t.optimizer_state_bytes
    static = sum(comp.values())

    # rollout: the whole batch generates at once; KV cache for prompt + response, plus prefill transients
    roll_b = t.train_batch_size * t.rollout_n
    seq = t.prompt_length + t.response_length
    comp["kv_cache"] = int(2 * m.layers * m.kv_dim * seq * roll_b * e * 1.1)  # +10%: cache growth by concat
    prefill = roll_b * t.prompt_length * e * (4 * m.hidden + 3 * m.intermediate) + roll_b * m.vocab * 4 * 2
    comp["rollout_transient"] = int(prefill)
    rollout_phase = static + comp["kv_cache"] + comp["rollout_transient"]

    # actor update: grads, autocast weight copies, activations and fp32 logits of one micro-batch
    micro = max(1, t.micro_batch_size)
    grads = trainable * (4 if t.offload_optimizer else wb)
    comp["actor_grads"] = 0 if t.offload_optimizer else trainable * wb
    comp["autocast_weight_cache"] = n * e if (wb > e) else 0
    comp["activations"] = int(micro * seq * activation_bytes_per_token(m, e, t.grad_checkpointing))
    resp_tokens = micro * (t.response_length + 1)
    comp["logits"] = int(resp_tokens * m.vocab * logit_bytes_per_element(e, t))
    actor_phase = static + comp["actor_grads"] + comp["autocast_weight_cache"] + comp["activations"] + comp["logits"]
    if t.offload_optimizer:
        notes.append(f"optimizer states and grads offloaded to host memory ({(opt + grads) / GiB:.2f} GiB)")

    critic_phase = 0
    if t.needs_critic:
        critic_phase = (static + critic_n * wb + comp["autocast_weight_cache"]
                        + int(micro * seq * activation_bytes_per_token(m, e, t.grad_checkpointing)))
    phases = {"rollout": rollout_phase, "actor_update": actor_phase}
    if critic_phase:
        phases["critic_update"] = critic_phase
    overhead = int(0.75 * GiB) if t.device == "cuda" else 0
    comp["framework_overhead"] = overhead
    peak = max(phases.values()) + overhead
    return MemoryEstimate(components=comp, phases=phases, peak_bytes=int(peak), trainable_params=trainable,
                          n_params=n, notes=notes)


def fits(peak_bytes: int, capacity_bytes: int, margin: float = SAFETY_MARGIN) -> bool:
    """True when ``peak`` plus the safety margin fits in ``capacity``."""
    return peak_bytes * (1 + margin) <= capacity_bytes


def alternatives(m: ModelShape, t: TrainShape) -> list[tuple[str, list[str], MemoryEstimate]]:
    """Concrete ways to fit, each with its own estimate: (what, overrides, estimate)."""
    out: list[tuple[str, list[str], MemoryEstimate]] = []
    mb = t.micro_batch_size
    while mb > 1 and len([o for o in out if o[0].startswith("micro")]) < 3:
        mb = max(1, mb // 2)
        out.append((f"micro-batch {mb}", [f"actor.ppo_micro_batch_size={mb}"],
                    estimate_memory(m, dataclasses.replace(t, micro_batch_size=mb))))
    if not t.grad_checkpointing:
        out.append(("gradient checkpointing", ["actor.model.enable_gradient_checkpointing=true"],
                    estimate_memory(m, dataclasses.replace(t, grad_checkpointing=True))))
    if not t.lora_rank:
        out.append(("LoRA rank 16", ["actor.model.lora_rank=16"],
                    estimate_memory(m, dataclasses.replace(t, lora_rank=16))))
    if not t.offload_optimizer and t.device == "cuda":
        out.append(("CPU offload of optimizer states",
                    ["actor_rollout_ref.actor.fsdp_config.optimizer_offload=True (verl)"],
                    estimate_memory(m, dataclasses.replace(t, offload_optimizer=True))))
    both = dataclasses.replace(t, grad_checkpointing=True, micro_batch_size=max(1, t.micro_batch_size // 4),
                               lora_rank=t.lora_rank or 16)
    out.append(("LoRA 16 + gradient checkpointing + micro-batch "
                f"{both.micro_batch_size}", ["actor.model.lora_rank=16", "actor.model.enable_gradient_checkpointing=true",
                                             f"actor.ppo_micro_batch_size={both.micro_batch_size}"],
                estimate_memory(m, both)))
    if t.train_batch_size > 1:
        half = max(1, t.train_batch_size // 2)
        out.append((f"train batch {half} (smaller rollout KV cache)", [f"data.train_batch_size={half}"],
                    estimate_memory(m, dataclasses.replace(t, train_batch_size=half))))
    base = estimate_memory(m, t).peak_bytes
    return [o for o in out if o[2].peak_bytes < base]  # an option that does not lower the peak is no option


def device_capacity(device: str = "auto") -> tuple[str, int]:
    """(description, bytes): total GPU memory of device 0, else available host RAM (psutil)."""
    if device in ("auto", "cuda"):
        try:
            import torch

            if torch.cuda.is_available():
                props = torch.cuda.get_device_properties(0)
                return f"GPU {props.name}", int(props.total_memory)
        except ImportError:
            pass
    import psutil

    return "host RAM (available)", int(psutil.virtual_memory().available)
