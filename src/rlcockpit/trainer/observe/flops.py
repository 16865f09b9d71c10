"""Model FLOPs utilisation (``perf/mfu/actor``, ``perf/mfu/critic``, ``perf/mfu/actor_infer``) as verl 0.9.1
estimates it (``verl/utils/flops_counter.py`` and the engine worker's ``_postprocess_output``).

From a FLOP formula, never from profiling (no extra work in the step): a dense decoder does
``6 * N * tokens`` FLOPs forward + backward, ``N`` the non-attention weights (MLP with gate/up/down, the four
attention projections, embedding + LM head), plus ``6 * sum(seqlen^2) * head_dim * heads * layers`` for the
attention scores. MFU = achieved FLOP/s / the device's peak / the number of ranks; a forward-only pass (the
old-log-prob one) divides by 3 more. Peaks are verl's table, matched against the device name the same way;
``CPU`` is verl's stated 448 GFLOP/s.

Where verl would log ``0`` (an architecture its formula does not cover, a device missing from its table: it
divides by an infinite peak) the key is left out instead: a 0 would read as an idle accelerator.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

# verl 0.9.1's _DEVICE_FLOPS: dense bf16 peak FLOP/s by a substring of the device name
DEVICE_PEAK_FLOPS = {
    "CPU": 448e9, "GB200": 2.5e15, "B200": 2.25e15, "MI300X": 1307e12, "MI350X": 2300e12, "MI355X": 2500e12,
    "H100": 989e12, "H800": 989e12, "H200": 989e12, "A100": 312e12, "A800": 312e12, "L40S": 362.05e12,
    "L40": 181.05e12, "A40": 149.7e12, "L20": 119.5e12, "H20": 148e12, "910B": 354e12, "A2G3": 354e12,
    "Ascend950DT": 432e12, "Ascend910": 354e12, "RTX 3070 Ti": 21.75e12,
}

# the architectures verl estimates with its dense (Qwen2/Llama) formula
DENSE_MODEL_TYPES = frozenset({"qwen2", "llama", "qwen3", "mistral", "minicpmv", "minicpmo", "seed_oss", "glm4v",
                               "mimo"})


def peak_flops(device_name: str) -> float | None:
    """The device's peak FLOP/s from verl's table (its name matching order: keys in reverse sorted order, the
    first contained in the name wins), ``None`` for a device the table does not know."""
    for key, value in sorted(DEVICE_PEAK_FLOPS.items(), reverse=True):
        if key in device_name:
            return value
    return None


@functools.lru_cache(maxsize=8)
def _device_peak(device: str) -> float | None:
    dev = torch.device(device)
    if dev.type == "cpu":
        return DEVICE_PEAK_FLOPS["CPU"]
    if dev.type == "cuda":
        return peak_flops(torch.cuda.get_device_name(dev))
    return None


def train_flops(config: Any, seqlens: Sequence[int]) -> float | None:
    """Forward + backward FLOPs of a dense decoder over sequences of ``seqlens`` tokens (verl's
    ``_estimate_qwen2_flops`` times the step's duration); ``None`` for an architecture it does not cover."""
    if getattr(config, "model_type", None) not in DENSE_MODEL_TYPES:
        return None
    hidden, heads = config.hidden_size, config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    mlp = hidden * config.intermediate_size * 3
    attn_linear = hidden * (heads * head_dim + 2 * kv * head_dim + heads * head_dim)
    dense = (mlp + attn_linear) * config.num_hidden_layers + config.vocab_size * hidden * 2
    attention = 6 * sum(s * s for s in seqlens) * head_dim * heads * config.num_hidden_layers
    return 6 * dense * sum(seqlens) + attention


def model_config(model: Any) -> Any:
    """The Hugging Face config of a policy or critic (PEFT and value-head wrappers included), or ``None``."""
    for obj in (model, getattr(model, "base_model", None), getattr(model, "model", None),
                getattr(model, "pretrained_model", None)):
        cfg = getattr(obj, "config", None)
        if cfg is not None and hasattr(cfg, "model_type"):
            return cfg
    return None


def mfu(model: Any, seqlens: Sequence[int], seconds: float, device: torch.device, world_size: int = 1,
        forward_only: bool = False) -> float | None:
    """verl's MFU of one pass of ``model`` over ``seqlens`` (every rank's sequences) taking ``seconds``:
    achieved / peak / ``world_size`` (/ 3 forward-only). ``None`` where verl's estimate is not defined."""
    config = model_config(model)
    flops = train_flops(config, seqlens) if config is not None else None
    peak = _device_peak(str(device))
    if flops is None or peak is None or seconds <= 0:
        return None
    value = flops / seconds / peak / world_size
    return value / 3.0 if forward_only else value

