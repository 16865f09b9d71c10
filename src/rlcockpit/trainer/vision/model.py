"""Vision-language policies: family detection, a tiny Qwen2-VL and its processor built in code, log-probs with images.

Why these pieces: a VLM's log-probability of a response depends on the picture, so the rollout's and the update's
(and the reference's) passes must all see the same ``pixel_values`` / ``image_grid_thw`` from the same processor,
and Qwen2-VL's multimodal rotary positions (M-RoPE: three position streams — time, height, width — over image
tokens) must be the same ones in every pass. :func:`response_logprobs` is that one computation; the model's own
``get_rope_index`` builds the M-RoPE position ids from ``input_ids``, ``image_grid_thw`` and the attention mask,
so padding on the left (as the rollout batches) gives the same positions as no padding.

The tiny model mirrors the text demo's (:mod:`rlcockpit.trainer.tiny`): a real ``Qwen2VLForConditionalGeneration``
from a config with random weights (two text layers, a one-block vision tower on 56–112 px images), Qwen2-VL's real
image processor and a character tokenizer with Qwen's vision tokens, so nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from rlcockpit.trainer.tiny import build_char_tokenizer
from rlcockpit.trainer.vision.data import build_messages

VISION_TOKENS = ("<|vision_start|>", "<|image_pad|>", "<|vision_end|>")
#: model_type -> family, for the VL causal LMs transformers ships whose inputs this module builds
VL_FAMILIES = {"qwen2_vl": "qwen2_vl", "qwen2_5_vl": "qwen2_vl"}
VL_CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for part in m['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% if m['role'] == 'assistant' %}<|endoftext|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TINY_MIN_PIXELS, TINY_MAX_PIXELS = 56 * 56, 112 * 112


def vl_family(config: Any) -> str | None:
    """The VL family of a model config (``None``: a text-only model). Unknown VL types are named in the error."""
    model_type = getattr(config, "model_type", None)
    if model_type in VL_FAMILIES:
        return VL_FAMILIES[model_type]
    if getattr(config, "vision_config", None) is not None:
        raise ValueError(f"model_type {model_type!r} is a vision-language model this trainer has no input builder "
                         f"for (known: {', '.join(sorted(VL_FAMILIES))})")
    return None


@dataclass
class VLProcessor:
    """What the rollout and the update need of a processor: its tokenizer (with the chat template) and image
    processor. ``AutoProcessor.from_pretrained(path)`` gives both as attributes; the tiny one is built here.

    Why not ``Qwen2VLProcessor`` itself for the tiny model: in transformers 5 its constructor requires a video
    processor, and the video processors need torchvision, which this CPU install does not have; the text and
    image inputs it would build are the ones :func:`prompt_inputs` builds from these two parts."""

    tokenizer: Any
    image_processor: Any


def build_tiny_processor() -> VLProcessor:
    """The demo's character tokenizer plus Qwen's vision tokens, and Qwen2-VL's image processor at 56–112 px."""
    from transformers import Qwen2VLImageProcessorPil

    tok = build_char_tokenizer()
    tok.add_tokens(list(VISION_TOKENS), special_tokens=True)
    tok.chat_template = VL_CHAT_TEMPLATE
    images = Qwen2VLImageProcessorPil(min_pixels=TINY_MIN_PIXELS, max_pixels=TINY_MAX_PIXELS)
    return VLProcessor(tokenizer=tok, image_processor=images)


