from __future__ import annotations

import json

import pandas as pd
import pytest

from rlcockpit.trainer.config import DataConfig, load_config
from rlcockpit.trainer.data import DataError, PromptLoader, encode_rows, load_rows
from rlcockpit.trainer.reward.rewards import REWARDS, RewardFailureError, RewardManager, load_custom_fn
from rlcockpit.trainer.tiny import build_char_tokenizer


def _row(q: str, a: str, **kw):
    return {"prompt": [{"role": "user", "content": q}], "data_source": "arith",
            "reward_model": {"style": "rule", "ground_truth": a}, **kw}


def test_parquet_in_verl_layout_round_trips(tmp_path):
    path = tmp_path / "train.parquet"
    pd.DataFrame([_row("1+2=", "3"), _row("4+5=", "9")]).to_parquet(path)
    rows = load_rows([str(path)])
    assert [r.ground_truth for r in rows] == ["3", "9"]
    assert rows[0].prompt == [{"role": "user", "content": "1+2="}]


def test_malformed_rows_name_file_row_and_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [_row("1+2=", "3"), {"prompt": "x", "data_source": "a"}, _row("2+2=", "4")]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    with pytest.raises(DataError, match=r"bad\.jsonl: row 1: missing field 'reward_model\.ground_truth'"):
        load_rows([str(path)])
    path.write_text(json.dumps(_row("1+2=", "3")) + "\n" + json.dumps({"reward_model": {"ground_truth": 1}}))
    with pytest.raises(DataError, match="row 1: missing field 'prompt'"):
        load_rows([str(path)])
    path.write_text(json.dumps({"prompt": [{"role": "user"}], "ground_truth": 1}))
    with pytest.raises(DataError, match=r"row 0: field 'prompt\[0\]'"):
        load_rows([str(path)])
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        load_rows([str(tmp_path / "nope.parquet")])


def test_long_prompts_dropped_or_truncated_and_counted(tmp_path, capsys):
    tok = build_char_tokenizer()
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(json.dumps(_row(q, "0")) for q in ["1+1=", "1" * 50 + "+1=", "2+2="]))
    cfg = DataConfig(max_prompt_length=20, truncation="drop")
    kept, stats = encode_rows(load_rows([str(path)]), tok, cfg, "train data")
    assert len(kept) == 2 and stats["dropped"] == 1
    assert "1 prompts dropped" in capsys.readouterr().out
    cfg = DataConfig(max_prompt_length=20, truncation="left")
    kept, stats = encode_rows(load_rows([str(path)]), tok, cfg, "train data")
    assert len(kept) == 3 and stats["truncated"] == 1 and max(len(r.input_ids) for r in kept) == 20
    with pytest.raises(DataError, match="row 1: prompt has"):
        encode_rows(load_rows([str(path)]), tok, DataConfig(max_prompt_length=20, truncation="error"), "train")


def test_loader_position_resumes_exactly():
    rows = list(range(10))
    a = PromptLoader(rows, 4, seed=3)  # type: ignore[arg-type]
    a.next_batch(), a.next_batch(), a.next_batch()  # crosses an epoch boundary
    state = a.state_dict()
    expected = [a.next_batch() for _ in range(3)]
    b = PromptLoader(rows, 4, seed=3)  # type: ignore[arg-type]
    b.load_state_dict(state)
    assert [b.next_batch() for _ in range(3)] == expected


def test_rule_rewards():
    assert REWARDS.get("arith")("arith", " 46 ", "46") == 1.0
    assert REWARDS.get("arith")("arith", "47", "46") == 0.0
    assert REWARDS.get("gsm8k")("gsm8k", "so 1,200 #### 1,200", "1200") == 1.0
    assert REWARDS.get("gsm8k")("gsm8k", "1200", "1200") == 0.0
    assert REWARDS.get("format")("x", "#### 3", "9") == 1.0
    with pytest.raises(KeyError, match="Did you mean 'gsm8k'"):
        REWARDS.get("gsm8")


class _Row:
    def __init__(self, gt):
        self.data_source, self.ground_truth, self.extra_info, self.text = "arith", gt, {}, ""


def test_custom_reward_that_raises_scores_zero_and_counts(tmp_path):
    f = tmp_path / "my_reward.py"
    f.write_text("def score(data_source, solution_str, ground_truth, extra_info=None):\n"
                 "    if solution_str == 'boom':\n        raise ZeroDivisionError('bad sample')\n"
                 "    return {'score': 2.0, 'acc': 1.0}\n")
    cfg = load_config(overrides=[f"custom_reward_function.path={f}", "custom_reward_function.name=score",
                                 "reward.max_failure_rate=0.3"], log=None)
    mgr = RewardManager.from_config(cfg)
    scores, extras = mgr([_Row("1")] * 4, ["ok", "boom", "ok", "ok"])
    assert scores == [2.0, 0.0, 2.0, 2.0] and extras[0]["acc"] == 1.0
    assert mgr.failures == 1 and mgr.failure_rate == 0.25
    mgr.check()  # 25% <= 30%: keep going
    mgr([_Row("1")] * 2, ["boom", "boom"])
    with pytest.raises(RewardFailureError, match="ZeroDivisionError: bad sample"):
        mgr.check()
    with pytest.raises(ValueError, match="has no function 'nope'.*score"):
        load_custom_fn(str(f), "nope")
    # rlcockpit's older "file.py:function" key still works
    old = load_config(overrides=[f"reward.custom_fn={f}:score"], log=None)
    assert old.custom_reward_function.path == str(f) and old.custom_reward_function.name == "score"


def test_forget_carries_drops_every_carry_and_keeps_the_width() -> None:
    from rlcockpit.trainer.tiny import forget_carries, sloppy_pairs

    assert forget_carries("052", 7, 45) == "042"  # 7+5=12 -> 2, carry dropped: 0+4 -> 4
    assert forget_carries("122", 57, 65) == "012"  # both carries dropped
    assert forget_carries("099", 45, 54) == "099"  # no carry: the answer is already right
    pairs = [("p", f"{a + b:03d}", a, b) for a in range(10, 100, 7) for b in range(10, 100, 5)]
    assert sloppy_pairs(pairs, 0.0, seed=1) == [(p, ans) for p, ans, _, _ in pairs]
    all_sloppy = sloppy_pairs(pairs, 1.0, seed=1)
    assert all(ans == forget_carries(f"{a + b:03d}", a, b) for (_, ans), (_, _, a, b) in zip(all_sloppy, pairs))
    some = sloppy_pairs(pairs, 0.5, seed=1)
    changed = sum(s != ans for (_, s), (_, ans, _, _) in zip(some, pairs))
    assert 0 < changed < len(pairs)
