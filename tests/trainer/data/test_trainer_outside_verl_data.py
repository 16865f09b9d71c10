"""verl's tool-agent data nobody here wrote (docs/qa/verl-inputs.md).

``examples/data_preprocess/gsm8k_tool_agent_loop.py`` (volcengine/verl @030a519) writes GSM8K rows with
``agent_name: "tool_agent"``, a system prompt telling the model to call the ``calc_gsm8k_reward`` tool, and
``extra_info.tools_kwargs``/``interaction_kwargs``. verl 0.9.1 runs the row's agent loop (``agent_loop.py``: the
batch's ``agent_name`` column, else ``rollout.agent.default_agent_loop``), a multi-turn rollout with tools.
rlcockpit read the rows and gave each prompt one response, silently; ``rollout.agent.default_agent_loop=
tool_agent`` was listed as "no effect". The rows are built here in that script's exact shape (no download).
"""

from __future__ import annotations

import pandas as pd
import pytest

from rlcockpit.trainer.config import ConfigError, load_config
from rlcockpit.trainer.data import DataError, load_rows

QUESTION = "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many " \
           "clips did Natalia sell altogether in April and May?"
ANSWER = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether " \
         "in April and May.\n#### 72"


def tool_agent_row(idx: int, split: str = "train") -> dict:
    """One row as gsm8k_tool_agent_loop.py's process_fn returns it."""
    question = QUESTION + " " + "Let's think step by step and output the final answer after `####`."
    solution = "72"
    return {
        "data_source": "openai/gsm8k",
        "agent_name": "tool_agent",
        "prompt": [
            {"role": "system", "content": (
                "You are a math expert. You are given a question and you need to solve it step by step. "
                "Reasoning step by step before any tool call. "
                "You should use the `calc_gsm8k_reward` tool after step by step solving the question, "
                "before generate final answer at least once and refine your answer if necessary. "
                "Put your final answer in the format of `#### <answer>`.")},
            {"role": "user", "content": question},
        ],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": solution},
        "extra_info": {
            "split": split, "index": idx, "answer": ANSWER, "question": QUESTION, "need_tools_kwargs": True,
            "tools_kwargs": {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": solution}}},
            "interaction_kwargs": {"query": question, "ground_truth": solution},
        },
    }


def test_tool_agent_rows_are_refused_naming_the_field(tmp_path):
    path = tmp_path / "train.parquet"
    pd.DataFrame([tool_agent_row(i) for i in range(4)]).to_parquet(path)
    with pytest.raises(DataError, match=r"train.parquet: row 0: field 'agent_name' is 'tool_agent': verl runs that "
                                        r"agent loop"):
        load_rows([str(path)])
    # the way out the message gives: without the column the rows are GSM8K rows, tools_kwargs kept in extra_info
    pd.DataFrame([tool_agent_row(i) for i in range(4)]).drop(columns=["agent_name"]).to_parquet(path)
    rows = load_rows([str(path)])
    assert len(rows) == 4 and rows[0].ground_truth == "72"
    assert rows[0].extra_info["tools_kwargs"]["calc_gsm8k_reward"]["create_kwargs"] == {"ground_truth": "72"}


def test_single_turn_agent_rows_load():
    rows = [dict(tool_agent_row(0), agent_name="single_turn_agent")]
    from rlcockpit.trainer.data import validate_row

    assert validate_row(rows[0], "row 0").data_source == "openai/gsm8k"


def test_a_tool_agent_default_loop_is_refused():
    with pytest.raises(ConfigError, match=r"default_agent_loop'='tool_agent': multi-turn/tool agent loops"):
        load_config(overrides=["actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent"], log=None)
    load_config(overrides=["actor_rollout_ref.rollout.agent.default_agent_loop=single_turn_agent"], log=None)
