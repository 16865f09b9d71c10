"""Vision-language policies (issue 28): family detection, a tiny Qwen2-VL built from its config in code, log-probs
with the images in the pass (pixel_values, image_grid_thw, M-RoPE), equal across passes and padding."""

from __future__ import annotations

import copy

import pytest
import torch
from PIL import Image, ImageDraw

from rlcockpit.trainer.vision.model import (
    build_tiny_processor,
    build_tiny_vl_model,
    mrope_positions,
    prompt_inputs,
    response_logprobs,
    vl_family,
)


@pytest.fixture(scope="module")
def tiny():
    processor = build_tiny_processor()
    return processor, build_tiny_vl_model(processor)


def _bars(left: int, right: int, size: tuple[int, int] = (84, 84)) -> Image.Image:
    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    draw.rectangle((10, size[1] - left, 30, size[1]), fill="red")
    draw.rectangle((50, size[1] - right, 70, size[1]), fill="blue")
    return im


def _answer(processor, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    ids = processor.tokenizer(text, add_special_tokens=False)["input_ids"]
    return torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long)


def test_family_is_detected_from_the_config() -> None:
    from transformers import LlavaConfig, Qwen2_5_VLConfig, Qwen2Config, Qwen2VLConfig

    assert vl_family(Qwen2VLConfig()) == "qwen2_vl" and vl_family(Qwen2_5_VLConfig()) == "qwen2_vl"
    assert vl_family(Qwen2Config()) is None  # a text model
    with pytest.raises(ValueError, match="'llava' is a vision-language model"):
        vl_family(LlavaConfig())


def test_logprobs_see_the_image(tiny) -> None:
    processor, model = tiny
    resp, mask = _answer(processor, "left")
    with torch.no_grad():
        a = response_logprobs(model, prompt_inputs(processor, ["<image>Taller bar?"], [[_bars(70, 20)]]), resp, mask)
        b = response_logprobs(model, prompt_inputs(processor, ["<image>Taller bar?"], [[_bars(20, 70)]]), resp, mask)
    assert not torch.allclose(a, b, atol=1e-4)  # another picture, another probability


def test_padding_and_a_second_pass_give_the_same_logprobs(tiny) -> None:
    processor, model = tiny
    reference = copy.deepcopy(model)  # the reference policy: same weights, same processor
    wide = _bars(40, 10, size=(112, 56))
    single = prompt_inputs(processor, ["<image>Taller bar?"], [[wide]])
    batch = prompt_inputs(processor, ["<image>Taller bar?", "<image>A much longer question about the bars?"],
                          [[wide], [_bars(5, 60)]])
    assert batch["input_ids"].shape[1] > single["input_ids"].shape[1]  # row 0 is left-padded in the batch
    resp, mask = _answer(processor, "left")
    with torch.no_grad():
        alone = response_logprobs(model, single, resp, mask)
        padded = response_logprobs(model, batch, resp.repeat(2, 1), mask.repeat(2, 1))[:1]
        ref = response_logprobs(reference, single, resp, mask)
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(ref, alone)


def test_mrope_positions_follow_the_image_grid(tiny) -> None:
    processor, model = tiny
    inputs = prompt_inputs(processor, ["<image>Taller?"], [[_bars(40, 10, size=(112, 56))]])
    t, h, w = inputs["image_grid_thw"][0].tolist()
    assert (t, h, w) == (1, 4, 8)  # 56x112 px in 14 px patches
    pos = mrope_positions(model, inputs)[:, 0]
    image = inputs["mm_token_type_ids"][0].bool()
    assert int(image.sum()) == h * w // 4  # merged 2x2
    start = int(pos[0, image][0])  # the image starts where the text before it ends
    assert (pos[1, image] - start).tolist() == [r for r in range(h // 2) for _ in range(w // 2)]  # height: rows
    assert (pos[2, image] - start).tolist()[: w // 2] == list(range(w // 2))  # width: columns
    assert pos[0, image].unique().numel() == 1  # one frame
    after = pos[:, ~image][:, int(image.nonzero()[-1]) - int(image.sum()) + 1:]  # the text after the image
    assert int(after[0, 0]) == start + max(h, w) // 2  # text continues after the image's largest extent


def test_the_update_pass_trains_the_vision_tower(tiny) -> None:
    processor, model = tiny
    model = copy.deepcopy(model).train()
    resp, mask = _answer(processor, "right")
    logp = response_logprobs(model, prompt_inputs(processor, ["<image>Taller?"], [[_bars(10, 60)]]), resp, mask)
    (-logp.sum()).backward()
    grads = [p.grad for p in model.model.visual.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_image_count_must_match_the_placeholders(tiny) -> None:
    processor, _ = tiny
    with pytest.raises(ValueError, match="2 images for 1 image placeholders"):
        prompt_inputs(processor, ["<image>one"], [[_bars(1, 2), _bars(3, 4)]])