def build_tiny_vl_model(processor: Any, *, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0,
                        family: str = "qwen2_vl") -> Any:
    """A ``Qwen2VLForConditionalGeneration`` (``family="qwen2_5_vl"``: a Qwen2.5-VL, with its windowed vision
    blocks and grouped KV heads) with random weights sized for a 2-core CPU."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tok = processor.tokenizer
    ids = dict(zip(VISION_TOKENS, tok.convert_tokens_to_ids(list(VISION_TOKENS))))
    torch.manual_seed(seed)
    if family == "qwen2_5_vl":
        return _tiny_qwen2_5_vl(tok, ids, hidden, layers, heads)
    config = Qwen2VLConfig(
        text_config={"vocab_size": len(tok), "hidden_size": hidden, "intermediate_size": 2 * hidden,
                     "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
                     "max_position_embeddings": 1024, "pad_token_id": tok.pad_token_id,
                     "eos_token_id": tok.eos_token_id, "bos_token_id": None,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                         "mrope_section": [2, 3, 3]}},  # head_dim 16 -> 8 rotary pairs
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": hidden, "num_heads": 2, "mlp_ratio": 2,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
        image_token_id=ids["<|image_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], video_token_id=tok.unk_token_id, tie_word_embeddings=True)
    return Qwen2VLForConditionalGeneration(config).eval()


def _tiny_qwen2_5_vl(tok: Any, ids: dict[str, int], hidden: int, layers: int, heads: int) -> Any:
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    config = Qwen2_5_VLConfig(
        text_config={"vocab_size": len(tok), "hidden_size": hidden, "intermediate_size": 2 * hidden,
                     "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads // 2,
                     "max_position_embeddings": 2048, "pad_token_id": tok.pad_token_id,
                     "eos_token_id": tok.eos_token_id, "bos_token_id": None,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}},
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": hidden,
                       "fullatt_block_indexes": [1], "window_size": 56, "patch_size": 14, "spatial_merge_size": 2,
                       "temporal_patch_size": 2},
        image_token_id=ids["<|image_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], video_token_id=tok.unk_token_id, tie_word_embeddings=True)
    return Qwen2_5_VLForConditionalGeneration(config).eval()


def prompt_inputs(processor: Any, prompts: list[Any], images: list[list[Any]]) -> dict[str, torch.Tensor]:
    """The batch for verl-style prompts (``<image>`` placeholders) and their images, left-padded as the rollout
    batches: ``input_ids``, ``attention_mask``, ``pixel_values``, ``image_grid_thw``. As Qwen2-VL's processor does,
    each ``<|image_pad|>`` of the chat template becomes one token per merged patch of its image
    (``grid_t * grid_h * grid_w / merge_size**2``)."""
    tok, ip = processor.tokenizer, processor.image_processor
    flat = [im for ims in images for im in ims]
    out: dict[str, torch.Tensor] = {}
    counts: list[int] = []
    if flat:
        pix = ip(images=flat, return_tensors="pt")
        out["pixel_values"], out["image_grid_thw"] = pix["pixel_values"], pix["image_grid_thw"]
        merge = ip.merge_size ** 2
        counts = [int(g.prod()) // merge for g in pix["image_grid_thw"]]
    texts, k = [], 0
    for p in prompts:
        text = tok.apply_chat_template(build_messages(p), add_generation_prompt=True, tokenize=False)
        pieces = text.split(VISION_TOKENS[1])
        expanded = pieces[0]
        for piece in pieces[1:]:
            expanded += VISION_TOKENS[1] * counts[k] + piece
            k += 1
        texts.append(expanded)
    if k != len(counts):
        raise ValueError(f"{len(counts)} images for {k} image placeholders in the prompts")
    tok.padding_side = "left"
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    image_id = tok.convert_tokens_to_ids(VISION_TOKENS[1])
    # the processor's mm_token_type_ids: 1 on image tokens, 0 on text (the model builds M-RoPE from it)
    return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
            "mm_token_type_ids": (enc["input_ids"] == image_id).int(), **out}


def response_logprobs(model: Any, inputs: dict[str, torch.Tensor], responses: torch.Tensor,
                      response_mask: torch.Tensor) -> torch.Tensor:
    """Per-token log-probs ``(bs, response_len)`` of ``responses`` after the prompts of ``inputs`` — the images go
    through the vision tower in this pass, and M-RoPE positions come from the model's ``get_rope_index``."""
    input_ids = torch.cat([inputs["input_ids"], responses], dim=1)
    attention = torch.cat([inputs["attention_mask"], response_mask.to(inputs["attention_mask"].dtype)], dim=1)
    extra = {k: inputs[k] for k in ("pixel_values", "image_grid_thw") if k in inputs}
    if "mm_token_type_ids" in inputs:  # response tokens are text
        extra["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(responses,
                                                                                         dtype=torch.int)], dim=1)
    logits = model(input_ids=input_ids, attention_mask=attention, use_cache=False, **extra).logits
    prompt_len = inputs["input_ids"].shape[1]
    logits = logits[:, prompt_len - 1: -1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, responses.unsqueeze(-1)).squeeze(-1)
    return logp * response_mask


def mrope_positions(model: Any, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The M-RoPE position ids ``(3, bs, len)`` the model uses for ``inputs`` (for checks and the dashboard)."""
    pos, _ = model.model.get_rope_index(inputs["input_ids"], inputs["mm_token_type_ids"], inputs.get("image_grid_thw"),
                                        None, attention_mask=inputs["attention_mask"])
    return pos


__all__ = ["VLProcessor", "build_tiny_processor", "build_tiny_vl_model", "mrope_positions", "prompt_inputs",
           "response_logprobs", "vl_family"]
