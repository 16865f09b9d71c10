"""Users extend rlcockpit.algos by name, and mistyped names fail with a hint."""

from __future__ import annotations

import pytest
import torch

from rlcockpit.algos import (
    ADV_ESTIMATORS,
    KL_ESTIMATORS,
    POLICY_LOSSES,
    agg_loss,
    compute_advantage,
    compute_policy_loss,
    kl_penalty,
)


@pytest.fixture
def scratch_names():
    """Remove test-only registrations afterwards so other tests see the stock registries."""
    added: list[tuple[object, str]] = []
    yield added
    for registry, name in added:
        if name in registry:
            registry.unregister(name)


def test_user_registered_estimator_receives_all_inputs(scratch_names):
    seen = {}

    @ADV_ESTIMATORS.register("test_const_seven")
    def const_seven(*, token_level_rewards, response_mask, gamma, index, **kwargs):
        seen.update(gamma=gamma, index=index, extra=kwargs.get("my_option"), lam=kwargs["lam"])
        adv = 7.0 * response_mask.float()
        return adv, adv

    scratch_names.append((ADV_ESTIMATORS, "test_const_seven"))
    mask = torch.tensor([[1, 1, 0]])
    adv, ret = compute_advantage("test_const_seven", token_level_rewards=torch.zeros(1, 3), response_mask=mask,
                                 index=["p"], gamma=0.9, lam=0.8, my_option="x")
    assert adv.tolist() == [[7.0, 7.0, 0.0]]
    assert seen == {"gamma": 0.9, "index": ["p"], "extra": "x", "lam": 0.8}


def test_user_policy_loss_tuple_or_partial_dict_is_normalised(scratch_names):
    @POLICY_LOSSES.register("test_verl_style")
    def verl_style(old_log_prob, log_prob, advantages, response_mask, *, loss_agg_mode, **kwargs):
        loss = agg_loss(-advantages * log_prob, response_mask, loss_agg_mode)
        return loss, torch.tensor(0.25), 0.5, torch.tensor(0.0)

    @POLICY_LOSSES.register("test_dict_style")
    def dict_style(old_log_prob, log_prob, advantages, response_mask, **kwargs):
        return {"pg_loss": (log_prob * 0).sum() + kwargs["clip_ratio_high"], "my_metric": torch.tensor(1.0)}

    scratch_names.extend([(POLICY_LOSSES, "test_verl_style"), (POLICY_LOSSES, "test_dict_style")])
    lp = torch.tensor([[-1.0, -3.0]], requires_grad=True)
    args = (torch.zeros(1, 2), lp, torch.ones(1, 2), torch.ones(1, 2))
    out = compute_policy_loss(*args, loss_name="test_verl_style")
    assert out["pg_loss"].item() == pytest.approx(2.0)
    assert out["pg_clipfrac"].item() == 0.25 and out["ppo_kl"].item() == 0.5
    out["pg_loss"].backward()
    assert lp.grad.tolist() == [[-0.5, -0.5]]

    out = compute_policy_loss(*args, loss_name="test_dict_style", clip_ratio=0.2, clip_ratio_high=0.28)
    assert out["pg_loss"].item() == pytest.approx(0.28)
    assert out["pg_clipfrac"].item() == 0 and out["pg_clipfrac_lower"].item() == 0 and "my_metric" in out


def test_bad_policy_loss_return_is_a_clear_error(scratch_names):
    @POLICY_LOSSES.register("test_bad_return")
    def bad(*args, **kwargs):
        return 1.0, 2.0

    scratch_names.append((POLICY_LOSSES, "test_bad_return"))
    with pytest.raises(ValueError, match="test_bad_return.*2-tuple"):
        compute_policy_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1, 1),
                            loss_name="test_bad_return")


def test_user_kl_estimator(scratch_names):
    KL_ESTIMATORS.add("test_double_k1", lambda lp, ref: 2 * (lp - ref))
    scratch_names.append((KL_ESTIMATORS, "test_double_k1"))
    assert kl_penalty(torch.tensor([[1.0]]), torch.tensor([[0.25]]), "test_double_k1").item() == 1.5


def test_registering_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        ADV_ESTIMATORS.register("grpo")(lambda **kw: None)


def test_unknown_names_raise_key_error_naming_closest():
    mask = torch.ones(1, 2)
    with pytest.raises(KeyError, match="'grpo'"):
        compute_advantage("grop", token_level_rewards=torch.zeros(1, 2), response_mask=mask, index=[0])
    with pytest.raises(KeyError, match="'vanilla'"):
        compute_policy_loss(torch.zeros(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), mask, loss_name="vanila")
    with pytest.raises(KeyError, match="'reinforce_plus_plus_baseline'"):
        compute_advantage("reinforce_plus_plus_basline", token_level_rewards=torch.zeros(1, 2), response_mask=mask)
