"""``actor_rollout_ref.model.use_remove_padding``: score rows packed without their padding.

A step's rows are left-padded prompts followed by right-padded responses, so a batch of short and long
samples spends much of every matmul on padding.  Here each (distinct) row's real tokens are packed
first-fit into bins no wider than the padded row, with ``position_ids`` restarting at 0 for every row
and no 2-D attention mask: Hugging Face models then treat each bin as several independent sequences
(``masking_utils.find_packed_sequence_indices``: a block-diagonal causal mask for sdpa/eager, varlen
kernels for flash-attention).  Only the hidden states that predict response tokens go through the
output layer.  The log-probs are those of the padded path (same positions, same attention), checked
to 1e-5 in tests/trainer/distributed/test_trainer_distributed_packing.py.

Bins are as wide as the padded batch, so attention never costs more than in the padded path while
the token count drops to the real tokens plus each bin's tail.  Models whose logits are more than the
output layer of the last hidden state (logit soft-capping or scaling) take the padded path instead.

Packing runs every row's prompt; the padded path's shared-prefix pass (``models.forward_policy``) runs
each distinct prompt once.  A GRPO batch (n samples per prompt, answers of similar length) is often
cheaper that way, so each batch takes whichever of the two runs fewer tokens - the same log-probs
either way.  The response tokens' log-probs come through the chunked output layer
(``update/fused_logprobs.py``) where the model allows it, as on the padded path.
"""

from __future__ import annotations

from typing import Any

import torch

from rlcockpit.trainer.models import (
    checkpointing_on,
    dedupe_rows,
    dropout_active,
    forward_policy,
    score_logits,
)
from rlcockpit.trainer.update.fused_logprobs import output_head, token_logprobs

# config attributes that transform the logits after the output layer: packing skips such models
_LOGIT_TRANSFORMS = ("final_logit_softcapping", "logit_scale", "logits_scaling", "output_multiplier_scale")


def output_parts(model: Any) -> tuple[Any, Any] | None:
    """(decoder, output layer) of a causal LM whose logits are ``output_layer(decoder(...))``, else None."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    cfg = getattr(base, "config", None)
    if any(getattr(cfg, k, None) not in (None, 1, 1.0) for k in _LOGIT_TRANSFORMS):
        return None
    get_decoder, get_head = getattr(base, "get_decoder", None), getattr(base, "get_output_embeddings", None)
    if get_decoder is None or get_head is None:
        return None
    decoder, head = get_decoder(), get_head()
    if decoder is None or head is None or decoder is base:
        return None
    return decoder, head


def pack_rows(lengths: list[int], width: int) -> tuple[list[int], list[int], int]:
    """First-fit decreasing: (bin of each row, its offset in the bin, number of bins); bins hold <= ``width``."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    fill: list[int] = []
    bin_of, start = [0] * len(lengths), [0] * len(lengths)
    for i in order:
        b = next((b for b, used in enumerate(fill) if used + lengths[i] <= width), len(fill))
        if b == len(fill):
            fill.append(0)
        bin_of[i], start[i] = b, fill[b]
        fill[b] += lengths[i]
    return bin_of, start, len(fill)


