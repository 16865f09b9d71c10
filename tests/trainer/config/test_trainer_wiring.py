"""Config plumbing added around the loop: the free-form ``alerts`` section, live rebuilding of the
KL controller when a guardrail override changes ``algorithm.kl_ctrl.*``, and the preflight gate."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlcockpit.algos import get_kl_controller
from rlcockpit.algos.kl import AdaptiveKLController, FixedKLController
from rlcockpit.trainer.config import apply_dict, load_config, set_key, to_dict
from rlcockpit.trainer.loop import apply_live


def test_alerts_section_is_kept_as_a_free_form_dict():
    cfg = load_config(preset="arith-grpo")
    assert cfg.alerts is None
    rules = {"rules": [{"metric": "critic/score/mean", "op": "<", "value": 0.1}], "channels": {"console": {}}}
    apply_dict(cfg, {"alerts": rules})
    assert cfg.alerts == rules  # not flattened into unknown dotted keys
    set_key(cfg, "alerts.cooldown_s", 30)
    assert cfg.alerts["cooldown_s"] == 30 and cfg.alerts["rules"] == rules["rules"]
    assert to_dict(cfg)["alerts"]["cooldown_s"] == 30


def _live_state(cfg):
    kc = cfg.algorithm.kl_ctrl
    return SimpleNamespace(cfg=cfg, kl_ctrl=get_kl_controller(kc.type, kc.kl_coef, kc.target_kl, kc.horizon),
                           ref=None, actor=None, actor_opt=None, actor_sched=None)


def test_kl_ctrl_override_rebuilds_the_running_controller():
    cfg = load_config(preset="arith-grpo", overrides=["algorithm.kl_ctrl.kl_coef=0.05"])
    st = _live_state(cfg)
    assert isinstance(st.kl_ctrl, FixedKLController)
    st.kl_ctrl.value = 0.07  # as if it had been adapted
    set_key(cfg, "algorithm.kl_ctrl.type", "adaptive")
    apply_live(st, "algorithm.kl_ctrl.type", "adaptive")
    assert isinstance(st.kl_ctrl, AdaptiveKLController)
    assert st.kl_ctrl.value == pytest.approx(0.07)  # keeps the coefficient it had reached
    set_key(cfg, "algorithm.kl_ctrl.target_kl", 0.5)
    apply_live(st, "algorithm.kl_ctrl.target_kl", 0.5)
    st.kl_ctrl.update(0.5, n_steps=1)  # at target: the coefficient must not move
    assert st.kl_ctrl.value == pytest.approx(0.07)
    set_key(cfg, "algorithm.kl_ctrl.kl_coef", 0.2)
    apply_live(st, "algorithm.kl_ctrl.kl_coef", 0.2)
    assert st.kl_ctrl.value == pytest.approx(0.2)


def test_strict_preflight_stops_train_before_building_anything(tmp_path, tiny_overrides):
    from rlcockpit.preflight import PreflightFailed
    from rlcockpit.trainer.loop import train

    cfg = load_config(overrides=[*tiny_overrides, "trainer.preflight=strict", "reward.name=arith",
                                 "data.train_files=[" + str(tmp_path / "missing.parquet") + "]",
                                 f"trainer.rlcockpit_dir={tmp_path}/store",
                                 f"trainer.default_local_dir={tmp_path}/ckpt"])
    with pytest.raises(PreflightFailed, match="data"):
        train(cfg, log=lambda *_: None)
    assert not (tmp_path / "ckpt").exists()


def test_preflight_off_survives_yaml_boolean_parsing():
    # `off` is a YAML 1.1 boolean; the override must still mean the string choice "off"
    assert load_config(overrides=["trainer.preflight=off"]).trainer.preflight == "off"
    assert load_config(overrides=["trainer.preflight=strict"]).trainer.preflight == "strict"
