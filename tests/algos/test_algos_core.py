"""Masked statistics, loss aggregation and logits helpers, checked against hand-computed numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rlcockpit.algos import (
    agg_loss,
    entropy_from_logits,
    group_ids,
    logprobs_from_logits,
    masked_mean,
    masked_sum,
    masked_var,
    masked_whiten,
    scores_to_token_level,
)

NAN = float("nan")


def close(actual, expected, tol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), rtol=tol, atol=tol)


def test_masked_mean_ignores_padding_even_nan():
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, NAN, 6.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 1]])
    close(masked_mean(values, mask), (1 + 2 + 4 + 6) / 4)
    close(masked_mean(values, mask, dim=-1), [1.5, 5.0])
    close(masked_sum(values, mask), 13.0)
    close(masked_mean(values, mask.bool()), 3.25)


def test_masked_mean_of_empty_mask_is_zero_not_nan():
    values = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mask = torch.tensor([[0, 0], [1, 1]])
    assert masked_mean(values, torch.zeros_like(mask)).item() == 0.0
    close(masked_mean(values, mask, dim=-1), [0.0, 3.5])


def test_masked_var_unbiased_and_biased():
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 100.0, NAN]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    # valid 1,2,3,4: mean 2.5, squared deviations sum to 5
    close(masked_var(values, mask), 5 / 3)
    close(masked_var(values, mask, unbiased=False), 5 / 4)


def test_masked_var_rejects_too_few_positions():
    values = torch.tensor([[1.0, 2.0]])
    with pytest.raises(ValueError, match="no valid position"):
        masked_var(values, torch.tensor([[0, 0]]))
    with pytest.raises(ValueError, match="at least 2"):
        masked_var(values, torch.tensor([[1, 0]]))


def test_masked_whiten_hand_computed():
    values = torch.tensor([[1.0, 2.0, 3.0, 4.0, 50.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])
    std = math.sqrt(5 / 3)
    close(masked_whiten(values, mask)[0, :4], [-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std])
    close(masked_whiten(values, mask, shift_mean=False)[0, :4],
          [2.5 - 1.5 / std, 2.5 - 0.5 / std, 2.5 + 0.5 / std, 2.5 + 1.5 / std])


LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
LOSS_MASK = torch.tensor([[1, 1, 1], [1, 1, 0]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", 15 / 5),  # (1+2+3+4+5)/5
        ("seq-mean-token-sum", (6 + 9) / 2),
        ("seq-mean-token-mean", (2 + 4.5) / 2),
        ("seq-mean-token-sum-norm", (6 / 3 + 9 / 3) / 2),  # divisor = padded length 3
        ("token-sum", 15.0),
    ],
)
def test_agg_loss_modes_hand_computed(mode, expected):
    close(agg_loss(LOSS, LOSS_MASK, mode), expected)


@pytest.mark.parametrize("mode", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                                  "seq-mean-token-sum-norm"])
def test_agg_loss_fully_padded_rows_change_nothing(mode):
    padded_loss = torch.cat([LOSS, torch.tensor([[7.0, NAN, 9.0]])])
    padded_mask = torch.cat([LOSS_MASK, torch.zeros(1, 3, dtype=torch.long)])
    close(agg_loss(padded_loss, padded_mask, mode, loss_scale_factor=3), agg_loss(LOSS, LOSS_MASK, mode))


def test_agg_loss_scale_factor_overrides_padded_length():
    close(agg_loss(LOSS, LOSS_MASK, "seq-mean-token-sum-norm", loss_scale_factor=10), (0.6 + 0.9) / 2)
    with pytest.raises(ValueError, match="loss_scale_factor"):
        agg_loss(LOSS, LOSS_MASK, "seq-mean-token-sum-norm", loss_scale_factor=0)


@pytest.mark.parametrize("mode", ["token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean",
                                  "seq-mean-token-sum-norm"])
def test_agg_loss_micro_batches_sum_to_the_whole_batch(mode):
    """With the mini-batch's token and sequence counts, the micro-batch losses add up to the one-call loss."""
    torch.manual_seed(4)
    loss = torch.randn(6, 5)
    mask = (torch.arange(5) < torch.tensor([5, 1, 3, 0, 4, 2])[:, None]).long()
    whole = agg_loss(loss, mask, mode, loss_scale_factor=7)
    info = {"batch_num_tokens": mask.sum(), "global_batch_size": (mask.sum(-1) > 0).sum(), "loss_scale_factor": 7}
    parts = sum(agg_loss(loss[i:i + 2], mask[i:i + 2], mode, **info) for i in range(0, 6, 2))
    close(parts, whole)


