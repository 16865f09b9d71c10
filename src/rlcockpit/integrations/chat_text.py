"""Prompts and completions as stored text: TRL passes strings or chat message lists (``[{"role", "content"}]``).

One function for both routes a TRL run can take into the store — the ``CockpitCallback`` (``trainer._logs``)
and ``rlcockpit import`` of the W&B run (the completions table's cells) — so the same run reads the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def chat_text(value: Any) -> str:
    """A string as is; a chat message list as ``role: content`` lines (multimodal blocks by their text);
    anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and all(isinstance(m, Mapping) for m in value):
        parts = []
        for m in value:
            content = m.get("content")
            if isinstance(content, list):  # multimodal content blocks
                content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
            parts.append(f"{m.get('role', '?')}: {content}")
        return "\n".join(parts)
    return json.dumps(value, default=str, ensure_ascii=False)
