"""bench/trainer_vs_trl.py's demo shape compares equal update settings: TRL's GRPOConfig is derived from the
arith-grpo config (it compared verl's token-mean with TRL's "grpo" sequence-mean loss and different prompts)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[3] / "bench"))
import trainer_vs_trl  # noqa: E402


@pytest.mark.parametrize("agg,loss_type", [("token-mean", "dapo"), ("seq-mean-token-mean", "grpo")])
def test_trl_settings_follow_ours(tmp_path, agg, loss_type):
    args = argparse.Namespace(steps=20, dtype="fp32", threads=2,
                              run_overrides=[f"actor.loss_agg_mode={agg}", "trainer.seed=7", "actor.clip_ratio_high=0.28"])
    cfg = trainer_vs_trl._cfg(args, str(tmp_path))
    t = trainer_vs_trl.trl_config(cfg, args, str(tmp_path))
    a = cfg.actor
    assert t.loss_type == loss_type and t.beta == 0.0 and t.num_iterations == a.ppo_epochs == 1
    # one optimizer step per batch of train_batch_size prompts x n completions, as ours (1 mini-batch)
    assert t.generation_batch_size == cfg.data.train_batch_size * cfg.rollout.n == t.per_device_train_batch_size
    assert t.steps_per_generation == t.gradient_accumulation_steps == 1 and a.ppo_mini_batch_size == cfg.data.train_batch_size
    assert (t.learning_rate, t.weight_decay, t.adam_beta1, t.adam_beta2) == (a.optim.lr, a.optim.weight_decay,
                                                                             *a.optim.betas)
    assert t.lr_scheduler_type == "constant" and a.optim.lr_scheduler_type == "constant" and t.warmup_steps == 0
    assert t.max_grad_norm == a.grad_clip and (t.epsilon, t.epsilon_high) == (a.clip_ratio, 0.28)
    assert t.scale_rewards == "group" and cfg.algorithm.norm_adv_by_std_in_grpo
    assert (t.temperature, t.top_p, t.top_k) == (cfg.rollout.temperature, cfg.rollout.top_p, 0)
    assert t.shuffle_dataset is False and t.seed == 7
