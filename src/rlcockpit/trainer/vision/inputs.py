"""Images through the trainer: per-row image inputs, row-aligned batch tensors, the VL scoring pass, VL sampling.

The seam: a multimodal row carries its decoded images (``PromptRow.images``) and, once encoded, its processor
outputs (``PromptRow.mm``: ``pixel_values`` and ``image_grid_thw``) next to ``input_ids`` whose one
``<|image_pad|>`` per image is already expanded to one token per merged patch. A step's batch then holds
``pixel_values`` (bs, patches, D) and ``image_grid_thw`` (bs, images, 3), zero-padded per row, so every place
that slices the batch by rows (mini-batches, micro-batches, data-parallel shares) slices the images with it.
:func:`forward_vl` unpads them into the form the model takes, and the model builds its M-RoPE positions with its
own ``get_rope_index`` from ``input_ids``, ``image_grid_thw`` and the attention mask, in the rollout's prefill and
in every log-prob pass (old policy, reference, update) alike: the reference and the rollout see the same
processor's tensors because they are computed once, at load time.

Rollout engines (CPU): the built-in ``hf`` engine samples a VL model with ``model.generate`` (the model keeps
its M-RoPE offsets across the KV cache); its own node-sharing loop and the lean decoder take 1-D positions only,
so a VL model never goes through them. vLLM is given token ids only here (no ``multi_modal_data``): a VL model
with ``rollout.name=vllm``/``sglang`` uses the ``hf`` engine, said in one line (:func:`vl_engine_note`).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

IMAGE_KEYS = ("pixel_values", "image_grid_thw")


def load_vl_processor(path: str, tokenizer: Any) -> Any:
    """The processor of a local VL model directory: its tokenizer and its image processor. The slow
    (PIL) image processor (``use_fast=False``): the fast one needs torchvision, which this install lacks, and
    both give the same ``pixel_values``; ``AutoProcessor`` itself also builds a video processor, which needs
    torchvision too."""
    from transformers import AutoImageProcessor

    from rlcockpit.trainer.vision.model import VLProcessor

    images = AutoImageProcessor.from_pretrained(path, use_fast=False, local_files_only=True)
    return VLProcessor(tokenizer=tokenizer, image_processor=images)


def policy_is_vl(cfg: Any) -> bool:
    """Whether ``actor_rollout_ref.model.path`` is a vision-language model (its config's family; the built-in
    ``tiny`` one is a Qwen2-VL for the vision task), read without loading weights."""
    from pathlib import Path

    from rlcockpit.trainer.vision.model import vl_family

    if cfg.model.path == "tiny":
        return cfg.data.builtin.name == "bars" and not cfg.data.train_files
    path = Path(cfg.model.path).expanduser()
    if not (path / "config.json").is_file():
        return False  # preflight's model check names the missing files
    from transformers import AutoConfig

    return vl_family(AutoConfig.from_pretrained(str(path), local_files_only=True,
                                                trust_remote_code=cfg.model.trust_remote_code)) is not None


def encode_vl_row(processor: Any, row: Any) -> tuple[str, list[int], dict[str, torch.Tensor]]:
    """(display text, input ids with the image tokens expanded, {pixel_values, image_grid_thw}) of one row."""
    from rlcockpit.trainer.vision.data import build_messages
    from rlcockpit.trainer.vision.model import prompt_inputs

    if not row.images:
        raise ValueError(f"{row.where or 'a row'}: a vision-language batch row has no images (data.image_key): "
                         "every row of a multimodal data set needs its image(s), one per <image> placeholder")
    enc = prompt_inputs(processor, [row.prompt], [row.images])
    text = processor.tokenizer.apply_chat_template(build_messages(row.prompt), add_generation_prompt=True,
                                                   tokenize=False)
    return text, enc["input_ids"][0].tolist(), {k: enc[k] for k in IMAGE_KEYS}


def vl_batch(rows: list[Any]) -> dict[str, torch.Tensor]:
    """The rows' image tensors, zero-padded per row (``{}`` for text rows). A row without images in a
    multimodal batch is an error naming it: its text alone would train on a question about a missing picture."""
    if not any(getattr(r, "mm", None) for r in rows):
        return {}
    missing = next((r for r in rows if not getattr(r, "mm", None)), None)
    if missing is not None:
        raise ValueError(f"{missing.where or 'a row'}: no images in a multimodal batch (data.image_key)")
    pix = [r.mm["pixel_values"] for r in rows]
    grids = [r.mm["image_grid_thw"] for r in rows]
    pv = torch.zeros(len(rows), max(p.shape[0] for p in pix), pix[0].shape[1], dtype=pix[0].dtype)
    gr = torch.zeros(len(rows), max(g.shape[0] for g in grids), 3, dtype=torch.long)
    for i, (p, g) in enumerate(zip(pix, grids)):
        pv[i, : p.shape[0]] = p
        gr[i, : g.shape[0]] = g
    return {"pixel_values": pv, "image_grid_thw": gr}


def model_inputs(model: Any, mm: dict[str, torch.Tensor], input_ids: torch.Tensor) -> dict[str, torch.Tensor]:
    """The padded per-row tensors as the model takes them: the rows' patches and grids concatenated in row
    order, and ``mm_token_type_ids`` (1 on image tokens) from which the model builds M-RoPE."""
    grids, pix = mm["image_grid_thw"], mm["pixel_values"]
    used = grids.prod(-1) > 0  # (bs, images): real images (the padding grids are 0)
    patches = (grids.prod(-1) * used).sum(-1)  # (bs,)
    device = input_ids.device
    pixel_values = torch.cat([pix[i, : int(n)] for i, n in enumerate(patches.tolist())]).to(device)
    image_grid_thw = grids[used].to(device)
    image_id = config_of(model).image_token_id
    return {"pixel_values": pixel_values, "image_grid_thw": image_grid_thw,
            "mm_token_type_ids": (input_ids == image_id).int()}


def config_of(model: Any) -> Any:
    """The HF config of a model (through a PEFT wrapper); None for a module without one."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return getattr(base, "config", None)


