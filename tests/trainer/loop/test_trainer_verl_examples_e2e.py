"""Four more of verl's current example scripts train here as a verl user runs them (issue 27's "Done when": the
five scripts run unchanged, only their paths and sizes pointed at local files; ``run_gemma.sh`` is in
test_trainer_verl_dropin.py). Each script is kept verbatim with its origin in fixtures/verl/; bash expands it
(verl_scripts.py), ``python3 -m verl.trainer.main_ppo`` (or the DAPO recipe's ``recipe.dapo.main_dapo``) becomes
``python -m rlcockpit.trainer.main_ppo``, and only paths and sizes differ:

* REINFORCE++ (examples/reinforce_plus_plus_trainer/run_qwen2-7b_math_rf.sh): GSM8K + MATH files under ``$HOME``;
* CISPO on GSM8K (examples/cispo_trainer/run_cispo_qwen2_5_0_5b_gsm8k.sh): ``model.torch_dtype`` was refused;
* GMPO with DAPO (examples/gmpo_trainer/test_dapo_7b_math.sh): ``loss_mode=geo_mean``, the reward manager's kwargs;
* DAPO with dynamic sampling (recipe/dapo/run_dapo_qwen2.5_32b.sh): ``algorithm.filter_groups.enable=True``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hf_fixtures import gsm8k_rows, write_parquet
from verl_scripts import replace_values, script_overrides

import rlcockpit

MATH_INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."


def _math_rows(n: int, seed: int, split: str) -> list[dict]:
    """verl's MATH parquet schema (examples/data_preprocess/math_dataset.py): the data source MATH's rule scores."""
    rows = gsm8k_rows(n, seed=seed, split=split)
    for row in rows:
        row["data_source"] = "DigitalLearningGmbH/MATH-lighteval"
        row["prompt"] = [{"role": "user", "content": f"{row['extra_info']['question']} {MATH_INSTRUCTION}"}]
    return rows


def _verl_home(tmp_path: Path, hf_assets: dict) -> Path:
    """A ``$HOME`` laid out as verl's preprocessing scripts leave it: data/gsm8k/ and data/math/ parquet files."""
    home = tmp_path / "home"
    for name in ("gsm8k", "math"):
        (home / "data" / name).mkdir(parents=True)
    (home / "data" / "gsm8k" / "train.parquet").symlink_to(hf_assets["train"])
    (home / "data" / "gsm8k" / "test.parquet").symlink_to(hf_assets["val"])
    write_parquet(_math_rows(32, 3, "train"), home / "data" / "math" / "train.parquet")
    write_parquet(_math_rows(4, 4, "test"), home / "data" / "math" / "test.parquet")
    return home


