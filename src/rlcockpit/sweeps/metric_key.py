"""Find a sweep's metric in a run even when the run logs it under another name.

Sweep files come from W&B and the seed articles (``reward/mean``); our trainer logs verl's canonical keys
(``critic/score/mean``). The metric guide knows both, so the key a user wrote resolves to the key a run
logged: the exact key first, else any logged key with the same canonical name.
"""

from __future__ import annotations

from collections.abc import Iterable


def canonical(key: str) -> str:
    from rlcockpit.metrics.guide import canonical_name

    return canonical_name(key)


def resolve_key(wanted: str, logged: Iterable[str]) -> str | None:
    """The logged key that means ``wanted`` (None when the run has none)."""
    logged = list(logged)
    if wanted in logged:
        return wanted
    target = canonical(wanted)
    for key in logged:
        if key == target:
            return key
    for key in logged:
        if canonical(key) == target:
            return key
    return None
