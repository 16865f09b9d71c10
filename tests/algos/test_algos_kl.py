"""KL estimators, the in-reward KL penalty, the actor KL loss and the KL coefficient controllers."""

from __future__ import annotations

import math

import pytest
import torch

from rlcockpit.algos import (
    KL_ESTIMATORS,
    AdaptiveKLController,
    FixedKLController,
    apply_kl_penalty,
    compute_kl_loss,
    get_kl_controller,
    kl_penalty,
)

LN2 = math.log(2.0)


def close(actual, expected, tol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


# policy p = 0.5 and reference q = 0.25 (d = ln 2), then the reverse (d = -ln 2)
LOG_PROB = torch.tensor([[math.log(0.5), math.log(0.25)]])
REF_LOG_PROB = torch.tensor([[math.log(0.25), math.log(0.5)]])


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (("kl", "k1"), [LN2, -LN2]),
        (("abs",), [LN2, LN2]),
        (("mse", "k2"), [0.5 * LN2**2, 0.5 * LN2**2]),
        # k3 = q/p - ln(q/p) - 1: q/p = 1/2 -> 0.5 + ln2 - 1; q/p = 2 -> 2 - ln2 - 1
        (("low_var_kl", "k3"), [0.5 + LN2 - 1, 1 - LN2]),
    ],
)
def test_kl_estimators_hand_computed_with_aliases(names, expected):
    for name in names:
        close(kl_penalty(LOG_PROB, REF_LOG_PROB, name), [expected])


def test_low_var_kl_is_clamped_to_ten():
    out = kl_penalty(torch.tensor([[0.0, 0.0]]), torch.tensor([[15.0, 40.0]]), "low_var_kl")
    close(out, [[10.0, 10.0]])
    assert torch.isfinite(out).all()


def test_low_var_and_mse_are_non_negative_and_zero_at_equality():
    torch.manual_seed(0)
    lp, ref = torch.randn(4, 7), torch.randn(4, 7)
    for name in ("low_var_kl", "mse", "abs"):
        assert (kl_penalty(lp, ref, name) >= 0).all()
        close(kl_penalty(lp, lp, name), torch.zeros(4, 7))


def test_unknown_kl_estimator_names_closest():
    with pytest.raises(KeyError, match="low_var_kl"):
        kl_penalty(LOG_PROB, REF_LOG_PROB, "low_var")
    assert {"kl", "abs", "mse", "low_var_kl"} <= set(KL_ESTIMATORS.names())


def test_kl_loss_has_gradient_and_respects_mask():
    lp = torch.tensor([[math.log(0.5), 5.0]], requires_grad=True)
    ref = torch.tensor([[math.log(0.25), 0.0]])
    loss = compute_kl_loss(lp, ref, torch.tensor([[1, 0]]), kl_loss_type="low_var_kl")
    close(loss, 0.5 + LN2 - 1)
    loss.backward()
    # d/d lp of exp(ref - lp) - (ref - lp) - 1 = -q/p + 1 = 0.5; padded token gets nothing
    close(lp.grad, [[0.5, 0.0]])


def test_apply_kl_penalty_hand_computed():
    scores = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    old = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 9.0]])  # 9.0 is padding
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    ctrl = FixedKLController(0.5)
    rewards, metrics = apply_kl_penalty(scores, old, torch.zeros(2, 3), mask, ctrl, kl_penalty="kl")
    close(rewards, [[-0.05, -0.1, 0.85], [-0.2, 0.75, 0.0]])
    # per-sequence mean KL 0.2 and 0.45, averaged over sequences
    assert metrics == pytest.approx({"actor/reward_kl_penalty": 0.325, "actor/reward_kl_penalty_coeff": 0.5})
    assert ctrl.value == 0.5  # the trainer updates the controller, not apply_kl_penalty


def test_fixed_controller_never_moves():
    ctrl = FixedKLController(0.01)
    ctrl.update(current_kl=100.0, n_steps=1000)
    assert ctrl.value == 0.01


def test_adaptive_controller_hand_computed():
    ctrl = AdaptiveKLController(init_kl_coef=0.1, target_kl=1.0, horizon=100)
    ctrl.update(current_kl=1.5, n_steps=10)  # error 0.5 clipped to 0.2 -> x(1 + 0.2*10/100)
    assert ctrl.value == pytest.approx(0.102)
    ctrl.update(current_kl=0.9, n_steps=50)  # error -0.1 -> x(1 - 0.1*50/100)
    assert ctrl.value == pytest.approx(0.102 * 0.95)
    ctrl.update(current_kl=0.0, n_steps=100)  # error -1 clipped to -0.2 -> x0.8
    assert ctrl.value == pytest.approx(0.102 * 0.95 * 0.8)


def test_adaptive_controller_converges_towards_target_direction():
    ctrl = AdaptiveKLController(0.05, target_kl=0.1, horizon=1000)
    for _ in range(20):
        ctrl.update(current_kl=0.3, n_steps=64)
    assert ctrl.value > 0.05
    high = ctrl.value
    for _ in range(20):
        ctrl.update(current_kl=0.01, n_steps=64)
    assert ctrl.value < high


def test_get_kl_controller_by_type():
    fixed = get_kl_controller("fixed", kl_coef=0.2)
    assert isinstance(fixed, FixedKLController) and fixed.value == 0.2
    adaptive = get_kl_controller("adaptive", kl_coef=0.3, target_kl=0.05, horizon=500)
    assert isinstance(adaptive, AdaptiveKLController)
    assert (adaptive.value, adaptive.target, adaptive.horizon) == (0.3, 0.05, 500)
    with pytest.raises(KeyError, match="adaptive"):
        get_kl_controller("adaptiv")
    with pytest.raises(ValueError, match="horizon"):
        get_kl_controller("adaptive", horizon=0)
