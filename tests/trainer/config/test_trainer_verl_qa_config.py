"""QA with verl's real launch scripts (fixtures/verl/, verbatim from volcengine/verl; docs/qa/verl-inputs.md):
what each script means in verl must be what it means here.

* ``recipe/dapo/test_dapo_7b_math.sh`` sets DAPO's overlong punishment through the reward manager's kwargs
  (``+reward_model.reward_kwargs.overlong_buffer_cfg.*``, ``max_resp_len``): it was passed to the reward
  *function* as keyword arguments, so the penalty never applied and verl's gsm8k rule raised on every call;
* ``examples/ppo_trainer/run_qwen2-7b_seq_balance.sh`` configures a critic and relies on verl's default
  estimator (``gae``): rlcockpit's demo default (``grpo``, n=8) silently trained GRPO without the critic;
* every example sets ``trainer.total_epochs`` and relies on verl's ``total_training_steps: null``:
  rlcockpit's default of 100 steps silently won.
"""

from __future__ import annotations

import pytest
from verl_scripts import replace_values, script_overrides

from rlcockpit.trainer.config import ConfigError, load_config

SMALL = {"data.train_batch_size": 4, "actor_rollout_ref.actor.ppo_mini_batch_size": 4,
         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4}


def test_extractor_reads_the_dapo_script_as_bash_does():
    ov = script_overrides("test_dapo_7b_math.sh")
    assert len(ov) == 70
    assert "data.max_response_length=8192" in ov and "trainer.nnodes=8" in ov  # $((1024 * 8)), ${NNODES:-8}
    assert "+reward_model.reward_kwargs.overlong_buffer_cfg.len=4096" in ov


def test_dapo_reward_manager_kwargs_are_the_overlong_buffer_not_reward_function_kwargs():
    cfg = load_config(overrides=replace_values(script_overrides("test_dapo_7b_math.sh"), SMALL), log=None)
    ob = cfg.reward.overlong_buffer
    assert (ob.enable, ob.len, ob.penalty_factor, ob.max_resp_len) == (True, 4096, 1.0, 8192)
    assert cfg.reward.kwargs == {}  # nothing reaches compute_score: verl's DAPO manager does not pass them on
    assert ob.log is False and "reward.overlong_buffer.log" not in cfg.extras  # a real key (overlong_reward, overlong)


def test_dapo_reward_kwargs_do_not_break_a_gsm8k_reward_call():
    from rlcockpit.trainer.reward.rewards import RewardManager

    cfg = load_config(overrides=[
        "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True", "+reward_model.reward_kwargs.max_resp_len=16",
        "+reward_model.reward_kwargs.overlong_buffer_cfg.len=4", "data.max_response_length=16"], log=None)
    manager = RewardManager.from_config(cfg)

    class Row:
        data_source, ground_truth, extra_info = "openai/gsm8k", "72", {"index": 0}

    scores, _ = manager([Row(), Row()], ["so #### 72", "#### 71"])
    assert scores == [1.0, 0.0] and manager.failures == 0


def test_overlong_buffer_as_a_dict_and_in_verl_09_location():
    cfg = load_config(overrides=["+reward.reward_kwargs.overlong_buffer_cfg={enable: true, len: 2}",
                                 "+reward.reward_kwargs.max_resp_len=8", "data.max_response_length=8"], log=None)
    ob = cfg.reward.overlong_buffer
    assert (ob.enable, ob.len, ob.max_resp_len) == (True, 2, 8)


def test_overlong_buffer_longer_than_the_response_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="reward.overlong_buffer.len=32"):
        load_config(overrides=["reward_model.overlong_buffer.enable=true", "reward_model.overlong_buffer.len=32",
                               "data.max_response_length=16"], log=None)


def test_ppo_script_without_estimator_gets_verls_gae_and_one_sample():
    small = {**SMALL, "actor_rollout_ref.actor.ppo_micro_batch_size": 4}
    cfg = load_config(overrides=replace_values(script_overrides("ppo_run_qwen2-7b_seq_balance.sh"), small),
                      log=None)
    assert cfg.algorithm.adv_estimator == "gae" and cfg.rollout.n == 1
    assert cfg.critic.model.path == "Qwen/Qwen2.5-Math-PRM-7B"
    assert not [n for n in cfg.notes if "demo" in n or "verl's differ" in n]  # verl's own defaults: nothing to say


