"""Peak-memory estimate for an RL run, from shapes alone (no weights are loaded).

Why a pure function: a 7B config must be checkable on a laptop before a GPU job is queued, so the
estimate takes a Hugging Face ``config.json`` dict (or the tiny model's settings) plus the run settings
(``preflight.runner.train_shape_for`` reads them from the trainer config) and returns bytes per component.
The phases of one RL step do not overlap, so the peak is

    static (actor weights, reference, critic, optimizer states)
    + max(rollout: KV cache + prefill + sampler,  old-log-prob / reference passes over the whole batch,
          actor update: grads + activations + logits,  optimizer step: grads + AdamW temporaries,
          critic update)

What each term counts, and why, is in ``memory_terms``; ``bench/memory_estimate.py`` measures the error
on real steps of the trainer (BENCHMARKS.md, "Memory estimate").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.preflight.memory_terms import CPU_HEAP_BYTES, DTYPE_BYTES, phase_bytes, static_bytes

GiB = 1024**3
__all__ = ["DTYPE_BYTES", "LORA_MODULES", "SAFETY_MARGIN", "GiB", "MemoryEstimate", "ModelShape", "TrainShape",
           "VisionShape",
           "alternatives", "count_params", "device_capacity", "estimate_memory", "fits", "lora_params"]
SAFETY_MARGIN = 0.20


@dataclass
class VisionShape:
    """A Qwen2-VL / Qwen2.5-VL vision tower: ``depth`` blocks of width ``embed_dim`` over 14 px patches, then a
    merger of ``merge``² patches into one token of the language model's width ``out_hidden``."""

    depth: int
    embed_dim: int
    heads: int
    mlp: int  # the blocks' MLP width
    out_hidden: int
    gated: bool = False  # Qwen2.5-VL: a gated (SwiGLU) MLP and RMSNorms
    patch: int = 14
    temporal: int = 2
    merge: int = 2

    @property
    def patch_values(self) -> int:
        """Numbers per patch in ``pixel_values`` (channels x temporal x patch x patch)."""
        return 3 * self.temporal * self.patch ** 2

    @property
    def n_params(self) -> int:
        e, m = self.embed_dim, self.mlp
        block = 4 * e * e + 4 * e + (3 if self.gated else 2) * e * m + m + e + 4 * e
        merged = e * self.merge ** 2
        return self.patch_values * e + self.depth * block + e + merged * merged + merged + merged * self.out_hidden

    @classmethod
    def from_config(cls, v: Mapping[str, Any], text_hidden: int) -> VisionShape:
        """From a ``vision_config`` dict (Qwen2-VL: ``embed_dim``/``mlp_ratio``; Qwen2.5-VL: ``hidden_size``/
        ``intermediate_size``/``out_hidden_size``)."""
        gated = "out_hidden_size" in v or "intermediate_size" in v
        embed = int(v.get("embed_dim") or v["hidden_size"])
        mlp = int(v.get("intermediate_size") or embed * float(v.get("mlp_ratio", 4)))
        return cls(depth=int(v["depth"]), embed_dim=embed, heads=int(v.get("num_heads", 16)), mlp=mlp,
                   out_hidden=int(v.get("out_hidden_size") or (text_hidden if gated else v.get("hidden_size"))
                                  or text_hidden), gated=gated, patch=int(v.get("patch_size", 14)),
                   temporal=int(v.get("temporal_patch_size", 2)), merge=int(v.get("spatial_merge_size", 2)))


@dataclass
class ModelShape:
    """What the estimate needs from a decoder-only model config (and a VL model's vision tower)."""

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
    model_type: str | None = None  # config.json's model_type (decides the trainer's fused log-prob path)
    vision: VisionShape | None = None  # a vision-language model's vision tower

    def __post_init__(self) -> None:
        if self.head_dim is None:
            self.head_dim = self.hidden // self.heads
        if self.n_params is None:
            self.n_params = count_params(self) + (self.vision.n_params if self.vision else 0)

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * int(self.head_dim or 0)

    @classmethod
    def from_hf_config(cls, cfg: Mapping[str, Any]) -> ModelShape:
        """From a Hugging Face ``config.json`` dict (Qwen2, Llama, Mistral and alike; Qwen2-VL and Qwen2.5-VL
        with their ``vision_config``)."""
        vision_cfg = cfg.get("vision_config")
        top_type, top_tie = cfg.get("model_type"), cfg.get("tie_word_embeddings")  # a VL config ties at the top
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
                   vocab=vocab, tie_embeddings=bool(top_tie if isinstance(vision_cfg, Mapping) and top_tie is not None
                                                    else cfg.get("tie_word_embeddings", False)),
                   head_dim=cfg.get("head_dim"), attention_bias=bool(bias),
                   model_type=top_type if isinstance(vision_cfg, Mapping) else cfg.get("model_type"),
                   vision=VisionShape.from_config(vision_cfg, hidden) if isinstance(vision_cfg, Mapping) else None)


def count_params(m: ModelShape) -> int:
    """Parameters of a Llama/Qwen2-style decoder (embeddings, attention, gated MLP, RMSNorms, lm_head)."""
    h, kv, q = m.hidden, m.kv_dim, m.heads * int(m.head_dim or 0)
    attn = h * q + 2 * h * kv + q * h + ((q + 2 * kv) if m.attention_bias else 0)
    per_layer = attn + 3 * h * m.intermediate + 2 * h
    embed = m.vocab * h
    return embed + m.layers * per_layer + h + (0 if m.tie_embeddings else embed)


