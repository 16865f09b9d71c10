"""DAPO's dynamic-sampling filter and soft overlong punishment."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rlcockpit.algos import dynamic_sampling_mask, overlong_penalty


def test_dynamic_sampling_drops_groups_with_identical_scores():
    scores = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.5, 0.5, 2.0])
    index = np.array(["a", "a", "b", "b", "c", "c", "d"], dtype=object)
    keep = dynamic_sampling_mask(scores, index)
    assert keep.dtype == torch.bool
    # a and c are all-equal (no signal); b varies; the singleton d is kept as verl does
    assert keep.tolist() == [False, False, True, True, False, False, True]


def test_dynamic_sampling_keeps_rows_in_place_for_shuffled_groups():
    scores = torch.tensor([0.0, 3.0, 0.0, 3.0])
    keep = dynamic_sampling_mask(scores, [1, 2, 1, 2])
    assert keep.tolist() == [False, False, False, False]
    keep = dynamic_sampling_mask(torch.tensor([0.0, 3.0, 1.0, 3.0]), [1, 2, 1, 2])
    assert keep.tolist() == [True, False, True, False]


def test_dynamic_sampling_rejects_token_level_scores():
    with pytest.raises(ValueError, match=r"\(bs,\)"):
        dynamic_sampling_mask(torch.zeros(2, 3), [0, 0])


def test_overlong_penalty_ramps_linearly_inside_buffer():
    lengths = torch.tensor([10, 16, 17, 18, 20])
    # max 20, buffer 4 -> no penalty up to 16 tokens, then -1/4 per token down to -1 at 20
    torch.testing.assert_close(overlong_penalty(lengths, 20, 4), torch.tensor([0.0, 0.0, -0.25, -0.5, -1.0]))
    torch.testing.assert_close(overlong_penalty(lengths, 20, 4, penalty_factor=2.0),
                               torch.tensor([0.0, 0.0, -0.5, -1.0, -2.0]))


@pytest.mark.parametrize("buffer", [0, -1, 21])
def test_overlong_penalty_rejects_bad_buffer(buffer):
    with pytest.raises(ValueError, match="overlong_buffer_len"):
        overlong_penalty(torch.tensor([5]), 20, buffer)
