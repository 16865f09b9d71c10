"""Preflight on verl multimodal data (issue 28): the image column is checked, rows left out are named, and a run
that would need a vision-language policy fails preflight instead of training on the text alone."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from rlcockpit.preflight.checks import check_data, load_cfg


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, "green").save(buf, format="PNG")
    return buf.getvalue()


def _row(i: int, image: bytes) -> dict:
    return {"data_source": "hiyouga/geometry3k", "prompt": [{"role": "user", "content": "<image>Find x."}],
            "images": [{"bytes": image, "path": None}], "reward_model": {"style": "rule", "ground_truth": str(i)}}


def test_image_rows_are_checked_and_fail_preflight(tmp_path: Path) -> None:
    path = tmp_path / "geo.parquet"
    pq.write_table(pa.Table.from_pylist([_row(0, _png((84, 56))), _row(1, b"not an image"), _row(2, _png((28, 28)))]),
                   path)
    cfg = load_cfg(overrides=[f"data.train_files={path}", "model.path=tiny"], log=lambda *_: None)
    results = {r.name: r for r in check_data(cfg)}
    images = results["data: images"]
    assert images.status == "fail" and images.data == {"rows_with_images": 2, "rejected_rows": 1,
                                                       "largest_image_pixels": 84 * 56}
    assert f"{path}: row 1: column 'images' image 0: not a decodable image" in images.detail
    assert "model.path='tiny' is a text-only model" in images.detail
    assert results["data: files and rows"].status == "pass"  # the other rows load


def test_image_rows_pass_with_a_vision_language_model(tmp_path: Path) -> None:
    from rlcockpit.trainer.vision.model import build_tiny_processor, build_tiny_vl_model

    processor = build_tiny_processor()
    model_dir = tmp_path / "vl"
    build_tiny_vl_model(processor).save_pretrained(model_dir)
    processor.tokenizer.save_pretrained(model_dir)
    processor.image_processor.save_pretrained(model_dir)
    path = tmp_path / "geo.parquet"
    pq.write_table(pa.Table.from_pylist([_row(0, _png((84, 56))), _row(1, b"not an image")]), path)
    cfg = load_cfg(overrides=[f"data.train_files={path}", f"model.path={model_dir}"], log=lambda *_: None)
    images = {r.name: r for r in check_data(cfg)}["data: images"]
    assert images.status == "warn" and "a vision-language policy" in images.detail  # warn: row 1 left out
    assert f"{path}: row 1: column 'images'" in images.detail


def test_the_vl_memory_estimate_counts_the_vision_tower_and_the_pixel_budget() -> None:
    from rlcockpit.preflight.memory import ModelShape, estimate_memory
    from rlcockpit.preflight.runner import image_patches_for, model_shape_for, train_shape_for
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.vision.model import build_tiny_processor, build_tiny_vl_model

    for family in ("qwen2_vl", "qwen2_5_vl"):  # the parameter count from config.json alone
        model = build_tiny_vl_model(build_tiny_processor(), family=family)
        shape = ModelShape.from_hf_config(model.config.to_dict())
        assert shape.vision is not None and shape.model_type == family
        assert abs(shape.n_params / sum(p.numel() for p in model.parameters()) - 1) < 0.01, family
    cfg = load_config(preset="vision-grpo", log=None)
    shape = model_shape_for(cfg)
    patches = image_patches_for(cfg, shape)
    assert patches == 112 * 112 // 14**2  # the tiny processor's max_pixels
    train = train_shape_for(cfg, "cpu", 29, patches)
    assert train.prompt_length == 29 + patches // 4 and not train.share_prefix  # VL passes run whole rows
    small = estimate_memory(shape, train_shape_for(cfg, "cpu", 29, patches // 4))
    est = estimate_memory(shape, train)
    assert est.components["vision_activations"] > small.components["vision_activations"] > 0  # more pixels, more
