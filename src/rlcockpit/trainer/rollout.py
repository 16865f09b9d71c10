"""Rollout: a batched, KV-cached sampling loop behind a small engine interface.

Why our own loop instead of ``model.generate``: for tiny models ``generate``'s per-step Python
overhead (logits processors, stopping criteria, cache bookkeeping) dominates.  This loop does one
prefill, then one cached forward per new token for the whole batch, and stops as soon as every row
has emitted EOS.  Engines are chosen by name (``rollout.name``) from ``ROLLOUT_ENGINES`` so a vLLM
engine can be added for GPUs without touching the training loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from rlcockpit.registry import Registry


@dataclass
class SamplingParams:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    greedy: bool = False


@dataclass
class RolloutOutput:
    prompts: torch.Tensor  # (bs, P) left-padded prompt ids
    prompt_mask: torch.Tensor  # (bs, P) 1 on real prompt tokens
    responses: torch.Tensor  # (bs, T) right-padded response ids
    response_mask: torch.Tensor  # (bs, T) 1 on generated tokens up to and including EOS

    @property
    def input_ids(self) -> torch.Tensor:
        return torch.cat([self.prompts, self.responses], dim=1)

    @property
    def attention_mask(self) -> torch.Tensor:
        return torch.cat([self.prompt_mask, self.response_mask], dim=1)


class RolloutEngine(Protocol):
    def generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput: ...

    def sync_weights(self, model: Any) -> None: ...


ROLLOUT_ENGINES: Registry[Callable[..., RolloutEngine]] = Registry("rollout engine")


def filter_logits(logits: torch.Tensor, top_k: int = -1, top_p: float = 1.0) -> torch.Tensor:
    """Mask (to -inf) tokens outside the top-k and outside the top-p nucleus; logits (bs, V)."""
    if top_k is not None and 0 < top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(logits, descending=True, dim=-1)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass of the tokens before it already reaches top_p (keeps >= 1 token)
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, sorted_idx, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_next_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None = None) -> torch.Tensor:
    if params.greedy or params.temperature <= 0:
        return logits.argmax(dim=-1)
    logits = filter_logits(logits.float() / params.temperature, params.top_k, params.top_p)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def left_pad(seqs: list[list[int]], pad_id: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s):] = 1
    return ids.to(device), mask.to(device)


@ROLLOUT_ENGINES.register("hf", "torch")
class HFRolloutEngine:
    """Samples from the training model itself (no weight sync needed)."""

    def __init__(self, model: Any, *, pad_token_id: int, eos_token_id: int | list[int], device: Any,
                 autocast: Callable[[], contextlib.AbstractContextManager] | None = None) -> None:
        self.model = model
        self.pad_token_id = pad_token_id
        self.eos_ids = torch.tensor(eos_token_id if isinstance(eos_token_id, list) else [eos_token_id])
        self.device = device
        self.autocast = autocast or contextlib.nullcontext

    def sync_weights(self, model: Any) -> None:
        self.model = model

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput:
        from transformers import DynamicCache

        model = self.model
        was_training = model.training
        model.eval()
        ids, mask = left_pad(prompts, self.pad_token_id, self.device)
        bs = ids.size(0)
        eos = self.eos_ids.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        finished = torch.zeros(bs, dtype=torch.bool, device=self.device)
        out_tokens: list[torch.Tensor] = []
        attn = mask
        with self.autocast():
            ck = {_cache_kwarg(model): cache}
            logits = model(input_ids=ids, attention_mask=attn, position_ids=positions, use_cache=True,
                           logits_to_keep=1, **ck).logits[:, -1]
            next_pos = positions[:, -1:] + 1
            for t in range(params.max_new_tokens):
                tok = sample_next_token(logits, params)
                tok = torch.where(finished, torch.full_like(tok, self.pad_token_id), tok)
                out_tokens.append(tok)
                finished = finished | torch.isin(tok, eos)
                if bool(finished.all()) or t + 1 == params.max_new_tokens:
                    break
                attn = torch.cat([attn, torch.ones((bs, 1), dtype=attn.dtype, device=self.device)], dim=1)
                logits = model(input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos,
                               use_cache=True, **ck).logits[:, -1]
                next_pos = next_pos + 1
        if was_training:
            model.train()
        responses = torch.stack(out_tokens, dim=1)
        return RolloutOutput(ids, mask, responses, response_mask_from_eos(responses, eos))


def _cache_kwarg(model: Any) -> str:
    """transformers >= 5.2x renamed ``past_key_values`` to ``cache``; support both."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def response_mask_from_eos(responses: torch.Tensor, eos_ids: torch.Tensor) -> torch.Tensor:
    """1 up to and including the first EOS of each row, 0 after it."""
    is_eos = torch.isin(responses, eos_ids.to(responses.device)).long()
    after_eos = (is_eos.cumsum(dim=1) - is_eos) > 0
    return (~after_eos).long()
