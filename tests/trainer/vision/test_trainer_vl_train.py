"""A vision-language policy through the trainer (issue 28): the rollout samples with the images, the old-policy,
reference and update passes score with the same images, a prompt's ``<image>`` expands to its image tokens, a row
without its images is an error naming it, and the built-in vision task learns under GRPO."""

from __future__ import annotations

import copy
import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import PromptRow, load_datasets
from rlcockpit.trainer.rollout.engine import HFRolloutEngine, SamplingParams
from rlcockpit.trainer.vision.inputs import encode_vl_row, vl_batch, vl_scoring_pass
from rlcockpit.trainer.vision.model import VISION_TOKENS, build_tiny_processor, build_tiny_vl_model
from rlcockpit.trainer.vision.task import draw_bars


@pytest.fixture(scope="module")
def tiny():
    processor = build_tiny_processor()
    return processor, build_tiny_vl_model(processor)


def _row(processor, text: str, images: list, where: str = "test: row 0") -> PromptRow:
    row = PromptRow(prompt=[{"role": "user", "content": text}], ground_truth="red", data_source="bars",
                    images=images, where=where)
    row.text, row.input_ids, row.mm = encode_vl_row(processor, row)
    return row


def test_rollout_and_every_logprob_pass_agree_with_the_images(tiny) -> None:
    processor, model = tiny
    tok = processor.tokenizer
    rows = [_row(processor, "<image>Which bar is taller?", [draw_bars(40, 10, ("red", "blue"))]),
            _row(processor, "<image>Taller?", [Image.new("RGB", (112, 56), "green")], "test: row 1")]
    rows = [r for r in rows for _ in range(4)]  # GRPO groups
    mm = vl_batch(rows)
    assert mm["pixel_values"].shape[:2] == (8, 32) and mm["image_grid_thw"][0].tolist() == [[1, 4, 4]]
    engine = HFRolloutEngine(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                             device=torch.device("cpu"))
    torch.manual_seed(0)
    out = engine.generate([r.input_ids for r in rows], SamplingParams(max_new_tokens=6, logprobs=True), mm=mm)
    batch = {"input_ids": out.input_ids, "attention_mask": out.attention_mask, **mm}
    score = vl_scoring_pass(batch)
    T = out.responses.shape[1]
    with torch.no_grad():
        old = score(model, batch["input_ids"], batch["attention_mask"], T)["log_probs"] * out.response_mask
        ref = score(copy.deepcopy(model), batch["input_ids"], batch["attention_mask"], T)["log_probs"]
    # the sampler's log-probs (KV cache, M-RoPE offsets kept by generate) = the full pass's, row by row
    torch.testing.assert_close(old, out.rollout_log_probs, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(ref * out.response_mask, old)
    # a mini-batch of rows (as the update slices the batch) scores the same as the whole batch
    idx = torch.tensor([5, 1])
    sub = {k: v[idx] for k, v in batch.items()}
    with torch.no_grad():
        part = vl_scoring_pass(sub)(model, sub["input_ids"], sub["attention_mask"], T)["log_probs"]
    torch.testing.assert_close(part * out.response_mask[idx], old[idx])
    # another picture, another probability: the images are in the pass
    other = {**batch, "pixel_values": batch["pixel_values"].flip(0), "image_grid_thw": batch["image_grid_thw"]}
    with torch.no_grad():
        swapped = vl_scoring_pass(other)(model, batch["input_ids"], batch["attention_mask"], T)["log_probs"]
    assert not torch.allclose(swapped[0] * out.response_mask[0], old[0], atol=1e-4)


def test_the_rollout_never_samples_an_image_placeholder(tiny) -> None:
    """A response holding ``<|image_pad|>`` would break every later pass over its row (the model counts the
    placeholders in ``input_ids`` to place the image features): a policy that prefers it still never emits it."""
    processor, model = tiny
    tok = processor.tokenizer
    pad = tok.convert_tokens_to_ids(VISION_TOKENS[1])
    rows = [_row(processor, "<image>Which?", [draw_bars(30, 12, ("red", "blue"))])] * 4
    mm = vl_batch(rows)
    boost = model.lm_head.register_forward_hook(lambda _m, _i, out: out.index_add(
        -1, torch.tensor([pad]), torch.full((*out.shape[:-1], 1), 100.0)))
    try:
        engine = HFRolloutEngine(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                 device=torch.device("cpu"))
        out = engine.generate([r.input_ids for r in rows], SamplingParams(max_new_tokens=4), mm=mm)
    finally:
        boost.remove()
    assert not (out.responses == pad).any()
    batch = {"input_ids": out.input_ids, "attention_mask": out.attention_mask, **mm}
    with torch.no_grad():  # and the update's pass over these rows runs
        vl_scoring_pass(batch)(model, batch["input_ids"], batch["attention_mask"], 4)


def test_the_image_placeholder_expands_to_one_token_per_merged_patch(tiny) -> None:
    processor, _ = tiny
    pad = processor.tokenizer.convert_tokens_to_ids(VISION_TOKENS[1])
    one = _row(processor, "<image>What?", [Image.new("RGB", (112, 56), "red")])
    assert one.input_ids.count(pad) == 1 * 4 * 8 // 4  # 56x112 px: 4x8 patches of 14 px, merged 2x2
    two = _row(processor, "<image> and <image>?", [Image.new("RGB", (56, 56)), Image.new("RGB", (112, 112))])
    assert two.input_ids.count(pad) == 4 + 16
    assert two.mm["image_grid_thw"].tolist() == [[1, 4, 4], [1, 8, 8]]


def test_a_row_without_its_images_is_an_error_naming_it(tiny, tmp_path: Path) -> None:
    processor, _ = tiny
    with pytest.raises(ValueError, match="geo.parquet: row 3: a vision-language batch row has no images"):
        _row(processor, "<image>Find x.", [], "geo.parquet: row 3")
    ok = _row(processor, "<image>Find x.", [Image.new("RGB", (56, 56))])
    text_only = PromptRow(prompt="Find x.", ground_truth="1", data_source="bars", where="geo.parquet: row 7")
    with pytest.raises(ValueError, match="geo.parquet: row 7: no images in a multimodal batch"):
        vl_batch([ok, text_only])
    # in a file: the row whose image cell is empty is named, through the trainer's loader
    buf = io.BytesIO()
    Image.new("RGB", (56, 56), "red").save(buf, format="PNG")
    rows = [{"data_source": "bars", "prompt": [{"role": "user", "content": "<image>Which?"}],
             "images": [{"bytes": buf.getvalue(), "path": None}] if i != 1 else None,
             "reward_model": {"style": "rule", "ground_truth": "red"}} for i in range(3)]
    path = tmp_path / "geo.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    cfg = load_config(overrides=[f"data.train_files={path}", "data.max_prompt_length=64"])
    with pytest.raises(ValueError, match=f"{path}: row 1: a vision-language batch row has no images"):
        load_datasets(cfg.data, processor.tokenizer, processor)


def test_a_vl_model_with_an_engine_without_images_samples_with_hf(tiny) -> None:
    from rlcockpit.trainer.state import make_engine

    processor, model = tiny
    cfg = load_config(overrides=["actor_rollout_ref.rollout.name=vllm"])
    said: list[str] = []
    engine = make_engine(cfg, model, processor.tokenizer, torch.device("cpu"), None, said.append)
    assert isinstance(engine, HFRolloutEngine)
    assert any("token ids only" in line and "hf engine" in line for line in said)


def _vision_cfg(tmp_path: Path, *extra: str):
    return load_config(preset="vision-grpo", overrides=[
        f"trainer.rlcockpit_dir={tmp_path / 'store'}", f"trainer.default_local_dir={tmp_path / 'ckpt'}",
        "trainer.num_threads=1", *extra])


def test_a_vision_grpo_step_runs_through_the_loop(tmp_path: Path, monkeypatch) -> None:
    from rlcockpit.trainer.loop import train

    monkeypatch.setenv("RLCOCKPIT_CACHE", str(tmp_path / "cache"))
    cfg = _vision_cfg(tmp_path, "trainer.total_training_steps=2", "trainer.test_freq=2", "data.builtin.train_size=64",
                      "data.builtin.val_size=16", "actor_rollout_ref.model.tiny.sft_steps=4",
                      "actor_rollout_ref.model.tiny.sft_slip_steps=0", "actor_rollout_ref.actor.use_kl_loss=true",
                      "actor_rollout_ref.actor.ppo_mini_batch_size=4", "data.train_batch_size=8",
                      "trainer.log_samples_freq=1")
    result = train(cfg, log=lambda *_: None)
    assert result.status == "finished" and result.steps == 2
    import rlcockpit

    run = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id)
    hist = run.history()
    assert hist["actor/kl_loss"].notna().sum() == 2  # the reference model scored the images too
    assert hist["val-core/bars/acc/mean@1"].notna().sum() == 2  # before training and at step 2
    assert (tmp_path / "cache").is_dir() and any((tmp_path / "cache").iterdir())  # the warm-up is cached
    samples = run.samples(step=1)  # each sample carries its prompt's picture, stored content-addressed
    assert samples and all(len(s["images"]) == 1 for s in samples)
    picture = rlcockpit.Api(str(tmp_path / "store")).image(samples[0]["images"][0])
    assert picture.size == (56, 56)


@pytest.mark.slow
def test_vision_grpo_learns_on_held_out_pictures(tmp_path: Path, monkeypatch) -> None:
    """The vision demo, shortened: 40 GRPO steps (the preset runs 100) must lift held-out greedy accuracy."""
    from rlcockpit.trainer.loop import train

    monkeypatch.setenv("RLCOCKPIT_CACHE", str(tmp_path / "cache"))
    result = train(_vision_cfg(tmp_path, "trainer.total_training_steps=40", "trainer.test_freq=40"),
                   log=lambda *_: None)
    (_, before), (_, after) = result.val[0], result.val[-1]
    assert before <= 0.75 and after - before >= 0.15, result.val
