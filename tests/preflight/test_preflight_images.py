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
    assert "vision-language policy is not supported" in images.detail
    assert results["data: files and rows"].status == "pass"  # the other rows load