def test_agg_loss_of_an_empty_batch_is_zero():
    for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum"):
        assert agg_loss(torch.ones(2, 3), torch.zeros(2, 3), mode).item() == 0.0


def test_agg_loss_unknown_mode_names_closest():
    with pytest.raises(KeyError, match="token-mean"):
        agg_loss(LOSS, LOSS_MASK, "token_mean")


def test_agg_loss_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match=r"loss_mask has shape \(2, 2\)"):
        agg_loss(LOSS, LOSS_MASK[:, :2], "token-mean")


def test_agg_loss_keeps_gradient():
    loss = LOSS.clone().requires_grad_(True)
    agg_loss(loss, LOSS_MASK, "seq-mean-token-mean").backward()
    # row 0: 1/3 per token / 2 rows; row 1: 1/2 per valid token / 2 rows; padding 0
    close(loss.grad, [[1 / 6, 1 / 6, 1 / 6], [0.25, 0.25, 0.0]])


def test_entropy_from_logits_hand_computed_and_stable():
    logits = torch.tensor([[0.0, 0.0], [0.0, math.log(3.0)], [1000.0, 1000.0]])
    # p = (1/2, 1/2) -> ln 2; p = (1/4, 3/4) -> 0.25 ln 4 + 0.75 ln(4/3)
    expected = [math.log(2), 0.25 * math.log(4) + 0.75 * math.log(4 / 3), math.log(2)]
    close(entropy_from_logits(logits), expected)


def test_entropy_of_bfloat16_logits_is_float32():
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0]]], dtype=torch.bfloat16)
    out = entropy_from_logits(logits)
    assert out.shape == (1, 1) and out.dtype == torch.float32
    close(out, [[math.log(4)]])


def test_logprobs_from_logits_hand_computed_with_grad():
    logits = torch.tensor([[[0.0, math.log(3.0)], [0.0, math.log(3.0)]]], requires_grad=True)
    labels = torch.tensor([[1, 0]])
    lp = logprobs_from_logits(logits, labels)
    close(lp, [[math.log(0.75), math.log(0.25)]])
    lp.sum().backward()
    # d log p_y / d z = onehot(y) - p
    close(logits.grad, [[[-0.25, 0.25], [0.75, -0.75]]])


def test_logprobs_from_bfloat16_logits_match_float32():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 11) * 5
    labels = torch.randint(0, 11, (2, 3))
    low = logprobs_from_logits(logits.bfloat16(), labels)
    assert low.dtype == torch.float32
    close(low, logprobs_from_logits(logits.bfloat16().float(), labels), tol=1e-5)


def test_logprobs_from_logits_rejects_wrong_label_shape():
    with pytest.raises(ValueError, match="labels shape"):
        logprobs_from_logits(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


def test_scores_to_token_level_puts_score_on_last_valid_token():
    scores = torch.tensor([1.0, 2.0, 3.0, 4.0])
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0]])
    expected = [[0, 1, 0, 0], [0, 0, 0, 2], [0, 0, 0, 0], [0, 0, 4, 0]]
    close(scores_to_token_level(scores, mask), expected)


def test_scores_to_token_level_rejects_mismatched_batch():
    with pytest.raises(ValueError, match="scores"):
        scores_to_token_level(torch.zeros(3), torch.ones(2, 4))


@pytest.mark.parametrize(
    "index",
    [np.array(["p1", "p2", "p1", "p3"], dtype=object), ["p1", "p2", "p1", "p3"], torch.tensor([7, 9, 7, 3]),
     np.array([7, 9, 7, 3])],
)
def test_group_ids_accepts_common_array_likes(index):
    ids, n = group_ids(index, 4)
    assert n == 3 and ids.tolist() == [0, 1, 0, 2]


def test_group_ids_length_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="index has 2 entries but the batch has 3 rows"):
        group_ids(["a", "b"], 3)