def packed_inputs(input_ids: torch.Tensor, attention_mask: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(packed ids (bins, W), position_ids (bins, W), flat packed index of every real token (bs, L) or -1).

    Each bin's tail after its last row is a sequence of its own (positions from 0), so it attends to
    nothing real; its outputs are never read."""
    real = attention_mask.bool()
    lengths = real.sum(-1).tolist()
    bin_of, start, n_bins = pack_rows(lengths, input_ids.size(1))
    width = max((start[i] + lengths[i] for i in range(len(lengths))), default=1) or 1
    ids = torch.zeros((n_bins, width), dtype=input_ids.dtype, device=input_ids.device)
    pos = torch.arange(width, device=input_ids.device).repeat(n_bins, 1)
    used = [0] * n_bins
    for i, n in enumerate(lengths):
        b, s = bin_of[i], start[i]
        ids[b, s: s + n] = input_ids[i][real[i]]
        pos[b, s: s + n] = torch.arange(n, device=input_ids.device)
        used[b] = max(used[b], s + n)
    for b, u in enumerate(used):  # the tail restarts at 0: its own sequence
        pos[b, u:] = torch.arange(width - u, device=input_ids.device)
    offset = torch.tensor([bin_of[i] * width + start[i] for i in range(len(lengths))], device=input_ids.device)
    flat = torch.where(real, offset[:, None] + real.long().cumsum(-1) - 1, torch.full_like(offset[:, None], -1))
    return ids, pos, flat


def sharing_beats_packing(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                          share_prefix: bool) -> bool:
    """Whether the shared-prefix pass would run fewer tokens than packing these (distinct) rows would."""
    prompt_len = input_ids.size(1) - response_len
    if not share_prefix or prompt_len <= 0 or dropout_active(model) or (model.training and checkpointing_on(model)):
        return False
    key = torch.cat([input_ids[:, :prompt_len], attention_mask[:, :prompt_len].to(input_ids.dtype)], dim=1)
    shared = torch.unique(key, dim=0).size(0) * prompt_len + input_ids.size(0) * (response_len - 1)
    # the padded path shares only when that saves >= 10% of its tokens (models._shared_prefix_states)
    return shared < int(attention_mask.sum()) and shared <= 0.9 * input_ids.numel()


def forward_packed(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int,
                   *, temperature: float = 1.0, with_entropy: str = "none", share_prefix: bool = True,
                   sum_pi_squared: bool = False, full_log_probs: bool = False) -> dict[str, torch.Tensor]:
    """:func:`~rlcockpit.trainer.models.forward_policy`'s result, computed on packed rows.

    Identical rows are scored once (unless dropout is on), as in the padded path; positions that do not
    predict a real response token get 0 (they are masked everywhere downstream)."""
    parts = output_parts(model)
    kwargs: dict[str, Any] = {"temperature": temperature, "with_entropy": with_entropy, "share_prefix": share_prefix,
                              "sum_pi_squared": sum_pi_squared, "full_log_probs": full_log_probs}
    if parts is None:
        return forward_policy(model, input_ids, attention_mask, response_len, **kwargs)
    row_of, rows_in, mask_in = None, input_ids, attention_mask
    if not dropout_active(model):
        input_ids, attention_mask, row_of = dedupe_rows(input_ids, attention_mask)
    if sharing_beats_packing(model, input_ids, attention_mask, response_len, share_prefix):
        return forward_policy(model, rows_in, mask_in, response_len, **kwargs)
    decoder, head = parts
    ids, pos, flat = packed_inputs(input_ids, attention_mask)
    hidden = decoder(input_ids=ids, position_ids=pos, attention_mask=None, use_cache=False).last_hidden_state
    # response token t of row i is predicted by the real token before it (column P + t - 1)
    P = input_ids.size(1) - response_len
    resp = attention_mask[:, P:].bool() & (flat[:, P - 1: -1] >= 0) if P > 0 else attention_mask.bool() & False
    rows, cols = resp.nonzero(as_tuple=True)
    states = hidden.reshape(-1, hidden.size(-1))[flat[rows, P - 1 + cols]]
    labels = input_ids[rows, P + cols]
    fused = None if (sum_pi_squared or full_log_probs) else output_head(model)
    if fused is not None:  # log-probs from the hidden states in chunks: no (tokens, vocab) logits held
        scored = token_logprobs(states[None], fused[1], labels[None], temperature=temperature,
                                with_entropy=with_entropy)
    else:
        scored = score_logits(head(states)[None], labels[None], temperature, with_entropy,
                        sum_pi_squared=sum_pi_squared, full_log_probs=full_log_probs)
    shape = (input_ids.size(0), response_len)
    out = {}
    for key, value in scored.items():
        full = value.new_zeros((*shape, *value.shape[2:]))
        full[rows, cols] = value[0]
        out[key] = full
    return out if row_of is None else {k: v[row_of] for k, v in out.items()}
