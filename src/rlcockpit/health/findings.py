"""The finding: what the health engine tells a user, stored with the run, sent by alerts, drawn by the UI.

A finding is plain data (JSON-serialisable through :meth:`Finding.to_dict`) so that the store,
the alert channels and the dashboard can carry it without importing detector code.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "critical")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for critical (unknown severities rank as info)."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        return 0


@dataclass
class Action:
    """One thing to change. ``overrides`` are written in the run's own vocabulary (rlcockpit trainer keys such
    as ``actor.optim.lr=5e-7``, verl paths for a verl run, ``GRPOConfig`` names for a TRL run);
    ``verl_overrides`` the same change in verl's full key paths; ``changes`` the same change keyed by
    rlcockpit's names (what diagnosis merges on, whatever vocabulary the run speaks)."""

    title: str
    overrides: list[str] = field(default_factory=list)
    verl_overrides: list[str] = field(default_factory=list)
    why: str = ""
    changes: dict[str, Any] = field(default_factory=dict)
    evidence: str = ""  # what in this run ranks this candidate where it is among the finding's actions
    dropped: list[str] = field(default_factory=list)  # proposed changes left out, each with why (no-op, already set)


def checked_last(actions: list[Action]) -> list[Action]:
    """``actions`` (best first) with those that lost every change to the effective-config check (each a no-op
    in the run's framework, or already set) moved to the end, where their reasons are still shown."""
    return sorted(actions, key=lambda a: bool(a.dropped) and not a.changes)


@dataclass
class Cause:
    """A probable cause, ranked by ``score`` (0..1); ``evidence`` says what points to it."""

    title: str
    score: float = 0.5
    evidence: str = ""


@dataclass
class Finding:
    detector: str
    severity: str  # one of SEVERITIES
    step: int  # the step at which the detector fired
    title: str
    summary: str = ""
    step_start: int | None = None  # first step of the event (defaults to ``step``)
    step_end: int | None = None  # last step seen in the event (defaults to ``step``)
    metric: str | None = None  # canonical metric key the finding is about, if any
    evidence: dict[str, Any] = field(default_factory=dict)  # {"metrics": {key: [[step, value], ...]}, "samples": [...]}
    causes: list[Cause] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    id: str | None = None  # assigned by the store

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding severity must be one of {SEVERITIES}, got {self.severity!r}")
        if self.step_start is None:
            self.step_start = self.step
        if self.step_end is None:
            self.step_end = self.step

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        d = dict(d)
        d["causes"] = [c if isinstance(c, Cause) else Cause(**c) for c in d.get("causes") or []]
        d["actions"] = [a if isinstance(a, Action) else Action(**a) for a in d.get("actions") or []]
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})