def forward_vl(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int, *,
               mm: dict[str, torch.Tensor], temperature: float = 1.0, with_entropy: str = "none",
               sum_pi_squared: bool = False, full_log_probs: bool = False, **_: Any) -> dict[str, torch.Tensor]:
    """:func:`~rlcockpit.trainer.models.forward_policy` for a VL model: one pass over whole rows with their
    images (no prefix sharing or packing: those build 1-D positions), scored the same way."""
    from rlcockpit.trainer.models import score_logits

    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                   logits_to_keep=response_len + 1, **model_inputs(model, mm, input_ids)).logits[:, :-1]
    return score_logits(logits, input_ids[:, -response_len:], temperature, with_entropy,
                        sum_pi_squared=sum_pi_squared, full_log_probs=full_log_probs)


def vl_scoring_pass(batch: dict[str, torch.Tensor]) -> Any:
    """The log-prob pass for a batch with images (:func:`forward_vl` bound to its rows' images); None without."""
    if "image_grid_thw" not in batch:
        return None
    return functools.partial(forward_vl, mm={k: batch[k] for k in IMAGE_KEYS})


def generate_vl(model: Any, ids: torch.Tensor, mask: torch.Tensor, mm: dict[str, torch.Tensor], params: Any,
                pad_token_id: int, eos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(responses, their log-probs or None) sampled by ``model.generate`` with the images; the log-probs are
    of the tempered, unfiltered distribution, what the training pass scores (as the built-in loop's).

    The image and video placeholder tokens are never sampled: the model counts them in ``input_ids`` to place
    the image features, so one in a response would break every later pass over that row."""
    sample = not params.greedy
    config = config_of(model)
    knobs: dict[str, Any] = {"do_sample": sample, "suppress_tokens": [config.image_token_id, config.video_token_id]}
    if sample:
        knobs.update(temperature=params.temperature or 1.0, top_p=params.top_p,
                     top_k=params.top_k if params.top_k > 0 else None)
    out = model.generate(input_ids=ids, attention_mask=mask, **model_inputs(model, mm, ids),
                         max_new_tokens=params.max_new_tokens, pad_token_id=pad_token_id, eos_token_id=eos.tolist(),
                         output_logits=params.logprobs, return_dict_in_generate=True, **knobs)
    responses = out.sequences[:, ids.shape[1]:]
    if not params.logprobs:
        return responses, None
    temp = params.temperature if params.temperature > 0 else 1.0
    logits = torch.stack(out.logits, dim=1).float() / temp
    return responses, torch.log_softmax(logits, -1).gather(-1, responses[..., None]).squeeze(-1)


def vl_engine_note(name: str) -> str:
    return (f"[rlcockpit] actor_rollout_ref.rollout.name={name}: the {name} engine here is given token ids only "
            "(no multi_modal_data), so this vision-language model samples with the built-in hf engine "
            "(model.generate with its images; same sampling settings)")


__all__ = ["IMAGE_KEYS", "encode_vl_row", "forward_vl", "generate_vl", "load_vl_processor", "model_inputs",
           "vl_batch", "vl_engine_note",
           "vl_scoring_pass"]
