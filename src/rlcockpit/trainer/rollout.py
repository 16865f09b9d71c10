"""Rollout: a batched, KV-cached sampling loop behind a small engine interface.

Why our own loop instead of ``model.generate``: for tiny models ``generate``'s per-step Python
overhead (logits processors, stopping criteria, cache bookkeeping) dominates.  This loop prefills
each distinct prompt once (GRPO repeats every prompt n times), then runs one cached forward per new
token for the rows whose histories still differ, and stops as soon as every row has emitted EOS.  Engines are chosen by name (``rollout.name``) from ``ROLLOUT_ENGINES`` so a vLLM
engine can be added for GPUs without touching the training loop.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from rlcockpit.registry import Registry
from rlcockpit.trainer.rollout_seeds import row_uniforms, sample_with_uniforms


@dataclass
class SamplingParams:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    greedy: bool = False
    logprobs: bool = False  # report each sampled token's log-prob (RolloutOutput.rollout_log_probs)
    seeds: list[int] | None = None  # one per prompt row: its draws come from its own generator (rollout_seeds.py)


@dataclass
class RolloutOutput:
    prompts: torch.Tensor  # (bs, P) left-padded prompt ids
    prompt_mask: torch.Tensor  # (bs, P) 1 on real prompt tokens
    responses: torch.Tensor  # (bs, T) right-padded response ids
    response_mask: torch.Tensor  # (bs, T) 1 on generated tokens up to and including EOS
    # (bs, T) the engine's log-prob of each sampled token, when it reports them (vLLM); compared with the
    # trainer's in training/rollout_probs_diff_*
    rollout_log_probs: torch.Tensor | None = None

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
                 autocast: Callable[[], contextlib.AbstractContextManager] | None = None, config: Any = None) -> None:
        self.model = model  # config: the trainer Config, which engines with settings of their own read
        self.pad_token_id = pad_token_id
        self.eos_ids = torch.tensor(eos_token_id if isinstance(eos_token_id, list) else [eos_token_id])
        self.device = device
        self.autocast = autocast or contextlib.nullcontext

    def sync_weights(self, model: Any) -> None:
        self.model = model

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput:
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                out = self._generate(prompts, params)
        finally:
            self.model.train(was_training)
        # inference tensors cannot be saved for backward (the update embeds these ids): plain copies
        return RolloutOutput(*(None if t is None else t.clone() for t in (
            out.prompts, out.prompt_mask, out.responses, out.response_mask, out.rollout_log_probs)))

    def _generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput:
        """Sampling that never computes the same thing twice.

        Rows are grouped into *nodes*: rows whose tokens so far are identical (the n samples of one
        prompt start as one node) share one forward pass and one KV-cache row, since their next-token
        distributions are the same.  Each row still draws its own token from that distribution, so
        sampling is exactly what one forward per row would give; when rows draw different tokens the
        node splits (its cache row is copied), and finished rows drop out of the computation.
        """
        from transformers import DynamicCache

        model = self.model
        ids, mask = left_pad(prompts, self.pad_token_id, self.device)
        bs = ids.size(0)
        eos = self.eos_ids.to(self.device)
        first_row: dict[tuple[int, ...], int] = {}  # distinct prompt -> its first row
        for row, p in enumerate(prompts):
            first_row.setdefault(tuple(p), row)
        node_of_prompt = {p: node for node, p in enumerate(first_row)}
        node_of_row = torch.tensor([node_of_prompt[tuple(p)] for p in prompts], device=self.device)
        node_rows = torch.tensor(list(first_row.values()), device=self.device)
        node_mask = mask[node_rows]
        node_pos = (node_mask.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache()
        ck = {_cache_kwarg(model): cache}
        finished = torch.zeros(bs, dtype=torch.bool, device=self.device)
        out_tokens: list[torch.Tensor] = []
        out_logps: list[torch.Tensor] = []
        temp = params.temperature if params.temperature > 0 else 1.0  # the training pass scores at this temperature
        pad = torch.full((bs,), self.pad_token_id, dtype=torch.long, device=self.device)
        draws = row_uniforms(params.seeds, params.max_new_tokens, self.device) if params.seeds else None
        with self.autocast():
            logits = model(input_ids=ids[node_rows], attention_mask=node_mask, position_ids=node_pos, use_cache=True,
                           logits_to_keep=1, **ck).logits[:, -1]
            next_pos = node_pos[:, -1:] + 1
            for t in range(params.max_new_tokens):
                vocab = logits.size(-1)
                tok = (sample_next_token(logits[node_of_row], params) if draws is None
                       else sample_with_uniforms(logits[node_of_row], params, draws[:, t]))
                tok = torch.where(finished, pad, tok)
                out_tokens.append(tok)
                if params.logprobs:  # of the tempered, unfiltered distribution: what the training pass scores
                    logp = torch.log_softmax(logits[node_of_row].float() / temp, dim=-1)
                    out_logps.append(logp.gather(-1, tok[:, None]).squeeze(-1).masked_fill(finished, 0.0))
                finished = finished | (tok[:, None] == eos).any(-1)
                if t + 1 == params.max_new_tokens or bool(finished.all()):
                    break
                # the next nodes: distinct (node, token) pairs of the rows still running
                live = (~finished).nonzero().squeeze(-1)
                keys, inverse = torch.unique(node_of_row[live] * vocab + tok[live], return_inverse=True)
                parent, new_tok = keys // vocab, keys % vocab
                cache.batch_select_indices(parent)
                node_mask = torch.cat([node_mask[parent], torch.ones_like(node_mask[parent, :1])], dim=1)
                next_pos = next_pos[parent]
                node_of_row = torch.zeros_like(node_of_row)
                node_of_row[live] = inverse
                logits = model(input_ids=new_tok[:, None], attention_mask=node_mask, position_ids=next_pos,
                               use_cache=True, **ck).logits[:, -1]
                next_pos = next_pos + 1
        responses = torch.stack(out_tokens, dim=1)
        logps = torch.stack(out_logps, dim=1) if out_logps else None
        return RolloutOutput(ids, mask, responses, response_mask_from_eos(responses, eos), logps)


def _cache_kwarg(model: Any) -> str:
    """transformers >= 5.2x renamed ``past_key_values`` to ``cache``; support both."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return _cache_kwarg_of(type(base))


@functools.cache
def _cache_kwarg_of(model_cls: type) -> str:
    import inspect

    return "cache" if "cache" in inspect.signature(model_cls.forward).parameters else "past_key_values"


def response_mask_from_eos(responses: torch.Tensor, eos_ids: torch.Tensor) -> torch.Tensor:
    """1 up to and including the first EOS of each row, 0 after it."""
    is_eos = torch.isin(responses, eos_ids.to(responses.device)).long()
    after_eos = (is_eos.cumsum(dim=1) - is_eos) > 0
    return (~after_eos).long()
