"""The trainer config: verl paths canonical, short forms and article keys as aliases, Hydra grammar, typed
validation with every problem reported at once, verl's engine-only keys accepted with a reason."""

from __future__ import annotations

import pytest

from rlcockpit.trainer.config import (
    Config,
    ConfigError,
    all_keys,
    load_config,
    no_effect_table,
    preset_names,
    schema_keys,
    set_key,
    to_dict,
)
from rlcockpit.trainer.config.schema import schema_fields


def test_presets_load_and_overrides_apply():
    assert {"arith-grpo", "arith-collapse", "arith-hacking", "arith-entropy-collapse"} <= set(preset_names())
    cfg = load_config(preset="arith-grpo", overrides=["algorithm.adv_estimator=rloo",
                                                      "actor_rollout_ref.actor.optim.lr=3e-5",
                                                      "trainer.logger=[console,rlcockpit,tensorboard]"])
    assert cfg.algorithm.adv_estimator == "rloo"
    assert cfg.actor.optim.lr == pytest.approx(3e-5)
    assert cfg.trainer.logger == ["console", "rlcockpit", "tensorboard"]
    assert cfg.rollout.n == 8  # from the preset
    d = to_dict(cfg)
    assert d["algorithm"]["kl_ctrl"]["type"] == "fixed"
    assert d["actor_rollout_ref"]["actor"]["optim"]["lr"] == pytest.approx(3e-5)  # stored in verl's shape


def test_canonical_keys_are_verl_paths_and_short_forms_are_aliases():
    keys = schema_keys()
    for k in ("actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.rollout.n", "actor_rollout_ref.model.path",
              "actor_rollout_ref.actor.policy_loss.loss_mode", "custom_reward_function.path", "reward_model.enable",
              "data.prompt_key", "data.reward_fn_key", "data.filter_overlong_prompts", "trainer.critic_warmup"):
        assert k in keys, k
    assert not any(k.startswith(("actor.", "rollout.")) for k in keys)
    short = load_config(overrides=["actor.optim.lr=2e-5", "rollout.n=3", "actor.model.lora_rank=4",
                                   "actor.policy_loss=gspo", "rollout.val_temperature=0.5"], log=None)
    assert short.actor.optim.lr == pytest.approx(2e-5) and short.rollout.n == 3 and short.model.lora_rank == 4
    assert short.actor.policy_loss.loss_mode == "gspo"
    assert short.rollout.val_kwargs.temperature == pytest.approx(0.5)
    assert short.actor.model is short.model  # the older attribute path still reads
    assert "actor.optim.lr" in all_keys() and "actor_rollout_ref.actor.optim.lr" in all_keys()


def test_unknown_keys_are_all_reported_with_close_suggestions_only():
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["actor_rollout_ref.actor.optim.lrr=1e-5", "algorithm.kl_ctrl.kl_coeff=0.1",
                               "trainer.n_gpu_per_node=8", "completely.made_up=1", "data.train_batch_size=x"], log=None)
    msg = str(info.value)
    assert msg.startswith("5 config problems")
    assert "Did you mean 'actor_rollout_ref.actor.optim.lr'" in msg
    assert "Did you mean 'algorithm.kl_ctrl.kl_coef'" in msg and "Did you mean 'trainer.n_gpus_per_node'" in msg
    line = next(x for x in msg.splitlines() if "completely.made_up" in x)
    assert "Did you mean" not in line  # nothing close: no suggestion beats a wrong one
    assert "'data.train_batch_size' expects int" in msg
    # a leaf shared with a real key under an unrelated path is not "close"
    with pytest.raises(ConfigError) as info:
        load_config(overrides=["actor_rollout_ref.rollout.tensor_model_parallel_sizes=2"], log=None)
    assert "sft_batch_size" not in str(info.value)


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(ConfigError, match=r"'actor_rollout_ref\.rollout\.n' expects int.*given as 'rollout\.n'"):
        load_config(overrides=["rollout.n=many"], log=None)
    with pytest.raises(ConfigError, match=r"'actor_rollout_ref\.actor\.use_kl_loss' expects bool"):
        load_config(overrides=["actor_rollout_ref.actor.use_kl_loss=3"], log=None)
    with pytest.raises(ConfigError, match="health.on_critical.*warn, stop, rollback"):
        load_config(overrides=["health.on_critical=panic"], log=None)


