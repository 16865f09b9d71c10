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
from rlcockpit.trainer.rollout.kv_cache import preallocated_cache
from rlcockpit.trainer.rollout.lean_decoder import lean_forward
from rlcockpit.trainer.rollout.sampling import sample_next_token, sample_with_uniforms
from rlcockpit.trainer.rollout.seeds import row_uniforms


@dataclass
class SamplingParams:
    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    greedy: bool = False
    logprobs: bool = False  # report each sampled token's log-prob (RolloutOutput.rollout_log_probs)
    seeds: list[int] | None = None  # one per prompt row: its draws come from its own generator (rollout/seeds.py)


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
    """An engine that samples vision-language models also takes ``mm=``: the batch's row-aligned image tensors
    (:func:`rlcockpit.trainer.vision.inputs.vl_batch`), passed only when the rows carry images."""

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput: ...

    def sync_weights(self, model: Any) -> None: ...


ROLLOUT_ENGINES: Registry[Callable[..., RolloutEngine]] = Registry("rollout engine")


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

    def generate(self, prompts: list[list[int]], params: SamplingParams,
                 mm: dict[str, torch.Tensor] | None = None) -> RolloutOutput:
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                out = self._generate_vl(prompts, params, mm) if mm else self._generate(prompts, params)
        finally:
            self.model.train(was_training)
        # inference tensors cannot be saved for backward (the update embeds these ids): plain copies
        return RolloutOutput(*(None if t is None else t.clone() for t in (
            out.prompts, out.prompt_mask, out.responses, out.response_mask, out.rollout_log_probs)))

    def _generate_vl(self, prompts: list[list[int]], params: SamplingParams,
                     mm: dict[str, torch.Tensor]) -> RolloutOutput:
        """A vision-language batch: ``model.generate`` with the images (vision/inputs.py says why)."""
        from rlcockpit.trainer.vision.inputs import generate_vl

        ids, mask = left_pad(prompts, self.pad_token_id, self.device)
        eos = self.eos_ids.to(self.device)
        with self.autocast():
            responses, logps = generate_vl(self.model, ids, mask, mm, params, self.pad_token_id, eos)
        response_mask = response_mask_from_eos(responses, eos)
        if logps is not None:
            logps = logps * response_mask
        return RolloutOutput(ids, mask, responses, response_mask, logps)

    def _generate(self, prompts: list[list[int]], params: SamplingParams) -> RolloutOutput:
        """Sampling that never computes the same thing twice.

        Rows are grouped into *nodes*: rows whose tokens so far are identical (the n samples of one
        prompt start as one node) share one forward pass and one KV-cache row, since their next-token
        distributions are the same.  Each row still draws its own token from that distribution, so
        sampling is exactly what one forward per row would give; when rows draw different tokens the
        node splits (its cache row is copied), and finished rows drop out of the computation.  The cache
        and the nodes' attention masks are allocated once for the whole rollout (``rollout/kv_cache.py``) and
        nothing is re-indexed on the steps where the nodes stay the same.  Llama-family models run
        through ``rollout/lean_decoder.py`` (the same layers without transformers' per-token glue).
        """
        model = self.model
        ids, mask = left_pad(prompts, self.pad_token_id, self.device)
        bs, P = ids.shape
        eos = self.eos_ids.to(self.device)
        first_row: dict[tuple[int, ...], int] = {}  # distinct prompt -> its first row
        for row, p in enumerate(prompts):
            first_row.setdefault(tuple(p), row)
        node_of_prompt = {p: node for node, p in enumerate(first_row)}
        node_of_row = torch.tensor([node_of_prompt[tuple(p)] for p in prompts], device=self.device)
        node_rows = torch.tensor(list(first_row.values()), device=self.device)
        width = P + params.max_new_tokens
        node_mask = torch.zeros((bs, width), dtype=mask.dtype, device=self.device)  # columns [:length] in use
        node_mask[:len(node_rows), :P] = mask[node_rows]
        length, nodes = P, len(node_rows)
        node_pos = (node_mask[:nodes, :P].cumsum(-1) - 1).clamp(min=0)
        cache = preallocated_cache(bs, width)
        forward = lean_forward(model, rows=bs) or _model_forward(model)
        finished = torch.zeros(bs, dtype=torch.bool, device=self.device)
        out_tokens: list[torch.Tensor] = []
        out_logps: list[torch.Tensor] = []
        temp = params.temperature if params.temperature > 0 else 1.0  # the training pass scores at this temperature
        pad = torch.full((bs,), self.pad_token_id, dtype=torch.long, device=self.device)
        identity = torch.arange(bs, device=self.device)
        draws = row_uniforms(params.seeds, params.max_new_tokens, self.device) if params.seeds else None
        with self.autocast():
            logits = forward(ids[node_rows], node_mask[:nodes, :P], node_pos, cache)
            next_pos = node_pos[:, -1:] + 1
            for t in range(params.max_new_tokens):
                vocab = logits.size(-1)
                rows = None if nodes == bs and bool((node_of_row == identity).all()) else node_of_row
                if draws is None:  # one distribution per node; each row draws from its node's
                    tok = sample_next_token(logits, params, rows=rows)
                else:  # per-row seeds (rollout/seeds.py): the row's own uniform
                    tok = sample_with_uniforms(logits, params, draws[:, t], rows)
                tok = torch.where(finished, pad, tok)
                out_tokens.append(tok)
                if params.logprobs:  # of the tempered, unfiltered distribution: what the training pass scores
                    logp = torch.log_softmax(logits.float() / temp, dim=-1)
                    logp = logp[node_of_row, tok] if rows is not None else logp.gather(-1, tok[:, None]).squeeze(-1)
                    out_logps.append(logp.masked_fill(finished, 0.0))
                finished = finished | (tok[:, None] == eos).any(-1)
                if t + 1 == params.max_new_tokens or bool(finished.all()):
                    break
                # the next nodes: distinct (node, token) pairs of the rows still running
                live = (~finished).nonzero().squeeze(-1)
                keys, inverse = torch.unique(node_of_row[live] * vocab + tok[live], return_inverse=True)
                parent, new_tok = keys // vocab, keys % vocab
                if parent.numel() != nodes or not bool((parent == identity[:nodes]).all()):
                    cache.batch_select_indices(parent)
                    node_mask[:parent.numel(), :length] = node_mask[parent, :length]
                    next_pos = next_pos[parent]
                nodes = parent.numel()
                node_mask[:nodes, length] = 1
                length += 1
                node_of_row = torch.zeros_like(node_of_row)
                node_of_row[live] = inverse
                logits = forward(new_tok[:, None], node_mask[:nodes, :length], next_pos, cache)
                next_pos = next_pos + 1
        responses = torch.stack(out_tokens, dim=1)
        logps = torch.stack(out_logps, dim=1) if out_logps else None
        return RolloutOutput(ids, mask, responses, response_mask_from_eos(responses, eos), logps)


def _model_forward(model: Any) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any], torch.Tensor]:
    """The model's own forward as the rollout calls it: (ids, mask, positions, cache) -> last logits."""
    ck = cache_kwarg(model)

    def forward(ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, cache: Any) -> torch.Tensor:
        return model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1,
                     **{ck: cache}).logits[:, -1]

    return forward


def cache_kwarg(model: Any) -> str:
    """transformers >= 5.2x renamed ``past_key_values`` to ``cache``; support both."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return cache_kwarg_of(type(base))


@functools.cache
def cache_kwarg_of(model_cls: type) -> str:
    """The KV-cache keyword of ``model_cls.forward`` (``cache`` or ``past_key_values``), once per class."""
    import inspect

    return "cache" if "cache" in inspect.signature(model_cls.forward).parameters else "past_key_values"


def response_mask_from_eos(responses: torch.Tensor, eos_ids: torch.Tensor) -> torch.Tensor:
    """1 up to and including the first EOS of each row, 0 after it."""
    is_eos = torch.isin(responses, eos_ids.to(responses.device)).long()
    after_eos = (is_eos.cumsum(dim=1) - is_eos) > 0
    return (~after_eos).long()
