"""Shared test inputs for the trainer's metric and loss tests: a tiny policy, a batch of mixed response lengths,
and a model-free engine that echoes known answers."""

from __future__ import annotations

import torch

from rlcockpit.trainer.config import TinyModelConfig
from rlcockpit.trainer.rollout.engine import RolloutOutput, left_pad
from rlcockpit.trainer.tiny import build_char_tokenizer, build_tiny_model

PROMPTS = ["<|user|>12+3=<|assistant|>", "<|user|>7+45=<|assistant|>"]


def tiny_policy(seed: int = 3):  # noqa: ANN201
    """(char tokenizer, 1-layer tiny model): the smallest policy the trainer's code paths accept."""
    tok = build_char_tokenizer()
    return tok, build_tiny_model(tok, TinyModelConfig(hidden_size=32, num_layers=1, num_heads=2,
                                                      intermediate_size=64), seed=seed)


def mixed_length_batch(tok, n: int = 4, T: int = 5, seed: int = 0) -> dict[str, torch.Tensor]:  # noqa: ANN001
    """Two prompts x n responses of very different lengths (token-mean and the seq-mean modes disagree)."""
    g = torch.Generator().manual_seed(seed)
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS for _ in range(n)]
    prompt_ids, prompt_mask = left_pad(rows, tok.pad_token_id, "cpu")
    responses = torch.randint(10, len(tok), (len(rows), T), generator=g)
    lengths = torch.tensor([1, 5, 2, 5, 3, 1, 4, 2][: len(rows)])
    resp_mask = (torch.arange(T)[None] < lengths[:, None]).long()
    responses = torch.where(resp_mask.bool(), responses, torch.full_like(responses, tok.pad_token_id))
    return {"input_ids": torch.cat([prompt_ids, responses], 1), "attention_mask": torch.cat([prompt_mask, resp_mask], 1),
            "responses": responses, "response_mask": resp_mask,
            "advantages": torch.randn(len(rows), 1, generator=g).expand(-1, T).contiguous()}


class ByteTokenizer:
    """Token ids are bytes: responses decode to the text the engine echoed."""

    pad_token_id = 0

    def batch_decode(self, rows, skip_special_tokens=True):  # noqa: ANN001, ANN201
        return [bytes(r).decode() for r in rows]


class EchoEngine:
    """Answers each prompt with the text it carries after ``->`` (known response lengths, no model needed)."""

    def generate(self, prompts, params):  # noqa: ANN001, ANN201
        answers = [bytes(p).decode().split("->")[1].encode() for p in prompts]
        width = max(len(a) for a in answers)
        responses = torch.tensor([list(a) + [0] * (width - len(a)) for a in answers])
        mask = torch.tensor([[1] * len(a) + [0] * (width - len(a)) for a in answers])
        prompt_ids = torch.ones(len(prompts), 1, dtype=torch.long)
        return RolloutOutput(prompt_ids, torch.ones_like(prompt_ids), responses, mask)