def test_choices_come_from_the_registries():
    from rlcockpit.algos import ADV_ESTIMATORS

    with pytest.raises(ConfigError, match="unknown advantage estimator 'grpoo'.*Did you mean 'grpo'"):
        load_config(overrides=["algorithm.adv_estimator=grpoo"], log=None)

    @ADV_ESTIMATORS.register("my_test_estimator")
    def _mine(**kw):  # pragma: no cover - only its name matters here
        raise NotImplementedError

    try:
        assert load_config(overrides=["algorithm.adv_estimator=my_test_estimator"],
                           log=None).algorithm.adv_estimator == "my_test_estimator"
    finally:
        ADV_ESTIMATORS.unregister("my_test_estimator")
    assert schema_fields()["algorithm.adv_estimator"].registry == "rlcockpit.algos:ADV_ESTIMATORS"


def test_hydra_grammar():
    cfg = load_config(overrides=[
        "trainer.logger=['console','wandb']", "trainer.project_name='my proj'", "data.val_files=null",
        "data.train_files=/a.parquet", "+actor_rollout_ref.actor.fsdp_config.my_new_flag=1",
        "++trainer.total_epochs=3", "trainer.experiment_name=${trainer.project_name}-x",
        "actor_rollout_ref.actor.optim.lr=1e-4", "~actor_rollout_ref.actor.optim.lr", "algorithm.kl_ctrl.kl_coef=2e-3",
        "+something.verl.would.read=7"], log=None)
    assert cfg.trainer.logger == ["console", "wandb"] and cfg.trainer.project_name == "my proj"
    assert cfg.data.val_files == [] and cfg.data.train_files == ["/a.parquet"]  # a path or a list
    assert cfg.trainer.total_epochs == 3 and cfg.trainer.experiment_name == "my proj-x"
    assert cfg.actor.optim.lr == Config().actor.optim.lr  # ~key: back to the default
    assert cfg.extras["something.verl.would.read"] == 7  # +key: stored, no effect
    assert cfg.trainer.default_local_dir == "checkpoints/my proj/my proj-x"
    with pytest.raises(ConfigError, match="must look like key=value"):
        load_config(overrides=["just_a_word"], log=None)


def test_engine_only_keys_are_accepted_stored_and_explained():
    cfg = load_config(overrides=["actor_rollout_ref.rollout.max_num_batched_tokens=8192",
                                 "actor_rollout_ref.rollout.enable_chunked_prefill=True",
                                 "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
                                 "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
                                 "actor_rollout_ref.actor.fsdp_config.param_offload=False",
                                 "trainer.n_gpus_per_node=8", "ray_kwargs.ray_init.num_cpus=4"], log=None)
    assert cfg.extras["actor_rollout_ref.rollout.max_num_batched_tokens"] == 8192
    stored = to_dict(cfg)
    assert stored["actor_rollout_ref"]["rollout"]["enable_chunked_prefill"] is True
    # the vLLM engine's own settings are real keys since rollout.name=vllm exists (issue 18), not "no effect"
    assert cfg.rollout.tensor_model_parallel_size == 2 and cfg.rollout.gpu_memory_utilization == pytest.approx(0.6)
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" not in cfg.extras
    assert stored["ray_kwargs"]["ray_init"]["num_cpus"] == 4
    table = dict((why, keys) for why, keys in no_effect_table(cfg))
    assert any("vLLM" in why for why in table) and any("one node" in why for why in table)
    # data-parallel on one node is real since issue 18: trainer.n_gpus_per_node is a schema field
    assert cfg.trainer.n_gpus_per_node == 8 and "trainer.n_gpus_per_node" not in cfg.extras
    with pytest.raises(ConfigError, match="multi-turn"):
        load_config(overrides=["actor_rollout_ref.rollout.multi_turn.enable=true"], log=None)


def test_article_aliases_map_and_print(capsys):
    cfg = load_config(overrides=["ppo_config.target_kl=0.05", "--kl_coef=0.2", "use_wandb=true",
                                 "ppo_config.cliprange=0.1", "value_update_steps=4", "reward_config.entropy_coef=0.01",
                                 "kl_controller.type=adaptive", "kl_controller.kl_coef_range=[0.01,0.1]",
                                 "optim.warmup_steps_ratio=0.2", "data.micro_batch_size_per_gpu=8",
                                 "model.use_liger=true", "fsdp_config.cpu_offload=true"])
    assert cfg.actor.target_kl == pytest.approx(0.05) and cfg.actor.clip_ratio == pytest.approx(0.1)
    assert cfg.algorithm.kl_ctrl.kl_coef == pytest.approx(0.2) and cfg.algorithm.kl_ctrl.type == "adaptive"
    assert cfg.algorithm.kl_ctrl.kl_coef_range == [0.01, 0.1] and cfg.critic.ppo_epochs == 4
    assert cfg.actor.entropy_coeff == pytest.approx(0.01) and cfg.actor.optim.lr_warmup_steps_ratio == pytest.approx(0.2)
    assert cfg.actor.ppo_micro_batch_size_per_gpu == 8 and "wandb" in cfg.trainer.logger
    assert "actor_rollout_ref.model.use_liger" in cfg.extras
    out = capsys.readouterr().out
    assert out.count("config aliases") == 1  # reported once
    assert "ppo_config.target_kl -> actor_rollout_ref.actor.target_kl" in out and "kl_coef -> algorithm.kl_ctrl.kl_coef" in out


