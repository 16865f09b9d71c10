"""The samples a trainer step stores are whole GRPO groups with their group id (issue 25, item 18): with
``rollout.n`` >= ``num_log_samples`` the first responses of a batch were one prompt's group, so the
dashboard's group view showed 1 of 16 groups, "100% zero variance"."""

from __future__ import annotations

from pathlib import Path

from trainer_batches import ByteTokenizer, EchoEngine

from rlcockpit.trainer.collect import generate_once
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.observe.metrics import sample_rows
from rlcockpit.trainer.reward.rewards import RewardManager
from rlcockpit.ui.sampleview import grpo_groups

REWARD = "def score(data_source, solution_str, ground_truth, extra_info=None):\n    return float(ground_truth in solution_str)\n"


def _experience(tmp_path: Path, n_prompts: int, n: int):
    f = tmp_path / "rewards.py"
    f.write_text(REWARD)
    cfg = load_config(overrides=[f"custom_reward_function.path={f}", "custom_reward_function.name=score",
                                 "data.max_response_length=8", f"actor_rollout_ref.rollout.n={n}"], log=None)
    rows = [PromptRow([], "7", "src", input_ids=list(f"q{p}->{'7' if p % 2 else 'x'}".encode()), text=f"q{p}")
            for p in range(n_prompts)]
    exp = generate_once(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), rows, 0, {})
    return cfg, exp


def test_every_group_of_the_step_is_stored_whole(tmp_path: Path) -> None:
    cfg, exp = _experience(tmp_path, n_prompts=4, n=16)
    rows = sample_rows(exp, cfg.trainer.num_log_samples)  # the trainer's default
    view = grpo_groups(rows)
    assert view["group_by"] == "uid" and len(view["groups"]) == 4
    assert [g["n"] for g in view["groups"]] == [16, 16, 16, 16]
    assert [g["prompt"] for g in view["groups"]] == ["q0", "q1", "q2", "q3"]
    assert view["zero_variance"] == 4 and view["zero_variance_fraction"] == 1.0  # echo: all equal per prompt
    assert {g["mean_reward"] for g in view["groups"]} == {0.0, 1.0}


def test_a_cap_cuts_between_groups_never_inside_one(tmp_path: Path) -> None:
    _cfg, exp = _experience(tmp_path, n_prompts=3, n=4)
    assert [r["uid"] for r in sample_rows(exp, 6)] == [0] * 4  # one whole group, not 4 + 2
    assert len(sample_rows(exp, 8)) == 8 and len({r["uid"] for r in sample_rows(exp, 8)}) == 2
    assert len(sample_rows(exp, 2)) == 4  # at least one group
    assert len(sample_rows(exp, 0)) == 12  # 0: the whole batch
