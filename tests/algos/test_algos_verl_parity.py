"""The verl 0.9 behaviours rlcockpit fixed or added, checked by hand (the oracle fixture checks the numbers).

* REINFORCE++ carries the return through masked (observation) tokens; GSPO honours ``loss_agg_mode``;
  ``reinforce`` is verl's REINFORCE loss, not GPG.
* ``k1+`` / ``k3+`` / ``low_var_kl+``: the named estimator's value with k2's gradient; ``full`` is the exact KL.
* An input a function would ignore raises instead of being dropped.
* Rollout correction: truncation, IcePop, rejection, bypass mode.
"""

from __future__ import annotations

import math

import pytest
import torch

from rlcockpit.algos import (
    POLICY_LOSSES,
    compute_advantage,
    compute_kl_loss,
    compute_policy_loss,
    compute_rollout_correction_and_rejection_mask,
    kl_needs_full_vocab,
    kl_penalty,
)


def close(actual, expected, tol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


# ------------------------------------------------------------------------------------------- fixes


def test_reinforce_plus_plus_carries_the_return_through_observation_tokens():
    # turn 1 = tokens 0-1, tool output = tokens 2-3 (masked), turn 2 = token 4 with the reward
    rewards = torch.tensor([[0.0, 0.0, 5.0, 5.0, 1.0]])  # rewards on masked tokens are ignored
    mask = torch.tensor([[1, 1, 0, 0, 1]])
    _, returns = compute_advantage("reinforce_plus_plus", token_level_rewards=rewards, response_mask=mask, gamma=0.5)
    # the next *valid* token is one step of discount away: G4 = 1, G1 = 0.5, G0 = 0.25 (it used to be 0, 0, 1)
    close(returns, [[0.25, 0.5, 0.0, 0.0, 1.0]])


def test_gspo_honours_loss_agg_mode():
    old = torch.zeros(2, 3)
    lp = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    adv = torch.tensor([[1.0, 1.0, 1.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    token_mean = compute_policy_loss(old, lp, adv, mask, loss_name="gspo", loss_agg_mode="token-mean")
    seq_mean = compute_policy_loss(old, lp, adv, mask, loss_name="gspo", loss_agg_mode="seq-mean-token-mean")
    close(token_mean["pg_loss"], -(1 + 1 + 1 + 4) / 4)  # ratio 1 everywhere
    close(seq_mean["pg_loss"], -(1 + 4) / 2)


def test_reinforce_is_verls_reinforce_not_gpg():
    assert POLICY_LOSSES.get("reinforce") is not POLICY_LOSSES.get("gpg")
    lp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    args = (torch.tensor([[-1.5, -2.0, -3.0]]), lp, torch.tensor([[1.0, -1.0, 2.0]]), torch.tensor([[1, 1, 0]]))
    weights = torch.tensor([[2.0, 0.5, 9.0]])
    out = compute_policy_loss(*args, loss_name="reinforce", loss_agg_mode="seq-mean-token-sum",
                              rollout_is_weights=weights)
    close(out["pg_loss"], -(2.0 * 1.0 * -1.0 + 0.5 * -1.0 * -2.0))  # -sum(w A log_prob), one sequence
    close(out["ppo_kl"], (-1.5 - -1.0 + 0.0) / 2)  # mean(rollout_log_prob - log_prob)
    out["pg_loss"].backward()
    close(lp.grad, [[-2.0, 0.5, 0.0]])


# ------------------------------------------------------------------------------------------ KL variants


@pytest.mark.parametrize(("plus", "base"), [("k1+", "k1"), ("kl+", "kl"), ("k3+", "k3"), ("low_var_kl+", "low_var_kl"),
                                            ("abs+", "abs"), ("k2+", "k2"), ("mse+", "mse")])
def test_straight_through_kl_has_the_base_value_and_k2_gradient(plus, base):
    torch.manual_seed(0)
    ref = torch.randn(3, 4)
    x = torch.randn(3, 4, requires_grad=True)
    value = kl_penalty(x, ref, plus)
    close(value, kl_penalty(x, ref, base))
    value.sum().backward()
    close(x.grad, x.detach() - ref)  # d/dx of (x - ref)^2 / 2


def test_full_kl_is_the_exact_kl_between_distributions():
    torch.manual_seed(1)
    logits, ref_logits = torch.randn(2, 3, 11, requires_grad=True), torch.randn(2, 3, 11)
    lp, ref = torch.log_softmax(logits, -1), torch.log_softmax(ref_logits, -1)
    kl = kl_penalty(lp, ref, "full")
    assert kl.shape == (2, 3) and kl_needs_full_vocab("full") and not kl_needs_full_vocab("k3+")
    expected = torch.nn.functional.kl_div(ref, lp, log_target=True, reduction="none").sum(-1)
    close(kl, expected)
    assert (kl >= 0).all()
    loss = compute_kl_loss(lp, ref, torch.ones(2, 3), kl_loss_type="full")
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


def test_full_kl_refuses_per_token_log_probs():
    with pytest.raises(ValueError, match="log_softmax over the vocabulary"):
        kl_penalty(torch.full((2, 5), -1.0), torch.full((2, 5), -2.0), "full")


# --------------------------------------------------------------------------------- ignored arguments


def test_a_loss_that_would_ignore_rollout_is_weights_refuses_them(monkeypatch):
    args = (torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), torch.ones(1, 2))
    with pytest.raises(ValueError, match="'bypass_mode'.*does not use rollout_is_weights"):
        compute_policy_loss(*args, loss_name="bypass_mode", rollout_is_weights=torch.ones(1, 2))

    def strict(old_log_prob, log_prob, advantages, response_mask, *, loss_agg_mode="token-mean"):
        return {"pg_loss": (log_prob * 0).sum()}

    monkeypatch.setitem(POLICY_LOSSES._items, "test_strict", strict)
    with pytest.raises(ValueError, match="does not use rollout_is_weights"):
        compute_policy_loss(*args, loss_name="test_strict", rollout_is_weights=torch.ones(1, 2))
    compute_policy_loss(*args, loss_name="test_strict", tau_pos=2.0)  # another loss's field: not passed, fine
    with pytest.raises(TypeError, match="'tau_pso'.*Did you mean 'tau_pos'"):
        compute_policy_loss(*args, loss_name="test_strict", tau_pso=2.0)


@pytest.mark.parametrize("name", sorted(set(POLICY_LOSSES.names()) - {"bypass_mode"}))
def test_every_builtin_loss_applies_rollout_is_weights(name):
    """Weights of 0 on a token must remove its contribution, in every loss verl applies them in."""
    torch.manual_seed(2)
    old = torch.log(torch.rand(2, 4) * 0.8 + 0.1)
    lp = (old + 0.1 * torch.randn(2, 4)).requires_grad_(True)
    adv, mask = torch.randn(2, 4), torch.ones(2, 4)
    extra = {"dro_beta": 0.1} if name == "dro" else {}
    w = torch.ones(2, 4)
    if name == "geo_mean":  # one weight per sequence, their geometric mean
        w[0] = 0.0
    else:
        w[0, 1] = 0.0
    compute_policy_loss(old, lp, adv, mask, loss_name=name, rollout_is_weights=w, **extra)["pg_loss"].backward()
    if name == "geo_mean":
        assert lp.grad[0].abs().max() < 1e-6 and lp.grad[1].abs().max() > 0
    else:
        assert lp.grad[0, 1].abs() < 1e-6 and lp.grad[0, 0].abs() > 0


# -------------------------------------------------------------------------------- rollout correction


def test_token_is_weights_are_truncated_and_sequence_weights_are_products():
    rollout = torch.log(torch.tensor([[0.5, 0.5, 0.5]]))
    train = torch.log(torch.tensor([[0.5, 1.0, 0.25]]))  # token ratios 1, 2, 0.5
    mask = torch.tensor([[1, 1, 1]])
    w, out_mask, metrics = compute_rollout_correction_and_rejection_mask(train, rollout, mask, rollout_is="token",
                                                                         rollout_is_threshold=1.5)
    close(w, [[1.0, 1.5, 0.5]])
    assert torch.equal(out_mask, mask)
    close(metrics["rollout_corr/rollout_is_ratio_fraction_high"], 1 / 3)
    w, _, _ = compute_rollout_correction_and_rejection_mask(train, rollout, mask, rollout_is="sequence",
                                                            rollout_is_threshold=2.0)
    close(w, [[1.0, 1.0, 1.0]])  # 1 * 2 * 0.5
    w, _, m = compute_rollout_correction_and_rejection_mask(train, rollout, mask, rollout_is="token",
                                                            rollout_is_threshold="0.6_1.5")
    close(w, [[1.0, 0.0, 0.0]])  # IcePop: outside [0.6, 1.5] -> 0
    close(m["rollout_corr/rollout_is_oob_ratio"], 2 / 3)


def test_rejection_sampling_masks_whole_sequences_and_reports_it():
    rollout = torch.log(torch.full((2, 3), 0.5))
    train = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.05, 0.5]]))
    mask = torch.ones(2, 3, dtype=torch.long)
    w, out_mask, m = compute_rollout_correction_and_rejection_mask(train, rollout, mask, rollout_rs="seq_max_k3",
                                                                   rollout_rs_threshold=1.0)
    assert w is None and out_mask.tolist() == [[1, 1, 1], [0, 0, 0]]
    close(m["rollout_corr/rollout_rs_seq_masked_fraction"], 0.5)
    close(m["rollout_corr/rollout_rs_masked_fraction"], 0.5)
    assert m["rollout_corr/kl"] > 0 and m["rollout_corr/chi2_token"] < 0  # the training policy is less confident