def test_an_explicit_estimator_or_n_is_kept_with_a_critic():
    cfg = load_config(overrides=["critic.optim.lr=1e-5", "algorithm.adv_estimator=grpo"], log=None)
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.rollout.n == 8
    cfg = load_config(overrides=["critic.optim.lr=1e-5", "actor_rollout_ref.rollout.n=2"], log=None)
    assert cfg.algorithm.adv_estimator == "gae" and cfg.rollout.n == 2
    assert load_config(overrides=[], log=None).algorithm.adv_estimator == "grpo"  # the demo default stays


def test_batch_error_names_the_micro_batch_key_the_script_set():
    """The script balances sequences (``use_dynamic_bsz=True``): verl then packs micro-batches by tokens and never
    checks ``ppo_micro_batch_size`` (test_trainer_verl_dynamic_bsz.py asks verl itself), so it loads; without
    dynamic batching the micro-batch of 128 over a mini-batch of 4 prompts is refused, naming the key it set."""
    small = replace_values(script_overrides("ppo_run_qwen2-7b_seq_balance.sh"), SMALL)
    assert load_config(overrides=small, log=None).actor.ppo_micro_batch_size == 128
    static = replace_values(small, {"actor_rollout_ref.actor.use_dynamic_bsz": False})
    with pytest.raises(ConfigError, match=r"actor_rollout_ref\.actor\.ppo_micro_batch_size=128 must be"):
        load_config(overrides=static, log=None)


def test_total_epochs_without_total_training_steps_trains_epochs_as_verl():
    cfg = load_config(overrides=replace_values(script_overrides("rloo_run_qwen2-7b.sh"), SMALL), log=None)
    assert cfg.trainer.total_epochs == 15 and cfg.trainer.total_training_steps is None
    both = load_config(overrides=["trainer.total_epochs=3", "trainer.total_training_steps=7"], log=None)
    assert both.trainer.total_training_steps == 7  # verl: total_training_steps wins when given
    assert load_config(overrides=[], log=None).trainer.total_training_steps == 100


def test_verl_older_trainer_yaml_loads_through_config():
    """recipe/dapo/src/config/dapo_trainer.yaml (an older verl layout): ``min_lr_ratio: null``, FIRE sampling
    off, ``use_efficient_resharding``, ``remove_previous_ckpt_in_save``, the reward model's ``fsdp_config``."""
    from verl_scripts import FIXTURES

    cfg = load_config(config_file=FIXTURES / "dapo_trainer.yaml", log=None)
    assert cfg.actor.optim.min_lr_ratio == 0.0 and cfg.critic.optim.min_lr_ratio == 0.0  # null = verl's default
    assert cfg.algorithm.adv_estimator == "gae" and cfg.trainer.total_training_steps is None
    assert cfg.trainer.total_epochs == 30 and cfg.algorithm.filter_groups.max_num_gen_batches == 0
    for key in ("actor_rollout_ref.rollout.use_fire_sampling", "actor_rollout_ref.model.use_efficient_resharding",
                "trainer.remove_previous_ckpt_in_save", "reward_model.model.fsdp_config.param_offload"):
        assert key in cfg.extras, key


def test_fire_sampling_on_is_refused_with_the_reason():
    with pytest.raises(ConfigError, match="use_fire_sampling'=True: FIRE sampling"):
        load_config(overrides=["actor_rollout_ref.rollout.use_fire_sampling=True"], log=None)


def test_first_dapo_recipe_script_keys():
    """recipe/dapo/run_dapo_qwen2.5_32b.sh @03150d4 (``ray job submit ... -- python3 -m recipe.dapo...``):
    ``custom_reward_function.overlong_buffer.*`` and ``actor.use_token_level_loss`` (verl <= 0.3) were unknown."""
    ov = script_overrides("run_dapo_qwen2.5_32b.sh")
    assert len(ov) == 69 and "data.gen_batch_size=1536" in ov
    cfg = load_config(overrides=replace_values(ov, {**SMALL, "data.gen_batch_size": 8}), log=None)
    ob = cfg.reward.overlong_buffer
    assert (ob.enable, ob.len, ob.penalty_factor) == (True, 4096, 1.0)
    assert cfg.actor.loss_agg_mode == "token-mean" and cfg.algorithm.filter_groups.enable
    off = load_config(overrides=["actor_rollout_ref.actor.use_token_level_loss=False"], log=None)
    assert off.actor.loss_agg_mode == "seq-mean-token-mean"  # verl: per-sequence token mean, then batch mean


