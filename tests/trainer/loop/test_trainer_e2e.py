"""A few real RL steps of every advantage estimator on the tiny model, read back from the store."""

from __future__ import annotations

import math

import pytest

import rlcockpit
from rlcockpit.trainer.loop import train

ESTIMATORS = ["gae", "grpo", "rloo", "remax", "reinforce_plus_plus", "reinforce_plus_plus_baseline"]


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_each_estimator_trains(tiny_cfg, tmp_path, estimator):
    extra = [f"algorithm.adv_estimator={estimator}"]
    if estimator == "gae":
        extra += ["algorithm.lam=0.95", "critic.optim.lr=1e-3"]
    if estimator == "grpo":  # also exercise KL loss, clip-higher, dual-clip, entropy bonus, PPO epochs + target_kl
        extra += ["actor.use_kl_loss=true", "actor.clip_ratio_high=0.28", "actor.entropy_coeff=0.01",
                  "actor.ppo_epochs=2", "actor.ppo_mini_batch_size=2", "actor.target_kl=10.0"]
    if estimator == "reinforce_plus_plus":  # KL in reward with the adaptive controller
        extra += ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive"]
    result = train(tiny_cfg(*extra))
    assert result.status == "finished" and result.steps == 2
    run = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id)
    hist = run.history()
    for key in ["actor/pg_loss", "actor/entropy", "actor/ppo_kl", "actor/pg_clipfrac", "actor/grad_norm", "actor/lr",
                "critic/score/mean", "critic/advantages/max", "critic/returns/min", "response_length/clip_ratio",
                "prompt_length/mean", "perf/throughput", "timing_s/gen", "timing_s/update_actor", "timing_s/step",
                "val-core/arith/acc/mean@1"]:
        assert key in hist.columns, key
    assert all(math.isfinite(v) for v in hist["actor/pg_loss"].dropna())
    assert hist["val-core/arith/acc/mean@1"].dropna().index.tolist() == [0, 2]
    if estimator == "gae":
        assert {"critic/vf_loss", "critic/vf_explained_var", "critic/values/mean", "critic/vpred_mean"} <= set(hist.columns)
        # verl's dp_critic: the masked mean of the value predictions inside the update, near the pre-update values
        vpred, values = hist["critic/vpred_mean"].dropna(), hist["critic/values/mean"].dropna()
        assert len(vpred) == 2 and abs(float(vpred.iloc[0]) - float(values.iloc[0])) < 1.0
    if estimator == "grpo":
        assert "actor/kl_loss" in hist.columns and "timing_s/ref" in hist.columns
        assert "timing_s/old_log_prob" in hist.columns  # several mini-batches -> old log-probs recomputed
    if estimator == "reinforce_plus_plus":
        assert "actor/reward_kl_penalty" in hist.columns
    assert run.samples(step=1)[0]["ground_truth"]
    assert run.config["algorithm"]["adv_estimator"] == estimator


@pytest.mark.slow
def test_dapo_dynamic_sampling_and_overlong_penalty(tiny_cfg, tmp_path):
    # a graded reward, so that groups differ (the barely trained tiny model gets every exact-match group wrong,
    # and since verl's semantics a step that cannot fill its batch in max_num_gen_batches raises)
    reward = tmp_path / "graded.py"
    reward.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return 1.0 if solution_str.strip() == str(ground_truth) else sum(map(ord, solution_str)) % 7 / 14\n")
    result = train(tiny_cfg("algorithm.filter_groups.enable=true", "algorithm.filter_groups.max_num_gen_batches=3",
                            "algorithm.filter_groups.metric=seq_reward", f"custom_reward_function.path={reward}",
                            "reward.overlong_buffer.enable=true", "reward.overlong_buffer.len=2",
                            "actor.clip_ratio_high=0.28", "actor.loss_agg_mode=token-mean"))
    assert result.status == "finished"
    hist = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()
    assert hist["train/num_gen_batches"].dropna().ge(1).all()
    # the overlong penalty can push scores below 0 (pure exact-match scores are in {0, 1})
    assert hist["critic/score/min"].dropna().min() <= 0


def test_cli_train_print_config(capsys):
    from rlcockpit.cli import main

    assert main(["train", "--preset", "arith-grpo", "--print-config", "--kl_coef", "0.3", "rollout.n=4"]) == 0
    out = capsys.readouterr().out
    assert "kl_coef: 0.3" in out and "n: 4" in out and "kl_coef -> algorithm.kl_ctrl.kl_coef" in out
    assert main(["train", "--preset", "arith-grpo", "actor.optim.lrr=1"]) == 2
    assert "Did you mean 'actor.optim.lr'" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_demo_prints_summary_and_how_to_look(tiny_cfg, tiny_overrides, tmp_path, capsys):
    from rlcockpit.cli import main

    store = tmp_path / "demo-store"
    code = main(["demo", "--steps", "2", "--dir", str(store), *tiny_overrides,
                 f"trainer.default_local_dir={tmp_path / 'ck'}"])
    out = capsys.readouterr().out
    assert code == 0
    assert "held-out accuracy (greedy):" in out and "after 2 GRPO steps" in out
    assert f"rlcockpit runs --dir {store}" in out and "rlcockpit ui" in out
    runs = rlcockpit.Api(str(store)).runs()
    assert len(runs) == 1 and runs[0].status == "finished"