def test_seed_article_yaml_snippets(tmp_path):
    f = tmp_path / "article.yaml"
    f.write_text("ppo_config:\n  target_kl: 0.05\n  early_stopping: true\n  cliprange: 0.1\n  cliprange_value: 0.1\n"
                 "  cliprange_reward: 0.2\n  gamma: 0.99\n  lam: 0.95\nvalue_update_steps: 4\n"
                 "reward_config:\n  kl_coef: 0.1\n  entropy_coef: 0.01\n"
                 "kl_controller:\n  type: \"adaptive\"\n  target_kl: 0.05\n  kl_coef_range: [0.01, 0.1]\n"
                 "optim:\n  lr: 5e-5\n  warmup_steps_ratio: 0.2\n"
                 "data:\n  micro_batch_size_per_gpu: 8\n  num_workers: 8\n  prefetch_factor: 4\n"
                 "model:\n  use_liger: true\n  use_remove_padding: true\n  enable_gradient_checkpointing: true\n"
                 "  ulysses_sequence_parallel_size: 2\nfsdp_config:\n  cpu_offload: true\n  offload_params: true\n")
    cfg = load_config(config_file=f, overrides=["data.train_batch_size=16", "actor_rollout_ref.rollout.n=2"], log=None)
    assert cfg.algorithm.gamma == pytest.approx(0.99) and cfg.algorithm.lam == pytest.approx(0.95)
    assert cfg.actor.optim.lr == pytest.approx(5e-5) and cfg.model.enable_gradient_checkpointing
    assert cfg.algorithm.kl_ctrl.target_kl == pytest.approx(0.05)
    no_effect = {k for _why, keys in no_effect_table(cfg) for k in keys}
    assert {"ppo_config.cliprange_reward", "data.dataloader_num_workers", "data.prefetch_factor",
            "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
            "actor_rollout_ref.actor.fsdp_config.offload_params"} <= no_effect
    assert cfg.model.use_remove_padding is True  # a real key since issue 18 (packing.py)


def test_zero_micro_batches_fails_at_start():
    with pytest.raises(ConfigError, match="zero mini-batches"):
        load_config(overrides=["data.train_batch_size=4", "actor_rollout_ref.actor.ppo_mini_batch_size=8"], log=None)
    with pytest.raises(ConfigError, match="zero micro-batches"):
        load_config(overrides=["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=0"], log=None)


def test_config_file_in_both_shapes_and_experiment_name(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("trainer:\n  project_name: p\n  experiment_name: e\nactor:\n  target_kl: 0.1\n")
    cfg = load_config(config_file=f, log=None)
    assert cfg.trainer.default_local_dir == "checkpoints/p/e"
    assert cfg.actor.target_kl == pytest.approx(0.1)
    f.write_text("defaults:\n  - ppo_trainer\n  - _self_\nactor_rollout_ref:\n  actor:\n    optim:\n      lr: 3e-6\n"
                 "      _target_: verl.workers.config.FSDPOptimizerConfig\n  rollout:\n    name: ???\n")
    cfg = load_config(config_file=f, log=None)
    assert cfg.actor.optim.lr == pytest.approx(3e-6) and cfg.rollout.name == "hf"
    assert any("defaults" in n for n in cfg.notes)


def test_set_key_accepts_every_spelling():
    cfg = Config()
    set_key(cfg, "actor.optim.lr", 1e-5)
    set_key(cfg, "actor_rollout_ref.actor.clip_ratio", 0.3)
    set_key(cfg, "reward.kwargs.length_bonus", 0.1)
    set_key(cfg, "actor_rollout_ref.rollout.gpu_memory_utilization", 0.7)
    set_key(cfg, "actor_rollout_ref.rollout.max_num_batched_tokens", 4096)
    assert cfg.actor.optim.lr == pytest.approx(1e-5) and cfg.actor.clip_ratio == pytest.approx(0.3)
    assert cfg.reward.kwargs == {"length_bonus": 0.1} and cfg.rollout.gpu_memory_utilization == pytest.approx(0.7)
    assert cfg.extras["actor_rollout_ref.rollout.max_num_batched_tokens"] == 4096
    with pytest.raises(ConfigError, match="unknown config key"):
        set_key(cfg, "actor.nope", 1)