LORA_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class TrainShape:
    """The run settings that drive memory. Lengths are tokens; batch sizes as in verl's config."""

    train_batch_size: int = 16  # prompts per step
    rollout_n: int = 8
    micro_batch_size: int = 128  # samples per forward/backward (actor.ppo_micro_batch_size)
    prompt_length: int = 512
    response_length: int = 512
    compute_dtype: str = "bf16"  # bf16 = autocast: the trainer's weights stay fp32 (weight_dtype)
    weight_dtype: str = "fp32"  # the actor's weights, grads and the update's copies of them
    ref_dtype: str | None = None  # the frozen reference copy; None = weight_dtype
    grad_checkpointing: bool = False
    lora_rank: int = 0
    lora_targets: int | tuple[str, ...] = LORA_MODULES  # adapted projections (names, or a count of q/k/v/o-sized)
    needs_ref: bool = False  # KL loss / KL in reward without LoRA: a frozen copy of the actor
    needs_critic: bool = False  # GAE
    old_log_prob_pass: bool = False  # a no-grad pass over the whole batch for the old log-probs
    full_vocab_kl: bool = False  # the exact KL keeps (tokens, vocab) log-softmaxes of the passes
    share_prefix: bool = True  # actor.share_prefix: a group's prompt runs once in the update
    entropy_grad: bool = False  # entropy bonus: backward through the (tokens, vocab) softmax
    temperature: float = 1.0  # rollout temperature: the log-prob pass divides the logits by it (one more copy)
    fused_head: bool | None = None  # log-probs from hidden states in chunks (trainer/update/fused_logprobs.py); None:
    # decided from the model type (Qwen2/Qwen3/Llama/Mistral without LoRA or the exact KL use it)
    optimizer_state_bytes: int = 8  # AdamW: fp32 exp_avg + exp_avg_sq per trainable parameter
    offload_optimizer: bool = False  # optimizer states (and fp32 grads) kept in host memory
    world_size: int = 1  # trainer.n_gpus_per_node: data-parallel ranks (per device on GPUs; summed on CPU)
    image_patches: int = 0  # a VL prompt's vision patches at the processor's max_pixels (all its images)
    device: str = "cuda"  # "cuda" adds the CUDA context and foreach AdamW; "cpu" the heap's overhead


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

    @property
    def peak_phase(self) -> str:
        return max(self.phases, key=self.phases.__getitem__)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "peak_gib": round(self.peak_gib, 3), "peak_phase": self.peak_phase}


def _projection_dims(m: ModelShape) -> dict[str, tuple[int, int]]:
    q = m.heads * int(m.head_dim or 0)
    return {"q_proj": (m.hidden, q), "k_proj": (m.hidden, m.kv_dim), "v_proj": (m.hidden, m.kv_dim),
            "o_proj": (q, m.hidden), "gate_proj": (m.hidden, m.intermediate), "up_proj": (m.hidden, m.intermediate),
            "down_proj": (m.intermediate, m.hidden)}


def lora_params(m: ModelShape, rank: int, targets: int | tuple[str, ...] | list[str]) -> int:
    """Trainable LoRA parameters: r·(in + out) per adapted projection.

    ``targets``: module names (peft's ``target_modules``; ``all-linear`` = every projection of a decoder
    layer), or a count of q/k/v/o-sized projections."""
    if rank <= 0:
        return 0
    dims = _projection_dims(m)
    if isinstance(targets, int):
        chosen = [dims[k] for k in ("q_proj", "k_proj", "v_proj", "o_proj")]
        chosen = (chosen * ((targets + 3) // 4))[:targets]
    else:
        chosen = [dims[t] for t in targets if t in dims]
    return m.layers * sum(rank * (i + o) for i, o in chosen)


def estimate_memory(m: ModelShape, t: TrainShape) -> MemoryEstimate:
    """Peak bytes of one RL step; a pure function of (model shape, run shape). See ``memory_terms``."""
    n = int(m.n_params or count_params(m))
    lora = lora_params(m, t.lora_rank, t.lora_targets)
    trainable = lora if lora else n
    notes: list[str] = []
    comp = static_bytes(m, t, n, lora, trainable)
    if t.needs_ref and lora:
        notes.append("reference = actor with LoRA adapters disabled (no copy)")
    if t.offload_optimizer:
        notes.append(f"optimizer states and grads offloaded to host memory "
                     f"({trainable * (t.optimizer_state_bytes + 4) / GiB:.2f} GiB)")
    static = sum(comp.values())
    world = max(1, t.world_size)  # data-parallel ranks: each generates and scores its share of the prompts
    phases, transient = phase_bytes(m, dataclasses.replace(t, train_batch_size=-(-t.train_batch_size // world)),
                                    trainable)
    comp.update(transient)
    phases = {k: static + v for k, v in phases.items()}
    overhead = int(0.75 * GiB) if t.device == "cuda" else 0
    comp["framework_overhead"] = overhead  # the CUDA context (outside torch's allocator)
    comp["cpu_heap_overhead"] = CPU_HEAP_BYTES if t.device == "cpu" else 0
    peak = max(phases.values()) + overhead + comp["cpu_heap_overhead"]
    if world > 1 and t.device == "cpu":  # the ranks are processes sharing the host's RAM
        notes.append(f"{world} data-parallel processes share host RAM: {world} x {peak / GiB:.2f} GiB")
        peak *= world
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
