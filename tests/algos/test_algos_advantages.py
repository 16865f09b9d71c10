"""Advantage estimators against hand-computed numbers, plus the properties the trainer relies on."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rlcockpit.algos import ADV_ESTIMATORS, accepted_params, compute_advantage, scores_to_token_level

NAN = float("nan")
EPS = 1e-6


def close(actual, expected, tol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


def outcome_batch(scores, lengths, length=4):
    """Token-level rewards with each score on the last valid token, plus the response mask."""
    mask = torch.zeros(len(scores), length)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    return scores_to_token_level(torch.tensor(scores, dtype=torch.float32), mask), mask


# ----------------------------------------------------------------------------------------- GRPO


def test_grpo_hand_computed_with_singleton_group():
    rewards, mask = outcome_batch([1.0, 2.0, 3.0, 5.0], [2, 4, 3, 1])
    adv, ret = compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask,
                                 index=np.array(["a", "a", "a", "b"], dtype=object))
    # group a: mean 2, unbiased std 1 -> (-1, 0, 1) / (1 + eps); singleton b: mean 0, std 1 -> 5 / (1 + eps)
    per_row = [-1 / (1 + EPS), 0.0, 1 / (1 + EPS), 5 / (1 + EPS)]
    close(adv, torch.tensor(per_row).unsqueeze(-1) * mask)
    close(ret, adv)


def test_grpo_two_member_group_uses_unbiased_std():
    rewards, mask = outcome_batch([1.0, 0.0], [3, 3])
    adv, _ = compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=[0, 0])
    std = math.sqrt(0.5)  # ((0.5^2 + 0.5^2) / (2 - 1)) ** 0.5
    close(adv[:, 0], [0.5 / (std + EPS), -0.5 / (std + EPS)])


def test_dr_grpo_skips_std_normalisation():
    rewards, mask = outcome_batch([1.0, 2.0, 6.0], [2, 2, 2])
    adv, _ = compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=["q"] * 3,
                               norm_adv_by_std_in_grpo=False)
    close(adv[:, 0], [-2.0, -1.0, 3.0])


def test_grpo_is_zero_mean_per_group_and_zero_for_identical_rewards():
    torch.manual_seed(1)
    scores = torch.rand(12).tolist()
    scores[8:12] = [0.7] * 4  # group "c": identical rewards
    index = np.array(["a"] * 4 + ["b"] * 4 + ["c"] * 4, dtype=object)
    rewards, mask = outcome_batch(scores, [1, 2, 3, 4] * 3)
    adv, _ = compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=index)
    per_row = adv[:, 0]
    for g in range(3):
        close(per_row[4 * g:4 * g + 4].mean(), 0.0)
    close(per_row[8:], [0.0] * 4)
    # normalised by the group std: unit (unbiased) std within a group of distinct rewards
    close(per_row[:4].std(), 1.0, tol=1e-4)


# ----------------------------------------------------------------------------------------- RLOO


def test_rloo_leave_one_out_hand_computed():
    rewards, mask = outcome_batch([1.0, 2.0, 3.0, 5.0], [1, 2, 3, 4])
    adv, ret = compute_advantage("rloo", token_level_rewards=rewards, response_mask=mask, index=["a", "a", "a", "b"])
    # a: 1 - (2+3)/2, 2 - (1+3)/2, 3 - (1+2)/2; singleton b keeps its score
    close(adv, torch.tensor([-1.5, 0.0, 1.5, 5.0]).unsqueeze(-1) * mask)
    close(ret, adv)


def test_rloo_identical_rewards_give_zero():
    rewards, mask = outcome_batch([0.3, 0.3, 0.3], [2, 3, 4])
    adv, _ = compute_advantage("rloo", token_level_rewards=rewards, response_mask=mask, index=[1, 1, 1])
    close(adv, torch.zeros(3, 4))


# ---------------------------------------------------------------------------------------- ReMax


def test_remax_subtracts_greedy_baseline_from_reward_to_go():
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.5, 0.0, 2.0]])  # row 1: the 2.0 sits on padding
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv, ret = compute_advantage("remax", token_level_rewards=rewards, response_mask=mask,
                                 reward_baselines=torch.tensor([0.4, 1.0]))
    close(ret, [[1.0, 1.0, 1.0], [0.5, 0.0, 0.0]])
    close(adv, [[0.6, 0.6, 0.6], [-0.5, -1.0, 0.0]])


def test_remax_requires_baselines():
    rewards, mask = outcome_batch([1.0], [2])
    with pytest.raises(ValueError, match="reward_baselines"):
        compute_advantage("remax", token_level_rewards=rewards, response_mask=mask)
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        compute_advantage("remax", token_level_rewards=rewards, response_mask=mask, reward_baselines=torch.zeros(2))


# ------------------------------------------------------------------------------------ REINFORCE++


def test_reinforce_plus_plus_discounted_returns_then_whitening():
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 9.0]])  # 9.0 is padding
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv, ret = compute_advantage("reinforce_plus_plus", token_level_rewards=rewards, response_mask=mask, gamma=0.5)
    close(ret, [[0.25, 0.5, 1.0], [1.0, 2.0, 0.0]])
    # valid returns 0.25, 0.5, 1, 1, 2: mean 0.95, unbiased var 1.8 / 4 = 0.45
    std = math.sqrt(0.45)
    close(adv, [[-0.7 / std, -0.45 / std, 0.05 / std], [0.05 / std, 1.05 / std, 0.0]], tol=1e-4)


def test_reinforce_plus_plus_baseline_group_mean_then_batch_whitening():
    rewards, mask = outcome_batch([1.0, 0.0, 2.0], [2, 1, 1], length=2)
    adv, ret = compute_advantage("reinforce_plus_plus_baseline", token_level_rewards=rewards, response_mask=mask,
                                 index=["a", "a", "b"])
    # centred: a -> +0.5 (2 tokens), -0.5 (1 token); singleton b -> 2.0 (baseline 0)
    # valid values 0.5, 0.5, -0.5, 2.0: mean 0.625, unbiased var 3.1875 / 3 = 1.0625
    std = math.sqrt(1.0625)
    close(adv, [[-0.125 / std, -0.125 / std], [-1.125 / std, 0.0], [1.375 / std, 0.0]], tol=1e-4)
    close(ret, adv)


# ------------------------------------------------------------------------------------------- GAE


def test_gae_gamma_lambda_one_hand_computed():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.7]])
    mask = torch.ones(1, 3)
    adv, ret = compute_advantage("gae", token_level_rewards=rewards, response_mask=mask, values=values)
    # deltas 0.1, 0.1, 0.3 -> raw advantages 0.5, 0.4, 0.3; returns = raw + values
    close(ret, [[1.0, 1.0, 1.0]])
    # whitened: mean 0.4, unbiased std 0.1
    close(adv, [[1.0, 0.0, -1.0]], tol=1e-4)


def test_gae_discounted_returns_hand_computed():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.7]])
    _, ret = compute_advantage("gae", token_level_rewards=rewards, response_mask=torch.ones(1, 3), values=values,
                               gamma=0.9, lam=0.5)
    # deltas: t2 = 1 - 0.7 = 0.3; t1 = 0.9*0.7 - 0.6 = 0.03; t0 = 0.9*0.6 - 0.5 = 0.04
    # A2 = 0.3; A1 = 0.03 + 0.45*0.3 = 0.165; A0 = 0.04 + 0.45*0.165 = 0.11425
    close(ret, [[0.11425 + 0.5, 0.165 + 0.6, 0.3 + 0.7]])


def test_gae_skips_masked_positions_inside_and_after_a_response():
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 5.0]])
    values = torch.tensor([[0.5, 99.0, 0.7], [0.2, 0.4, NAN]])
    mask = torch.tensor([[1, 0, 1], [1, 1, 0]])
    adv, ret = compute_advantage("gae", token_level_rewards=rewards, response_mask=mask, values=values)
    # row 0 skips the middle token: A2 = 0.3, A0 = (0.7 - 0.5) + 0.3 = 0.5
    # row 1 ignores the padded reward/value: A1 = 1 - 0.4 = 0.6, A0 = (0.4 - 0.2) + 0.6 = 0.8
    close(ret, [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    assert torch.isfinite(adv).all()
    assert adv[0, 1] == 0 and adv[1, 2] == 0
    raw = torch.tensor([0.5, 0.3, 0.8, 0.6])
    close(adv[mask.bool()], (raw - raw.mean()) / raw.std(), tol=1e-4)


def test_gae_requires_values():
    rewards, mask = outcome_batch([1.0], [2])
    with pytest.raises(ValueError, match="values"):
        compute_advantage("gae", token_level_rewards=rewards, response_mask=mask)


# ------------------------------------------------------------------------------ shared properties

GROUPED = ["grpo", "rloo", "reinforce_plus_plus_baseline"]


def _inputs_of(name, rewards, mask):
    """The inputs ``name`` uses (passing one it ignores is an error, see test_ignored_inputs_raise)."""
    bs = rewards.shape[0]
    torch.manual_seed(5)
    data = dict(values=torch.linspace(0, 1, rewards.numel()).view_as(rewards),
                reward_baselines=torch.full((bs,), 0.25),
                old_log_probs=torch.log(torch.rand(rewards.shape) * 0.9 + 0.05),
                sum_pi_squared=torch.rand(rewards.shape) * 0.5 + 0.2)
    params = accepted_params(ADV_ESTIMATORS.get(name))
    return {"index": np.array([i // 2 for i in range(bs)]), "gamma": 0.9, "lam": 0.95,
            **{k: v for k, v in data.items() if k in params}}


ALL_ESTIMATORS = sorted(set(ADV_ESTIMATORS.names()) - {"grpo_passk"}) + ["grpo_passk"]


@pytest.mark.parametrize("name", ALL_ESTIMATORS)
def test_padding_never_affects_any_estimator(name):
    torch.manual_seed(3)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    rewards = torch.randn(4, 5) * mask
    kwargs = _inputs_of(name, rewards, mask)
    adv, ret = compute_advantage(name, token_level_rewards=rewards, response_mask=mask, **kwargs)
    dirty = torch.where(mask.bool(), rewards, torch.full_like(rewards, NAN))
    for key in ("values", "old_log_probs", "sum_pi_squared"):
        if key in kwargs:
            kwargs[key] = torch.where(mask.bool(), kwargs[key], torch.full_like(rewards, 1e9))
    adv2, ret2 = compute_advantage(name, token_level_rewards=dirty, response_mask=mask, **kwargs)
    close(adv2, adv)
    close(ret2 * mask, ret * mask)
    assert (adv[~mask.bool()] == 0).all()
    assert adv.shape == ret.shape == (4, 5)


def test_ignored_inputs_raise_instead_of_being_dropped():
    rewards, mask = outcome_batch([1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match="'grpo'.*does not use values"):
        compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=[0, 0], values=rewards)
    with pytest.raises(ValueError, match="does not use rollout_is_weights"):
        compute_advantage("rloo", token_level_rewards=rewards, response_mask=mask, index=[0, 0],
                          rollout_is_weights=torch.ones(2, 4))
    with pytest.raises(TypeError, match="'gama'.*Did you mean 'gamma'"):
        compute_advantage("reinforce_plus_plus", token_level_rewards=rewards, response_mask=mask, gama=0.9)
    # config fields another estimator reads are simply not passed (gamma means nothing to grpo)
    compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=[0, 0], gamma=0.9, lam=0.9)


@pytest.mark.parametrize("name", GROUPED)
def test_group_estimators_need_index(name):
    rewards, mask = outcome_batch([1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match=f"{name}.*index"):
        compute_advantage(name, token_level_rewards=rewards, response_mask=mask)
    with pytest.raises(ValueError, match="index has 3 entries but the batch has 2 rows"):
        compute_advantage(name, token_level_rewards=rewards, response_mask=mask, index=[0, 0, 1])


@pytest.mark.parametrize("name", GROUPED)
def test_group_index_types_are_interchangeable(name):
    rewards, mask = outcome_batch([1.0, 2.0, 4.0, 0.0], [2, 3, 1, 4])
    results = [
        compute_advantage(name, token_level_rewards=rewards, response_mask=mask, index=idx)[0]
        for idx in (np.array(["u1", "u1", "u2", "u2"], dtype=object), [3, 3, 8, 8], torch.tensor([3, 3, 8, 8]))
    ]
    close(results[1], results[0])
    close(results[2], results[0])


def test_advantages_carry_no_graph():
    rewards, mask = outcome_batch([1.0, 2.0], [2, 2])
    rewards.requires_grad_(True)
    adv, _ = compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask, index=[0, 0])
    assert not adv.requires_grad


def test_compute_advantage_shape_errors_name_the_argument():
    rewards, mask = outcome_batch([1.0, 2.0], [2, 2])
    with pytest.raises(ValueError, match=r"response_mask has shape \(2, 3\)"):
        compute_advantage("grpo", token_level_rewards=rewards, response_mask=mask[:, :3], index=[0, 0])
    with pytest.raises(ValueError, match=r"\(bs, T\)"):
        compute_advantage("grpo", token_level_rewards=rewards[0], response_mask=mask[0], index=[0, 0])


def test_builtin_estimators_are_registered_under_verl_names():
    assert {"gae", "grpo", "rloo", "remax", "reinforce_plus_plus", "reinforce_plus_plus_baseline"} <= set(
        ADV_ESTIMATORS.names()
    )
