"""The pieces compose into a learning signal: a toy bandit policy improves under each estimator/loss pair."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlcockpit.algos import (
    compute_advantage,
    compute_entropy_bonus,
    compute_kl_loss,
    compute_policy_loss,
    compute_value_loss,
    entropy_from_logits,
    logprobs_from_logits,
    scores_to_token_level,
)

VOCAB, GOOD, PROMPTS, GROUP, LENGTH = 5, 3, 4, 6, 3


def _rollout(logits: torch.Tensor, gen: torch.Generator):
    """Sample GROUP responses of LENGTH tokens per prompt; reward = share of GOOD tokens."""
    probs = torch.softmax(logits.detach(), -1)
    tokens = torch.multinomial(probs.expand(PROMPTS * GROUP, VOCAB), LENGTH, replacement=True, generator=gen)
    lengths = torch.randint(1, LENGTH + 1, (PROMPTS * GROUP,), generator=gen)
    mask = (torch.arange(LENGTH) < lengths.unsqueeze(-1)).float()
    scores = ((tokens == GOOD).float() * mask).sum(-1) / lengths
    index = np.repeat(np.arange(PROMPTS), GROUP)
    return tokens, mask, scores_to_token_level(scores, mask), index


@pytest.mark.parametrize(
    ("estimator", "loss_name", "loss_agg_mode", "norm_std"),
    [
        ("grpo", "vanilla", "token-mean", True),
        ("grpo", "vanilla", "seq-mean-token-sum-norm", False),  # Dr.GRPO
        ("rloo", "vanilla", "seq-mean-token-mean", True),
        ("reinforce_plus_plus", "gpg", "token-mean", True),
        ("reinforce_plus_plus_baseline", "gspo", "token-mean", True),
    ],
)
def test_bandit_policy_learns_the_rewarded_token(estimator, loss_name, loss_agg_mode, norm_std):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    logits = torch.zeros(VOCAB, requires_grad=True)
    ref_logits = torch.zeros(VOCAB)
    opt = torch.optim.Adam([logits], lr=0.1)
    for _ in range(25):
        tokens, mask, rewards, index = _rollout(logits, gen)
        with torch.no_grad():
            old_lp = logprobs_from_logits(logits.expand(*tokens.shape, VOCAB), tokens)
        adv, _ = compute_advantage(estimator, token_level_rewards=rewards, response_mask=mask, index=index,
                                   norm_adv_by_std_in_grpo=norm_std)
        for _ in range(2):  # two PPO epochs on the same rollout: the ratio departs from 1
            step_logits = logits.expand(*tokens.shape, VOCAB)
            lp = logprobs_from_logits(step_logits, tokens)
            out = compute_policy_loss(old_lp, lp, adv, mask, clip_ratio=0.2, clip_ratio_high=0.28,
                                      loss_agg_mode=loss_agg_mode, loss_name=loss_name)
            entropy = compute_entropy_bonus(entropy_from_logits(step_logits), mask, loss_agg_mode)
            ref_lp = logprobs_from_logits(ref_logits.expand(*tokens.shape, VOCAB), tokens)
            kl = compute_kl_loss(lp, ref_lp, mask, kl_loss_type="low_var_kl", loss_agg_mode=loss_agg_mode)
            loss = out["pg_loss"] - 0.0 * entropy + 0.001 * kl
            opt.zero_grad()
            loss.backward()
            assert torch.isfinite(logits.grad).all()
            opt.step()
    p_good = torch.softmax(logits.detach(), -1)[GOOD].item()
    assert p_good > 0.7, f"p(good token) only {p_good:.3f} after training (uniform start 0.2)"


def test_critic_fits_returns_with_clipped_value_loss():
    torch.manual_seed(0)
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    vpred_param = torch.zeros(2, 3, requires_grad=True)
    opt = torch.optim.SGD([vpred_param], lr=0.5)
    for _ in range(200):
        values = vpred_param.detach().clone()
        _, returns = compute_advantage("gae", token_level_rewards=rewards, response_mask=mask, values=values,
                                       gamma=1.0, lam=1.0)
        vf_loss, _ = compute_value_loss(vpred_param, returns, values, mask, cliprange_value=0.2)
        opt.zero_grad()
        vf_loss.backward()
        opt.step()
    # with gamma = lam = 1 the fixed point is the undiscounted reward-to-go
    torch.testing.assert_close(vpred_param.detach() * mask, torch.tensor([[1.0, 1.0, 1.0], [2.0, 2.0, 0.0]]),
                               atol=1e-3, rtol=0)