def test_gpg_example_use_gpg_loss_selects_the_gpg_policy_loss():
    """examples/gpg_trainer/run_qwen2-7b_math.sh @9bc2e8e: ``actor.use_gpg_loss=True`` was refused with the
    suggestion 'use_kl_loss' (a different switch)."""
    cfg = load_config(overrides=["algorithm.adv_estimator=gpg", "actor_rollout_ref.actor.use_gpg_loss=True",
                                 "actor_rollout_ref.actor.use_kl_loss=False"], log=None)
    assert cfg.actor.policy_loss.loss_mode == "gpg" and cfg.actor.use_kl_loss is False
    off = load_config(overrides=["actor_rollout_ref.actor.use_gpg_loss=False"], log=None)
    assert off.actor.policy_loss.loss_mode == "vanilla"


def test_first_rollout_correction_example_keys():
    """examples/rollout_correction/run_with_rollout_corr.sh @b5c19ff: four keys of verl's first rollout-correction
    release were unknown (one with the misleading suggestion 'rollout_rs_threshold')."""
    ov = script_overrides("run_with_rollout_corr.sh")
    assert len(ov) == 26
    cfg = load_config(overrides=[*replace_values(ov, SMALL), "actor_rollout_ref.rollout.n=4"], log=None)
    rc = cfg.algorithm.rollout_correction
    assert (rc.rollout_is, rc.rollout_is_threshold, rc.rollout_is_batch_normalize) == ("sequence", 2.0, True)
    assert rc.bypass_mode is True and rc.loss_type == "reinforce"  # "pure IS": policy gradient with IS weights
    with pytest.raises(ConfigError, match="rollout_rs_threshold_lower'=0.5: give the bounds"):
        load_config(overrides=["algorithm.rollout_correction.rollout_rs_threshold_lower=0.5"], log=None)


def test_a_script_without_n_gets_verls_one_sample_and_rloo_then_says_why_it_cannot_run():
    """examples/rollout_correction/run_with_rollout_corr.sh sets no rollout.n: verl's default is 1 (rlcockpit used
    a silent 8 before); RLOO with one sample per prompt has no leave-one-out baseline, refused naming the key."""
    with pytest.raises(ConfigError, match=r"rloo needs actor_rollout_ref\.rollout\.n >= 2"):
        load_config(overrides=replace_values(script_overrides("run_with_rollout_corr.sh"), SMALL), log=None)
    assert load_config(overrides=[], log=None).rollout.n == 8  # the built-in demo task keeps its groups


def test_old_use_rmpad_key_is_accepted():
    """examples/ppo_trainer/run_qwen2-7b_rm.sh @52485ff writes verl's old name of use_remove_padding."""
    cfg = load_config(overrides=["actor_rollout_ref.model.use_rmpad=True", "reward_model.model.use_rmpad=True",
                                 "critic.model.use_rmpad=True"], log=None)
    assert cfg.model.use_remove_padding is True  # the actor's: an alias of the key the trainer now reads
    assert {"reward_model.model.use_rmpad", "critic.model.use_rmpad"} <= set(cfg.extras)


def test_an_empty_value_from_an_unset_shell_variable_keeps_the_default():
    """examples/gdpo/run_qwen_1.5b_math.sh @40964dd passes ``algorithm.gamma=$gae_gamma algorithm.lam=$gae_lam``
    with both variables unset: verl keeps going (GDPO never reads them); here it was 'expects float, got '''."""
    cfg = load_config(overrides=["algorithm.gamma=", "algorithm.lam=", "trainer.project_name="], log=None)
    assert cfg.algorithm.gamma == 1.0 and cfg.algorithm.lam == 1.0
    assert [n for n in cfg.notes if n.startswith("algorithm.gamma= is empty")]
    assert cfg.trainer.project_name == ""  # a text key takes the empty string, as Hydra does


def test_vllm_settings_are_listed_as_no_effect_when_the_built_in_engine_runs():
    """verl's scripts set rollout.name=vllm with tensor_model_parallel_size / gpu_memory_utilization; since these
    became real keys (the vLLM engine reads them) nothing said they do nothing where vLLM is missing (and
    test_trainer_verl_dropin's 'tensor_model_parallel_size' check had gone red on main)."""
    import importlib.util

    from rlcockpit.trainer.config import no_effect_table

    cfg = load_config(overrides=replace_values(script_overrides("rloo_run_qwen2-7b.sh"), SMALL), log=None)
    table = dict(no_effect_table(cfg))
    vllm_rows = [keys for why, keys in table.items() if why.startswith("read by the vLLM engine only")]
    if importlib.util.find_spec("vllm") is None:
        assert vllm_rows == [["actor_rollout_ref.rollout.tensor_model_parallel_size",
                              "actor_rollout_ref.rollout.gpu_memory_utilization"]]
    else:
        assert vllm_rows == []  # .venv-vllm: the engine reads them
