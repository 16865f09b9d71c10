"""Splitting verl's decoded multi-turn responses (Hermes tool format) into turns: parallel calls, a call whose
JSON does not parse, rounds of calls and results, and single-turn text left alone. The text shapes are those
verl_v1_job.py writes through verl's decode path (role headers as bare lines once special tokens are skipped)."""

from __future__ import annotations

from rlcockpit.integrations.verl_files import rollout_row
from rlcockpit.integrations.verl_turns import split_turns, turn_fields

TWO_ROUNDS = ('Checking both.<tool_call>\n{"name": "calc", "arguments": {"expr": "1+1"}}\n</tool_call>'
              '<tool_call>\n{"name": "search", "arguments": {"q": "pi"}}\n</tool_call>\nuser\n<tool_response>\n2\n'
              '</tool_response>\n<tool_response>\n3.14159\n</tool_response>\nassistant\nOne more.<tool_call>\n'
              '{"name": "calc", "arguments": {"expr": "2*3.14"}\n</tool_call>\nuser\n<tool_response>\nerror: bad '
              'JSON\n</tool_response>\nassistant\n#### 6.28\n')


def test_rounds_of_parallel_calls_pair_with_their_results():
    turns = split_turns(TWO_ROUNDS)
    assert [t["role"] for t in turns] == ["assistant", "tool", "tool", "assistant", "tool", "assistant"]
    first = turns[0]["tool_calls"]
    assert [(c["name"], c["arguments"], c["result"]) for c in first] == [
        ("calc", {"expr": "1+1"}, "2"), ("search", {"q": "pi"}, "3.14159")]
    broken = turns[3]["tool_calls"][0]
    assert broken["parse_error"] and broken["result"] == "error: bad JSON" and turns[3]["content"] == "One more."
    assert turns[-1]["content"] == "#### 6.28"


def test_row_fields_count_calls_and_errors_and_keep_single_turn_rows_unchanged():
    row = rollout_row({"input": "q", "output": TWO_ROUNDS, "score": 1.0, "step": 3})
    assert (row["assistant_turns"], row["tool_calls"], row["tool_errors"]) == (3, 3, 1)
    assert row["response"] == TWO_ROUNDS and row["reward"] == 1.0  # the raw text stays searchable
    plain = rollout_row({"input": "q", "output": "#### 4", "score": 0.0, "step": 1})
    assert "turns" not in plain and turn_fields("no tools here") == {}
