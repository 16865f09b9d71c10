"""The console progress (plain lines off a terminal, a rich bar on one) and ``kl_controller.kl_coef_range``."""

from __future__ import annotations

import io

import pytest

import rlcockpit
from rlcockpit.algos import get_kl_controller
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.observe.progress import Progress
from rlcockpit.trainer.state import clamp_kl

METRICS = {"critic/score/mean": 0.5, "actor/entropy": 1.25, "actor/ppo_kl": 0.001, "response_length/mean": 3.0}


def test_plain_progress_is_one_line_per_step():
    out = io.StringIO()
    with Progress(3, stream=out) as p:
        for step in (1, 2, 3):
            p.update(step, METRICS, 2.0)
        p.val(0.75)
    lines = out.getvalue().splitlines()
    assert [ln.split(" | ")[0] for ln in lines] == [f"[rlcockpit] step {s}/3" for s in (1, 2, 3)]
    assert "2.00s/step" in lines[0] and "ETA 4s" in lines[0] and "ETA 0s" in lines[2]
    assert "score 0.500" in lines[0] and "entropy 1.250" in lines[0] and "len 3.0" in lines[0]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_progress_is_a_live_bar_with_prints_above_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    out = _Terminal()
    with Progress(2, stream=out) as p:
        assert p.live
        print("a note while the bar is up")  # redirected above the bar, not interleaved into it
        p.update(1, METRICS, 1.0)
        p.update(2, METRICS, 1.0)
    text = out.getvalue()
    assert "a note while the bar is up" in text and "2/2" in text and "score 0.500" in text
    assert "[rlcockpit] step" not in text  # no plain lines on a terminal


def test_kl_coef_range_clamps_the_adaptive_coefficient():
    cfg = load_config(overrides=["kl_controller.type=adaptive", "kl_controller.kl_coef_range=[0.01,0.02]",
                                 "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.horizon=1"], log=None)
    kc = cfg.algorithm.kl_ctrl
    ctrl = clamp_kl(get_kl_controller(kc.type, kc.kl_coef, kc.target_kl, kc.horizon), cfg)
    assert ctrl.value == pytest.approx(0.02)  # the start value is clamped too
    for _ in range(20):
        ctrl.update(10.0, n_steps=1)  # far above target: the controller wants to grow
        clamp_kl(ctrl, cfg)
    assert ctrl.value == pytest.approx(0.02)
    for _ in range(50):
        ctrl.update(0.0, n_steps=1)
        clamp_kl(ctrl, cfg)
    assert ctrl.value == pytest.approx(0.01)
    with pytest.raises(ValueError, match="kl_coef_range"):
        load_config(overrides=["kl_controller.kl_coef_range=[0.1,0.01]"], log=None)


@pytest.mark.slow
def test_kl_coef_range_holds_in_training(tiny_cfg, tmp_path):
    from rlcockpit.trainer.loop import train

    result = train(tiny_cfg("algorithm.use_kl_in_reward=true", "kl_controller.type=adaptive",
                            "algorithm.kl_ctrl.kl_coef=0.5", "kl_controller.kl_coef_range=[0.001,0.003]",
                            "trainer.total_training_steps=3", "trainer.test_freq=0"))
    hist = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()
    # verl logs the controller's beta as actor/reward_kl_penalty_coeff (actor/kl_coef is the KL-loss weight)
    assert "actor/kl_coef" not in hist.columns
    assert hist["actor/reward_kl_penalty_coeff"].dropna().between(0.001, 0.003).all()


@pytest.mark.parametrize(("extra", "shown"), [
    ({"actor/kl_loss": 7.12}, "kl_loss +7.1200"),  # use_kl_loss (GRPO)
    ({"actor/reward_kl_penalty": 6.5, "actor/ref_kl": 6.4}, "reward_kl_penalty +6.5000"),  # KL in the reward
    ({"actor/ref_kl": 7.44}, "ref_kl +7.4400"),
    ({}, "ppo_kl +0.0010"),  # no reference policy: the per-update KL, named as such
])
def test_kl_column_is_the_kl_to_the_reference_and_says_which(extra, shown):
    """The column showed actor/ppo_kl as "kl": -0.0000 through a collapse whose KL to the reference was ~7."""
    line = Progress(1, stream=io.StringIO()).line(1, {**METRICS, "actor/ppo_kl": -0.00001, **extra}
                                                  if extra else METRICS, 1.0)
    assert shown in line and line.count("kl") == shown.count("kl")  # one KL column, no other
