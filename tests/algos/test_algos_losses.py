"""Policy losses (PPO clip, clip-higher, dual clip, GSPO, GPG) and the critic loss, hand-computed."""

from __future__ import annotations

import math

import pytest
import torch

from rlcockpit.algos import compute_entropy_bonus, compute_policy_loss, compute_value_loss

NAN = float("nan")


def close(actual, expected, tol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


def ppo_case():
    """Five valid tokens with chosen (ratio, advantage) and one padded token full of garbage.

    token  ratio  A    -A*r   -A*clip(r,.8,1.2)  max    dual (A<0: min with -A*3)
    t1     1.5    +1   -1.5   -1.2               -1.2   (ratio clip)
    t2     0.5    +1   -0.5   -0.8               -0.5
    t3     0.5    -1    0.5    0.8                0.8   (ratio clip)
    t4     4.0    -1    4.0    1.2                4.0   -> 3.0 (dual clip)
    t5     1.1    +2   -2.2   -2.2               -2.2
    """
    ratios = torch.tensor([[1.5, 0.5, 0.5], [4.0, 1.1, 100.0]])
    old = torch.zeros(2, 3)
    log_prob = ratios.log().requires_grad_(True)
    adv = torch.tensor([[1.0, 1.0, -1.0], [-1.0, 2.0, 100.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    return old, log_prob, adv, mask


def test_vanilla_ppo_hand_computed():
    old, log_prob, adv, mask = ppo_case()
    out = compute_policy_loss(old, log_prob, adv, mask, clip_ratio=0.2)
    close(out["pg_loss"], (-1.2 - 0.5 + 0.8 + 3.0 - 2.2) / 5)
    close(out["pg_clipfrac"], 2 / 5)
    close(out["pg_clipfrac_lower"], 1 / 5)
    close(out["ppo_kl"], -(math.log(1.5) + 2 * math.log(0.5) + math.log(4.0) + math.log(1.1)) / 5)
    assert set(out) == {"pg_loss", "pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"}


def test_vanilla_ppo_gradient_only_through_unclipped_tokens():
    old, log_prob, adv, mask = ppo_case()
    compute_policy_loss(old, log_prob, adv, mask, clip_ratio=0.2)["pg_loss"].backward()
    # d(-A r)/d log r = -A r, divided by 5 tokens; clipped, dual-clipped and padded tokens get 0
    close(log_prob.grad, [[0.0, -0.5 / 5, 0.0], [0.0, -2.2 / 5, 0.0]])


def test_metrics_are_detached_and_loss_is_not():
    old, log_prob, adv, mask = ppo_case()
    out = compute_policy_loss(old, log_prob, adv, mask)
    assert out["pg_loss"].requires_grad and out["pg_loss"].dim() == 0
    assert not any(out[k].requires_grad for k in ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"))


def test_clip_higher_uses_asymmetric_range():
    old, log_prob, adv, mask = ppo_case()
    out = compute_policy_loss(old, log_prob, adv, mask, clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28)
    # only t1 changes: -A*clip(1.5, 0.8, 1.28) = -1.28
    close(out["pg_loss"], (-1.28 - 0.5 + 0.8 + 3.0 - 2.2) / 5)
    close(out["pg_clipfrac"], 2 / 5)


def test_clip_ratio_defaults_fill_missing_side():
    old, log_prob, adv, mask = ppo_case()
    only_high = compute_policy_loss(old, log_prob, adv, mask, clip_ratio=0.1, clip_ratio_high=0.28)
    # low side falls back to clip_ratio=0.1: t2 uses max(-0.5, -0.9) = -0.5, t3 uses max(0.5, 0.9) = 0.9
    close(only_high["pg_loss"], (-1.28 - 0.5 + 0.9 + 3.0 - 2.2) / 5)


def test_dual_clip_bounds_loss_of_negative_advantages():
    torch.manual_seed(0)
    old = torch.zeros(8, 6)
    log_prob = torch.rand(8, 6) * 8  # ratios up to e^8
    adv = -torch.rand(8, 6) - 0.1
    mask = torch.ones(8, 6)
    for c in (1.5, 3.0, 10.0):
        out = compute_policy_loss(old, log_prob, adv, mask, clip_ratio_c=c, loss_agg_mode="seq-mean-token-sum")
        # every token's loss is at most -A * c, so the token-sum per row is too
        assert out["pg_loss"] <= (-adv * c).sum(-1).mean() + 1e-5
    out = compute_policy_loss(torch.zeros(2, 2), torch.full((2, 2), 10.0), -torch.ones(2, 2), torch.ones(2, 2),
                              clip_ratio_c=3.0)
    close(out["pg_loss"], 3.0)
    close(out["pg_clipfrac_lower"], 1.0)


def test_dual_clip_bound_must_exceed_one():
    old, log_prob, adv, mask = ppo_case()
    with pytest.raises(ValueError, match="clip_ratio_c"):
        compute_policy_loss(old, log_prob, adv, mask, clip_ratio_c=1.0)


def test_no_clipping_when_policies_agree():
    adv = torch.tensor([[1.0, -2.0, 0.5]])
    zeros = torch.zeros(1, 3)
    out = compute_policy_loss(zeros, zeros, adv, torch.ones(1, 3))
    close(out["pg_loss"], -(1.0 - 2.0 + 0.5) / 3)
    assert out["pg_clipfrac"] == 0 and out["pg_clipfrac_lower"] == 0 and out["ppo_kl"] == 0


@pytest.mark.parametrize("loss_name", ["vanilla", "gspo", "gpg"])
def test_padding_garbage_changes_neither_loss_nor_gradient(loss_name):
    torch.manual_seed(2)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    old = torch.randn(2, 4) * 0.1 - 1
    lp = (old + torch.randn(2, 4) * 0.1).detach()
    adv = torch.randn(2, 4)
    clean = lp.clone().requires_grad_(True)
    ref = compute_policy_loss(old, clean, adv, mask, loss_name=loss_name)
    ref["pg_loss"].backward()

    bad = mask == 0
    dirty = torch.where(bad, torch.full_like(lp, 50.0), lp).requires_grad_(True)
    out = compute_policy_loss(torch.where(bad, torch.full_like(old, NAN), old), dirty,
                              torch.where(bad, torch.full_like(adv, 1e6), adv), mask, loss_name=loss_name)
    out["pg_loss"].backward()
    for key in ref:
        close(out[key], ref[key])
    close(dirty.grad, clean.grad)
    assert (dirty.grad[bad] == 0).all()


def test_loss_agg_mode_is_applied():
    old, log_prob, adv, mask = ppo_case()
    out = compute_policy_loss(old, log_prob, adv, mask, loss_agg_mode="seq-mean-token-sum-norm",
                              global_batch_info={"loss_scale_factor": 4})
    # rows: (-1.2 - 0.5 + 0.8) = -0.9 and (3.0 - 2.2) = 0.8; each / 4, mean over 2 rows
    close(out["pg_loss"], (-0.9 / 4 + 0.8 / 4) / 2)


def test_gspo_uses_one_sequence_ratio():
    old = torch.zeros(1, 2)
    adv = torch.ones(1, 2)
    mask = torch.ones(1, 2)
    # mean log-ratio ln(2)/2 -> sequence ratio sqrt(2) = 1.414 > 1.2: both tokens clipped
    out = compute_policy_loss(old, torch.tensor([[math.log(2.0), 0.0]]), adv, mask, loss_name="gspo")
    close(out["pg_loss"], -1.2)
    close(out["pg_clipfrac"], 1.0)
    # log-ratios +0.1/-0.1 cancel: sequence ratio 1 although token ratios differ -> no clip
    lp = torch.tensor([[0.1, -0.1]], requires_grad=True)
    out = compute_policy_loss(old, lp, adv, mask, loss_name="gspo")
    close(out["pg_loss"], -1.0)
    close(out["pg_clipfrac"], 0.0)
    close(out["ppo_kl"], 0.0)
    out["pg_loss"].backward()
    close(lp.grad, [[-0.5, -0.5]])  # -A * s / (2 tokens), per token


def test_gpg_is_plain_policy_gradient():
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    out = compute_policy_loss(torch.zeros(1, 2), lp, torch.tensor([[1.0, -1.0]]), torch.ones(1, 2), loss_name="gpg")
    close(out["pg_loss"], (1.0 - 2.0) / 2)
    out["pg_loss"].backward()
    close(lp.grad, [[-0.5, 0.5]])
    close(out["ppo_kl"], 1.5)


def test_policy_loss_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match=r"advantages has shape \(2, 2\)"):
        compute_policy_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 2), torch.ones(2, 3))


def test_value_loss_hand_computed():
    vpreds = torch.tensor([[1.0, 2.0, 2.0, 7.0]], requires_grad=True)
    values = torch.tensor([[0.5, 0.5, 0.5, NAN]])
    returns = torch.tensor([[1.0, 1.0, 3.0, 7.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    vf_loss, vf_clipfrac = compute_value_loss(vpreds, returns, values, mask, cliprange_value=0.5)
    # clipped preds 1.0, 1.0, 1.0; unclipped errors 0, 1, 1; clipped errors 0, 0, 4 -> max 0, 1, 4
    close(vf_loss, 0.5 * (0 + 1 + 4) / 3)
    close(vf_clipfrac, 1 / 3)
    assert not vf_clipfrac.requires_grad
    vf_loss.backward()
    # t1: unclipped branch, d 0.5*(v-R)^2/3 = (2-1)/3; t2: clipped branch is constant in vpreds -> 0
    close(vpreds.grad, [[0.0, 1 / 3, 0.0, 0.0]])


def test_entropy_bonus_is_aggregated_entropy():
    entropy = torch.tensor([[1.0, 3.0], [2.0, 9.0]])
    mask = torch.tensor([[1, 1], [1, 0]])
    close(compute_entropy_bonus(entropy, mask), 2.0)
    close(compute_entropy_bonus(entropy, mask, "seq-mean-token-mean"), (2.0 + 2.0) / 2)
