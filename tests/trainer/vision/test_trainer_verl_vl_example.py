"""verl's multimodal GRPO launch (issue 28): examples/grpo_trainer/run_qwen2_5_vl-7b.sh, kept verbatim in
fixtures/verl/, runs through ``python -m rlcockpit.trainer.main_ppo`` with only paths and sizes changed: geo3k
parquet files written in code with verl's schema (examples/data_preprocess/geo3k.py) under ``$HOME/data/geo3k/``,
a tiny Qwen2.5-VL built from its config for ``Qwen/Qwen2.5-VL-7B-Instruct``, 2 steps."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from geo3k_parquet import write_geo3k
from PIL import Image, ImageDraw
from verl_scripts import replace_values, script_overrides

import rlcockpit

SCRIPT = "grpo_run_qwen2_5_vl-7b.sh"
INSTRUCTION = (r"You FIRST think about the reasoning process as an internal monologue and then provide the final "
               r"answer. The reasoning process MUST BE enclosed within <think> </think> tags. The final answer MUST "
               r"BE put in \boxed{}.")


def _geo3k_rows(n: int, seed: int, split: str) -> list[dict]:
    """Rows as verl's examples/data_preprocess/geo3k.py writes them: a drawn triangle per problem."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        x = rng.randint(2, 20)
        im = Image.new("RGB", (rng.choice([56, 84, 112]), 56), "white")
        ImageDraw.Draw(im).polygon([(4, 50), (50, 50), (20, 6)], outline="black")
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        problem = f"<image>Find x. The side is {x} and the angle is 60."
        rows.append({"data_source": "hiyouga/geometry3k",
                     "prompt": [{"role": "user", "content": problem + " " + INSTRUCTION}],
                     "images": [{"bytes": buf.getvalue(), "path": None}], "ability": "math",
                     "reward_model": {"style": "rule", "ground_truth": str(x)},
                     "extra_info": {"split": split, "index": i, "answer": str(x), "question": problem}})
    return rows




def _tiny_qwen2_5_vl(path: Path) -> Path:
    from rlcockpit.trainer.vision.model import build_tiny_processor, build_tiny_vl_model

    processor = build_tiny_processor()
    build_tiny_vl_model(processor, family="qwen2_5_vl").save_pretrained(path)
    processor.tokenizer.save_pretrained(path)
    processor.image_processor.save_pretrained(path)
    return path


def test_the_geo3k_script_loads_with_its_multimodal_keys() -> None:
    from rlcockpit.trainer.config import load_config

    original = script_overrides(SCRIPT)
    assert len(original) == 42 and "data.image_key=images" in original
    cfg = load_config(overrides=original, log=None)
    assert (cfg.data.image_key, cfg.rollout.name, cfg.actor.kl_loss_type) == ("images", "vllm", "low_var_kl")


@pytest.mark.slow
def test_the_geo3k_script_trains_two_steps_with_images(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_geo3k(home / "data" / "geo3k" / "train.parquet", _geo3k_rows(16, 1, "train"))
    write_geo3k(home / "data" / "geo3k" / "test.parquet", _geo3k_rows(4, 2, "test"))
    original = script_overrides(SCRIPT, home=str(home))
    sizes = {"actor_rollout_ref.model.path": _tiny_qwen2_5_vl(tmp_path / "qwen2_5_vl"), "data.train_batch_size": 4,
             "data.max_response_length": 16, "actor_rollout_ref.actor.ppo_mini_batch_size": 4}
    overrides = replace_values(original, sizes)
    changed = {o.split("=", 1)[0] for o, n in zip(original, overrides) if o != n}
    assert changed == set(sizes)  # the rest of verl's script, as written
    store = tmp_path / "store"
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wandb"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(sys.path), "HOME": str(home)}
    args = [*overrides, "trainer.total_training_steps=2", f"trainer.rlcockpit_dir={store}", "trainer.num_threads=1",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}"]
    proc = subprocess.run(["nice", sys.executable, "-m", "rlcockpit.trainer.main_ppo", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "samples with the built-in hf engine" in out or "using the built-in hf engine" in out  # rollout.name=vllm
    (run,) = rlcockpit.Api(str(store)).runs()
    assert run.status == "finished"
    hist = run.history()
    steps = hist.dropna(subset=["actor/pg_loss"])
    # two updates (a random tiny model writes no \boxed{} answer: geo3k's reward is 0, so the gradient is too;
    # learning under GRPO with images is test_trainer_vl_train.py's vision task)
    assert len(steps) == 2 and steps["actor/grad_norm"].notna().all()
    assert (steps["response_length/mean"] > 0).all() and steps["prompt_length/mean"].min() > 250  # text + image
    assert hist["actor/kl_loss"].notna().sum() == 2  # the reference model (low_var_kl) scored with the images
    assert "val-core/hiyouga/geometry3k/acc/mean@1" in hist.columns  # verl's geo3k reward on the test file
    assert run.config["data"]["image_key"] == "images"
