"""verl's real DAPO script trains here with its overlong punishment (docs/qa/verl-inputs.md): all 70 overrides of
``recipe/dapo/test_dapo_7b_math.sh`` through ``rlcockpit train``, only paths and sizes changed. Before the fix the
``+reward_model.reward_kwargs.*`` keys reached verl's gsm8k rule as keyword arguments: preflight stopped the run
with ``gsm8k_score() got an unexpected keyword argument 'overlong_buffer_cfg'`` (and on ``math_dapo`` data, whose
rule ignores them, the penalty silently never applied)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from verl_scripts import replace_values, script_overrides

import rlcockpit


@pytest.mark.slow
def test_dapo_script_trains_two_steps_with_the_overlong_penalty(hf_assets, tmp_path):
    new = {"data.train_files": hf_assets["train"], "data.val_files": hf_assets["val"],
           "actor_rollout_ref.model.path": str(hf_assets["models"]["qwen2"]),
           "trainer.default_local_dir": str(tmp_path / "ckpt"),
           "data.max_response_length": 16, "data.train_batch_size": 4, "actor_rollout_ref.rollout.n": 4,
           "actor_rollout_ref.actor.ppo_mini_batch_size": 4, "trainer.total_training_steps": 2,
           "reward_model.reward_kwargs.overlong_buffer_cfg.len": 4, "reward_model.reward_kwargs.max_resp_len": 16,
           "trainer.logger": "[console]", "trainer.log_val_generations": 2}
    overrides = replace_values(script_overrides("test_dapo_7b_math.sh"), new)
    store = tmp_path / "store"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "train", *overrides,
                           f"trainer.rlcockpit_dir={store}", "trainer.num_threads=1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    (run,) = rlcockpit.Api(str(store)).runs()
    assert run.status == "finished"
    hist = run.history()
    assert hist["reward/failures"].dropna().max() == 0  # the manager kwargs never reach the reward function
    lengths, scores = hist["response_length/mean"].dropna(), hist["critic/score/mean"].dropna()
    # a random tiny model rambles to the 16-token limit: past 12 tokens DAPO's ramp takes up to 1 point off
    assert (lengths > 12).all() and (scores < 0).all(), hist[["response_length/mean", "critic/score/mean"]]
    assert run.config["reward"]["overlong_buffer"] == {"enable": True, "len": 4, "penalty_factor": 1.0,
                                                       "max_resp_len": 16, "log": False}