def _main_ppo(overrides: list[str], tmp_path: Path, *extra: str) -> tuple[str, rlcockpit.Run]:
    """verl's entry point with one word changed; this test's store and checkpoint folders, one thread."""
    store = tmp_path / "store"
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wandb"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [*overrides, *extra, f"trainer.rlcockpit_dir={store}", "trainer.num_threads=1"]
    proc = subprocess.run(["nice", sys.executable, "-m", "rlcockpit.trainer.main_ppo", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    (run,) = rlcockpit.Api(str(store)).runs()
    assert run.status == "finished"
    return out, run


def _learned_from_varying_rewards(hist) -> None:
    """Two updates, at least one from a batch whose rewards differ (the loss had advantages to weigh: the model
    is warmed up to answer GSM8K as ``#### N``), with a nonzero gradient."""
    steps = hist.dropna(subset=["actor/pg_loss"])
    assert len(steps) == 2
    assert (steps["critic/score/max"] > steps["critic/score/min"]).any(), steps.filter(like="score")
    assert (steps["actor/grad_norm"] > 0).all()


def _only_sizes_changed(original: list[str], overrides: list[str], allowed: set[str]) -> None:
    changed = {o.split("=", 1)[0].lstrip("+") for o, n in zip(original, overrides) if o != n}
    assert changed <= allowed, changed - allowed


@pytest.mark.parametrize(("script", "n_overrides", "intent"), [
    ("reinforce_plus_plus_run_qwen2-7b_math_rf.sh", 37, {"algorithm.adv_estimator": "reinforce_plus_plus"}),
    ("cispo_run_cispo_qwen2_5_0_5b_gsm8k.sh", 41, {"actor.policy_loss.loss_mode": "cispo", "actor.clip_ratio_low": 10}),
    ("gmpo_test_dapo_7b_math.sh", 72, {"actor.policy_loss.loss_mode": "geo_mean", "actor.clip_ratio_high": 0.4,
                                       "reward.overlong_buffer.len": 4096}),
    ("recipe_dapo_run_dapo_qwen2.5_32b.sh", 70, {"algorithm.filter_groups.enable": True, "data.gen_batch_size": 1536,
                                                 "reward.overlong_buffer.len": 4096}),
])
def test_example_scripts_load_with_their_intent(script, n_overrides, intent):
    """Every override of each script loads as written (the reward buffer's 4096 needs verl's response length)."""
    from rlcockpit.trainer.config import load_config

    original = script_overrides(script)
    assert len(original) == n_overrides
    cfg = load_config(overrides=original, log=None)
    for path, value in intent.items():
        node = cfg
        for part in path.split("."):
            node = getattr(node, part)
        assert node == value, path


@pytest.mark.slow
def test_reinforce_plus_plus_example_trains_on_gsm8k_and_math(hf_assets, warm_qwen2, tmp_path):
    home = _verl_home(tmp_path, hf_assets)
    original = script_overrides("reinforce_plus_plus_run_qwen2-7b_math_rf.sh", home=str(home))
    assert len(original) == 37 and f"data.train_files=['{home}/data/gsm8k/train.parquet', " \
                                   f"'{home}/data/math/train.parquet']" in original
    # a model that answers GSM8K in its "#### N" format: rewards vary, so the advantages carry a signal
    sizes = {"actor_rollout_ref.model.path": warm_qwen2, "data.train_batch_size": 8,
             "data.max_response_length": 16, "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
             "actor_rollout_ref.rollout.n": 4}
    overrides = replace_values(original, sizes)
    _only_sizes_changed(original, overrides, set(sizes))
    out, run = _main_ppo(overrides, tmp_path, "trainer.total_training_steps=2",
                         f"trainer.default_local_dir={tmp_path / 'ckpt'}")
    cfg = run.config
    assert cfg["algorithm"]["adv_estimator"] == "reinforce_plus_plus"
    assert cfg["actor_rollout_ref"]["actor"]["kl_loss_type"] == "mse"
    hist = run.history()
    assert hist["actor/kl_loss"].notna().sum() == 2
    # REINFORCE++ whitens the returns over the whole batch (verl's masked_whiten): rewards that vary give token
    # advantages of mean ~0 on both sides of it, where GRPO's per-group scores weighted by length would not be 0
    steps = hist.dropna(subset=["critic/score/mean"])
    assert len(steps) == 2 and (steps["critic/score/max"] > steps["critic/score/min"]).all(), steps.filter(like="score")
    assert (steps["critic/advantages/mean"].abs() < 1e-3).all(), steps["critic/advantages/mean"]
    assert ((steps["critic/advantages/max"] > 0) & (steps["critic/advantages/min"] < 0)).all()
    # both files of the script's list are read: validation reports each data source (test_freq=5: the final one)
    assert {"val-core/openai/gsm8k/acc/mean@1", "val-core/DigitalLearningGmbH/MATH-lighteval/acc/mean@1"} <= set(
        hist.columns), sorted(c for c in hist.columns if c.startswith("val"))


@pytest.mark.slow
def test_cispo_gsm8k_example_trains_with_model_torch_dtype(hf_assets, warm_qwen2, tmp_path):
    home = _verl_home(tmp_path, hf_assets)
    original = script_overrides("cispo_run_cispo_qwen2_5_0_5b_gsm8k.sh", home=str(home))
    assert len(original) == 41 and "actor_rollout_ref.model.torch_dtype=bfloat16" in original
    sizes = {"actor_rollout_ref.model.path": warm_qwen2, "data.train_batch_size": 8,
             "data.max_response_length": 16, "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
             "actor_rollout_ref.rollout.n": 4}
    overrides = replace_values(original, sizes)
    _only_sizes_changed(original, overrides, set(sizes))
    out, run = _main_ppo(overrides, tmp_path, "trainer.total_training_steps=2",
                         f"trainer.default_local_dir={tmp_path / 'ckpt'}")
    assert "actor_rollout_ref.model.torch_dtype='bfloat16' is accepted but not implemented" in out  # said, once
    actor = run.config["actor_rollout_ref"]["actor"]
    assert actor["policy_loss"]["loss_mode"] == "cispo"
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"]) == (10, 0.2)
    assert run.config["trainer"]["project_name"] == "verl_cispo_example_gsm8k"
    _learned_from_varying_rewards(run.history())


@pytest.mark.slow
def test_gmpo_dapo_example_trains_with_the_geometric_mean_loss(hf_assets, warm_qwen2, tmp_path):
    original = script_overrides("gmpo_test_dapo_7b_math.sh")
    assert len(original) == 72 and "actor_rollout_ref.actor.policy_loss.loss_mode=geo_mean" in original
    paths = {"data.train_files": hf_assets["train"], "data.val_files": hf_assets["val"],
             "actor_rollout_ref.model.path": warm_qwen2, "trainer.default_local_dir": tmp_path / "ckpt"}
    sizes = {"data.max_prompt_length": 256, "data.max_response_length": 16, "data.train_batch_size": 8,
             "actor_rollout_ref.rollout.n": 4, "actor_rollout_ref.actor.ppo_mini_batch_size": 8,
             "actor_rollout_ref.rollout.max_num_batched_tokens": 272, "trainer.total_training_steps": 2,
             "reward.reward_kwargs.overlong_buffer_cfg.len": 4, "reward.reward_kwargs.max_resp_len": 16}
    overrides = replace_values(original, {**paths, **sizes})
    _only_sizes_changed(original, overrides, set(paths) | set(sizes))
    out, run = _main_ppo(overrides, tmp_path)
    actor = run.config["actor_rollout_ref"]["actor"]
    assert actor["policy_loss"]["loss_mode"] == "geo_mean" and actor["loss_agg_mode"] == "token-mean"
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"]) == (0.4, 0.4)
    assert run.config["reward"]["overlong_buffer"]["len"] == 4
    hist = run.history()
    _learned_from_varying_rewards(hist)
    assert "val-core/openai/gsm8k/acc/mean@1" in hist.columns  # val_before_train=True


@pytest.mark.slow
def test_dapo_recipe_with_dynamic_sampling_filters_groups(hf_assets, warm_qwen2, tmp_path):
    original = script_overrides("recipe_dapo_run_dapo_qwen2.5_32b.sh")
    assert len(original) == 70 and "algorithm.filter_groups.enable=True" in original
    assert "algorithm.filter_groups.metric=acc" in original
    paths = {"data.train_files": hf_assets["train"], "data.val_files": hf_assets["val"],
             "actor_rollout_ref.model.path": warm_qwen2, "trainer.default_local_dir": tmp_path / "ckpt"}
    sizes = {"data.max_prompt_length": 256, "data.max_response_length": 16, "data.train_batch_size": 4,
             "data.gen_batch_size": 8, "actor_rollout_ref.rollout.n": 4,
             "actor_rollout_ref.actor.ppo_mini_batch_size": 4,
             "actor_rollout_ref.rollout.max_num_batched_tokens": 272, "reward_model.overlong_buffer.len": 4}
    overrides = replace_values(original, {**paths, **sizes})
    _only_sizes_changed(original, overrides, set(paths) | set(sizes))
    out, run = _main_ppo(overrides, tmp_path, "trainer.total_training_steps=2")
    cfg = run.config
    fg = cfg["algorithm"]["filter_groups"]
    assert (fg["enable"], fg["metric"], fg["max_num_gen_batches"]) == (True, "acc", 10)
    assert cfg["data"]["gen_batch_size"] == 8 and cfg["reward"]["overlong_buffer"]["enable"] is True
    actor = cfg["actor_rollout_ref"]["actor"]
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"], actor["clip_ratio_c"]) == (0.2, 0.28, 10.0)
    hist = run.history()
    gen_batches, kept = hist["train/num_gen_batches"].dropna(), hist["train/kept_group_ratio"].dropna()
    assert len(gen_batches) == 2 and (gen_batches >= 1).all()  # verl's key for the generation rounds of a step
    # groups whose 4 responses all got the same acc were dropped: fewer than all generated groups were kept
    assert (kept < 1).any(), hist[["train/num_gen_batches", "train/kept_group_ratio"]]
