from __future__ import annotations

import pytest

from rlcockpit.trainer.config import Config, ConfigError, load_config, preset_names, to_dict


def test_presets_load_and_overrides_apply():
    assert {"arith-grpo", "arith-collapse", "arith-hacking", "arith-entropy-collapse"} <= set(preset_names())
    cfg = load_config(preset="arith-grpo", overrides=["algorithm.adv_estimator=rloo", "actor.optim.lr=3e-5",
                                                      "trainer.logger=[console,rlcockpit,tensorboard]"])
    assert cfg.algorithm.adv_estimator == "rloo"
    assert cfg.actor.optim.lr == pytest.approx(3e-5)  # YAML reads 3e-5 as a string; we coerce it
    assert cfg.trainer.logger == ["console", "rlcockpit", "tensorboard"]
    assert cfg.rollout.n == 8  # from the preset
    assert to_dict(cfg)["algorithm"]["kl_ctrl"]["type"] == "fixed"


def test_unknown_key_names_the_closest_valid_key():
    with pytest.raises(ConfigError, match=r"actor\.optim\.lrr.*Did you mean 'actor\.optim\.lr'"):
        load_config(overrides=["actor.optim.lrr=1e-5"])
    with pytest.raises(ConfigError, match="algorithm.kl_ctrl.kl_coef"):
        load_config(overrides=["algorithm.kl_ctrl.kl_coeff=0.1"])


def test_wrong_type_names_key_and_expected_type():
    with pytest.raises(ConfigError, match=r"'rollout\.n' expects int"):
        load_config(overrides=["rollout.n=many"])
    with pytest.raises(ConfigError, match=r"'actor\.use_kl_loss' expects bool"):
        load_config(overrides=["actor.use_kl_loss=3"])
    with pytest.raises(ConfigError, match="health.on_critical.*warn, stop, rollback"):
        load_config(overrides=["health.on_critical=panic"])


def test_article_aliases_map_and_print(capsys):
    cfg = load_config(overrides=["ppo_config.target_kl=0.05", "--kl_coef=0.2", "use_wandb=true"])
    assert cfg.actor.target_kl == pytest.approx(0.05)
    assert cfg.algorithm.kl_ctrl.kl_coef == pytest.approx(0.2)
    assert "wandb" in cfg.trainer.logger
    out = capsys.readouterr().out
    assert "ppo_config.target_kl -> actor.target_kl" in out and "kl_coef -> algorithm.kl_ctrl.kl_coef" in out


def test_dict_and_omegaconf_accepted():
    omegaconf = pytest.importorskip("omegaconf")
    base = omegaconf.OmegaConf.create({"actor": {"clip_ratio_high": 0.28}, "rollout": {"top_k": 5}})
    cfg = load_config(base=base)
    assert cfg.actor.clip_ratio_high == pytest.approx(0.28) and cfg.rollout.top_k == 5
    cfg = load_config(base={"data": {"train_batch_size": 8}, "actor": {"ppo_mini_batch_size": 8}})
    assert cfg.data.train_batch_size == 8


def test_zero_micro_batches_fails_at_start():
    with pytest.raises(ConfigError, match="zero mini-batches"):
        load_config(overrides=["data.train_batch_size=4", "actor.ppo_mini_batch_size=8"])
    with pytest.raises(ConfigError, match="zero micro-batches"):
        load_config(overrides=["actor.ppo_micro_batch_size=0"])


def test_config_file_and_experiment_name(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("trainer:\n  project_name: p\n  experiment_name: e\nactor:\n  target_kl: 0.1\n")
    cfg = load_config(config_file=f)
    assert cfg.trainer.default_local_dir == "checkpoints/p/e"
    assert cfg.actor.target_kl == pytest.approx(0.1)
    assert isinstance(Config(), Config)