def test_bypass_mode_reinforce_applies_the_weights_and_reports_rollout_metrics():
    rollout = torch.log(torch.tensor([[0.5, 0.5]]))
    lp = torch.log(torch.tensor([[1.0, 0.25]])).requires_grad_(True)  # ratios 2, 0.5
    adv, mask = torch.tensor([[1.0, 1.0]]), torch.ones(1, 2)
    out = compute_policy_loss(rollout, lp, adv, mask, loss_name="bypass_mode", loss_type="reinforce",
                              rollout_is="token", rollout_is_threshold=1.5, loss_agg_mode="token-mean")
    close(out["pg_loss"].detach(), -(1.5 * math.log(1.0) + 0.5 * math.log(0.25)) / 2)
    assert "rollout_corr/rollout_is_mean" in out and not out["rollout_corr/kl"].requires_grad
    with pytest.raises(ValueError, match="loss_type"):
        compute_policy_loss(rollout, lp, adv, mask, loss_name="bypass_mode", loss_type="ppo")
    assert math.isfinite(float(out["pg_loss"].detach()))


def test_rollout_corr_metrics_have_guide_entries_with_verls_health_bounds():
    from rlcockpit.metrics.guide import lookup

    rollout = torch.log(torch.rand(4, 6) * 0.8 + 0.1)
    _, _, metrics = compute_rollout_correction_and_rejection_mask(rollout + 0.05, rollout, torch.ones(4, 6),
                                                                  rollout_is="token", rollout_rs="token_k3",
                                                                  rollout_rs_threshold=0.5)
    for key in ("kl", "k3_kl", "chi2_token", "chi2_seq", "ppl_ratio", "log_ppl_diff", "training_ppl", "rollout_ppl",
                "rollout_is_mean", "rollout_is_std", "rollout_is_eff_sample_size", "rollout_is_ratio_fraction_high",
                "rollout_rs_masked_fraction", "rollout_rs_seq_masked_fraction"):
        assert f"rollout_corr/{key}" in metrics, key
        info = lookup(f"rollout_corr/{key}")
        assert info is not None and info.key == f"rollout_corr/{key}" and info.zh.get("title"), key
    # verl: unhealthy when the IS mean leaves [0.5, 2], ESS < 0.3, IS std > 1, |kl| > 0.1, chi2_token > 1
    assert lookup("rollout_corr/rollout_is_mean").healthy == (0.5, 2.0)
    assert lookup("rollout_corr/rollout_is_eff_sample_size").healthy == (0.3, None)
    assert lookup("rollout_corr/rollout_is_std").healthy == (None, 1.0)
    assert lookup("rollout_corr/kl").healthy == (-0.1, 0.1)
    assert lookup("rollout_corr/chi2_token").healthy == (None, 1.0)
