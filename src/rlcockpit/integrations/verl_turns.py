"""Multi-turn (agent-loop) responses from verl's rollout and validation dumps, turn by turn.

verl's ``_log_rollout_data`` writes ``tokenizer.batch_decode(responses, skip_special_tokens=True)``: for a
tool-using agent loop the response is the whole conversation after the prompt, in the chat template's tool
format (Hermes, verl's default ``multi_turn.format``): assistant text with ``<tool_call>{"name", "arguments"}
</tool_call>`` blocks, then ``<tool_response>...</tool_response>`` blocks in a user/tool turn, the role headers
left as bare ``user`` / ``assistant`` lines once the special tokens are gone. :func:`split_turns` turns that text
back into messages, each tool call with its arguments and its result, so the samples view shows the trajectory
turn by turn instead of one run-on string.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BLOCK = re.compile(r"(<tool_call>.*?</tool_call>|<tool_response>.*?</tool_response>)", re.S)
_ROLE_LINE = re.compile(r"^\s*(user|assistant|tool|system)\s*$", re.M)


def has_tool_turns(text: Any) -> bool:
    return isinstance(text, str) and ("<tool_call>" in text or "<tool_response>" in text)


def _tool_call(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        return {"name": None, "arguments": body, "parse_error": True}
    if not isinstance(data, dict):
        return {"name": None, "arguments": data, "parse_error": True}
    args = data.get("arguments", data.get("parameters"))
    return {"name": data.get("name"), "arguments": args}


def _text(segment: str) -> str:
    return _ROLE_LINE.sub("", segment).strip()


def split_turns(text: str) -> list[dict[str, Any]]:
    """``[{"role": "assistant", "content", "tool_calls": [{"name", "arguments", "result"}]}, {"role": "tool",
    "content"}, ...]`` from a decoded multi-turn response; a tool's result is also set on the call it answers
    (calls and results pair up in order within a round)."""
    turns: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # this round's calls still waiting for their result

    def assistant() -> dict[str, Any]:
        if not turns or turns[-1]["role"] != "assistant":
            turns.append({"role": "assistant", "content": "", "tool_calls": []})
        return turns[-1]

    for part in _BLOCK.split(text):
        if part.startswith("<tool_call>"):
            call = _tool_call(part[len("<tool_call>"):-len("</tool_call>")].strip())
            assistant()["tool_calls"].append(call)
            pending.append(call)
        elif part.startswith("<tool_response>"):
            result = part[len("<tool_response>"):-len("</tool_response>")].strip()
            turns.append({"role": "tool", "content": result})
            if pending:
                pending.pop(0)["result"] = result
        else:
            segment = _text(part)
            if not segment:
                continue
            if turns and turns[-1]["role"] == "tool":
                pending.clear()  # a new assistant round
            turn = assistant()
            turn["content"] = (turn["content"] + "\n" + segment).strip()
    return turns


def turn_fields(response: Any) -> dict[str, Any]:
    """The extra sample fields of a multi-turn response (``turns``, ``assistant_turns``, ``tool_calls``,
    ``tool_errors``: calls whose JSON does not parse or whose result mentions an error); ``{}`` for a
    single-turn one."""
    if not has_tool_turns(response):
        return {}
    turns = split_turns(response)
    calls = [c for t in turns for c in t.get("tool_calls", ())]
    errors = sum(1 for c in calls if c.get("parse_error") or "error" in str(c.get("result", "")).lower()[:200])
    return {"turns": turns, "assistant_turns": sum(1 for t in turns if t["role"] == "assistant"),
            "tool_calls": len(calls), "tool_errors": errors}
