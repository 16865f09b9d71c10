"""``diagnose --verify`` for runs rlcockpit watched but did not train (verl, TRL): placeholder filled below."""

from __future__ import annotations

from typing import Any


def external_verify(store: Any, run_id: str, diagnosis: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """(report, text) for a verl/TRL run; ``None`` for a run of rlcockpit's own trainer."""
    return None
