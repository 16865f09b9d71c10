"""QA with reward functions written the way verl users write them (docs/qa/verl-inputs.md).

* ``async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``: verl 0.9's
  reward loop awaits coroutine functions; here every call failed with ``float() argument ... 'coroutine'``;
* a reward file that imports ``verl.utils.reward_score`` in an environment without verl: the error named
  neither the config key nor the file.
"""

from __future__ import annotations

import pytest

from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.reward.rewards import RewardManager

ASYNC_FN = '''
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    await asyncio.sleep(0.2)  # a judge call; the batch's calls must overlap
    ok = solution_str.strip().endswith(str(ground_truth))
    return {"score": 1.0 if ok else 0.0, "acc": ok}
'''


class Row:
    data_source, ground_truth, extra_info = "openai/gsm8k", "72", {"index": 0}


def _manager(tmp_path, source: str) -> RewardManager:
    f = tmp_path / "my_reward.py"
    f.write_text(source)
    return RewardManager.from_config(load_config(overrides=[f"custom_reward_function.path={f}"], log=None))


def test_async_compute_score_is_awaited_concurrently(tmp_path):
    import time

    manager = _manager(tmp_path, ASYNC_FN)
    t0 = time.perf_counter()
    scores, extras = manager([Row()] * 8, ["#### 72", "#### 7"] * 4)
    assert time.perf_counter() - t0 < 1.0  # 8 calls of 0.2 s each, awaited together
    assert scores == [1.0, 0.0] * 4 and manager.failures == 0
    assert extras[0] == {"acc": True}
    assert manager.score_one(Row(), "#### 72") == {"score": 1.0, "acc": True}  # preflight's single call


def test_async_reward_errors_are_counted_per_sample(tmp_path):
    manager = _manager(tmp_path, "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                                 "    if 'boom' in solution_str:\n        raise ValueError('judge down')\n    return 1.0\n")
    scores, _ = manager([Row(), Row()], ["ok", "boom"])
    assert scores == [1.0, 0.0] and manager.failures == 1 and "judge down" in manager.last_error


def test_a_reward_file_importing_missing_verl_names_key_file_line_and_way_out(tmp_path):
    f = tmp_path / "verl_reward.py"
    f.write_text("import re\nfrom verl.utils.reward_score import gsm8k\n\n"
                 "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    return gsm8k.compute_score(solution_str, ground_truth)\n")
    cfg = load_config(overrides=[f"custom_reward_function.path={f}"], log=None)
    with pytest.raises(ImportError) as err:
        RewardManager.from_config(cfg)
    msg = str(err.value)
    assert "custom_reward_function.path" in msg and f"{f}, line 2" in msg and "No module named 'verl'" in msg
    assert "reward.name=auto" in msg


BATCH_FN = '''
def compute_score(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    # verl's BatchRewardManager signature: one call per batch, lists in, one result per response out
    return [{"score": float(s.endswith(g)), "n": len(solution_strs)} for s, g in zip(solution_strs, ground_truths)]
'''


def test_batch_reward_manager_calls_the_function_once_with_lists(tmp_path):
    """reward_model.reward_manager=batch (verl's BatchRewardManager) was listed as "no effect": a function with
    the batch signature was called once per response and failed on every call."""
    f = tmp_path / "batch_reward.py"
    f.write_text(BATCH_FN)
    cfg = load_config(overrides=[f"custom_reward_function.path={f}", "reward_model.reward_manager=batch"], log=None)
    manager = RewardManager.from_config(cfg)
    scores, extras = manager([Row()] * 3, ["#### 72", "#### 1", "72"])
    assert scores == [1.0, 0.0, 1.0] and manager.failures == 0 and extras[0] == {"n": 3}
    assert manager.score_one(Row(), "#### 72")["score"] == 1.0  # preflight's single call: a list of one


def test_batch_reward_returning_the_wrong_count_is_named(tmp_path):
    f = tmp_path / "short.py"
    f.write_text("def compute_score(data_sources, solution_strs, ground_truths, extra_infos):\n    return [1.0]\n")
    cfg = load_config(overrides=[f"custom_reward_function.path={f}", "reward_model.reward_manager=batch"], log=None)
    manager = RewardManager.from_config(cfg)
    scores, _ = manager([Row()] * 2, ["a", "b"])
    assert scores == [0.0, 0.0] and manager.failures == 2
    assert "reward_manager=batch" in manager.last_error and "one score per response (2), got 1 results" in \
        manager.last_error
