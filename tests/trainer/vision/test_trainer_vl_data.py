"""verl's multimodal data (issue 28): geo3k-schema parquet written with pyarrow, images decoded and checked per cell,
a bad cell rejects its row alone (file, row, column and image named), verl's geo3k reward."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from geo3k_parquet import write_geo3k
from PIL import Image

from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import DataError, load_datasets, load_rows
from rlcockpit.trainer.reward.score import default_compute_score
from rlcockpit.trainer.vision.data import build_messages, max_pixels_of

INSTRUCTION = (r"You FIRST think about the reasoning process as an internal monologue and then provide the final "
               r"answer. The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST "
               r"BE put in \boxed{}.")


def _png(size: tuple[int, int] = (56, 56), colour: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def _row(i: int, images: list[dict], text: str = "<image>Find x.") -> dict:
    """One row as verl's examples/data_preprocess/geo3k.py writes it."""
    return {"data_source": "hiyouga/geometry3k", "prompt": [{"role": "user", "content": f"{text} {INSTRUCTION}"}],
            "images": images, "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i)},
            "extra_info": {"split": "train", "index": i, "answer": str(i), "question": text}}




def test_geo3k_schema_parquet_loads_with_its_images(tmp_path: Path) -> None:
    pic = tmp_path / "pic.png"
    pic.write_bytes(_png((64, 32), "blue"))
    path = write_geo3k(tmp_path / "train.parquet", [
        _row(0, [{"bytes": _png(), "path": None}]),
        _row(1, [{"bytes": None, "path": str(pic)}, {"bytes": _png((28, 28)), "path": None}],
             text="<image>and<image>Compare."),
    ])
    rows = load_rows(str(path))
    assert [len(r.images) for r in rows] == [1, 2]
    assert rows[1].images[0].size == (64, 32) and rows[1].images[0].getpixel((0, 0)) == (0, 0, 255)
    assert rows[0].ground_truth == "0" and rows[0].data_source == "hiyouga/geometry3k"
    parts = build_messages(rows[1].prompt)[0]["content"]  # verl's _build_messages split
    assert [p["type"] for p in parts[:4]] == ["image", "text", "image", "text"] and parts[1]["text"] == "and"


def test_a_bad_image_cell_rejects_its_row_alone(tmp_path: Path, capsys) -> None:
    path = write_geo3k(tmp_path / "train.parquet", [
        _row(0, [{"bytes": _png(), "path": None}]),
        _row(1, [{"bytes": b"\x89PNG but truncated", "path": None}]),
        _row(2, [{"bytes": _png((600, 600)), "path": None}]),
        _row(3, [{"bytes": _png(), "path": None}], text="No placeholder."),
        _row(4, [{"bytes": None, "path": str(tmp_path / "gone.png")}]),
        _row(5, [{"bytes": _png(), "path": None}]),
    ])
    rows = load_rows(str(path), max_pixels=100_000)
    assert [r.extra_info["index"] for r in rows] == [0, 5]  # the rest is kept
    out = capsys.readouterr().out
    assert f"{path}: row 1: column 'images' image 0: not a decodable image" in out
    assert f"{path}: row 2: column 'images' image 0: 600x600 = 360000 pixels is more than max_pixels=100000" in out
    assert f"{path}: row 3: column 'images' holds 1 image(s) but the prompt has 0 <image> placeholder(s)" in out
    assert f"{path}: row 4: column 'images' image 0: not a decodable image (FileNotFoundError" in out


def test_data_image_key_names_the_column_and_image_rows_are_not_trained_on_as_text(tmp_path: Path) -> None:
    row = _row(0, [{"bytes": _png(), "path": None}])
    row["pictures"] = row.pop("images")
    path = tmp_path / "renamed.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    cfg = load_config(overrides=[f"data.train_files={path}", "data.image_key=pictures"])
    assert cfg.data.image_key == "pictures"
    (loaded,) = load_rows(str(path), cfg.data)
    assert len(loaded.images) == 1
    with pytest.raises(DataError, match="rows with images .* need a vision-language policy"):
        load_datasets(cfg.data, tokenizer=None)


def test_max_pixels_comes_from_the_processor() -> None:
    from transformers import Qwen2VLImageProcessor

    assert max_pixels_of(Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=112 * 112)) == 112 * 112
    assert max_pixels_of(object()) == 16384 * 28 * 28  # qwen-vl-utils' default, as verl


@pytest.mark.parametrize(("response", "truth", "score"), [
    (r"<think>angles sum</think> so x = \boxed{3}", "3", 1.0),
    (r"<think>r</think> \boxed{\frac{1}{2}}", "0.5", 1.0),  # same value in another form: math-verified
    (r"x = \boxed{3}", "3", 0.9),  # right, but no <think> block: the format part is lost
    (r"<think>r</think> \boxed{4}", "3", 0.1),  # wrong answer in the right format
    ("3", "3", 0.0),  # no boxed answer
])
def test_geo3k_reward_as_verl(response: str, truth: str, score: float) -> None:
    assert default_compute_score("hiyouga/geometry3k", response, truth) == pytest.approx(score)
