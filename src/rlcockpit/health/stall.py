"""A run that stopped making progress while its process lives: no new step for ``factor`` x its median step time.

The step-driven detectors cannot see this (a stalled run logs nothing), so whoever follows the run on the wall
clock asks: ``rlcockpit watch`` calls :meth:`StallWatch.check` between polls of a log that stopped growing, and a
run of ``rlcockpit.init`` asks through its health monitor (:meth:`rlcockpit.health.HealthMonitor.tick`, called by
the run's observer thread about once a second). Either stores what it returns as a finding, which reaches the run's
alert channels like any other.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Mapping
from typing import Any

from rlcockpit.health.base import median
from rlcockpit.health.findings import Cause, Finding

STALL = "run_stalled"
SAME_ARRIVAL_S = 0.005  # steps seen within this many seconds of each other arrived together


class StallWatch:
    """Wall-clock progress of one run. Warning: no new step for ``factor`` x the median time between the last
    ``window`` steps (and at least ``min_gap_s``); critical: ``critical_factor`` x. Each is raised once per
    stall; a new step ends the stall. Judged only after ``min_steps`` steps (a median of their spacing).

    A pause the run has already taken and come back from (a validation pass, a checkpoint save) is part of its
    rhythm: a stall must also last ``past_pause_factor`` x the longest gap seen so far, so a run that validates
    for ten minutes every hundred steps is not called stalled at each validation after the first."""

    def __init__(self, factor: float = 5.0, critical_factor: float = 20.0, min_gap_s: float = 120.0,
                 min_steps: int = 4, window: int = 20, past_pause_factor: float = 1.5) -> None:
        self.factor, self.critical_factor, self.min_gap_s, self.min_steps = factor, critical_factor, min_gap_s, min_steps
        self.past_pause_factor = past_pause_factor
        self._times: deque[float] = deque(maxlen=window + 1)
        self._longest = 0.0  # the longest gap between two arrivals the run came back from
        self._last_step = -1
        self._raised = 0  # severity rank raised for the current stall (0: none)

    @classmethod
    def from_settings(cls, settings: Any) -> StallWatch | None:
        """The watch a run's ``health.stall`` setting asks for: ``False`` turns it off, a mapping overrides
        ``factor`` / ``critical_factor`` / ``min_gap_s`` / ``past_pause_factor``; unset, on (off in an
        interactive session, where a pause between cells is the user thinking, not a hang)."""
        if settings is False or (settings is None and interactive()):
            return None
        if settings is None or settings is True:
            return cls()
        if not isinstance(settings, Mapping):
            raise TypeError(f"health setting 'stall' must be true, false or a mapping, got {settings!r}")
        known = {"factor", "critical_factor", "min_gap_s", "past_pause_factor"}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(f"health setting 'stall' has unknown keys {unknown}; known: {sorted(known)}")
        return cls(**{k: float(v) for k, v in settings.items()})

    def step(self, step: int, now: float) -> None:
        """A new step arrived at wall time ``now`` (seconds, any monotonic clock). Steps that arrive together
        (one poll of a log that grew by several lines, a watcher catching up on a log) are one arrival: their
        spacing is not known, and counting it as 0 s made any pause look like a stall of "102203x the median 0 s"."""
        if not self._times or now - self._times[-1] > SAME_ARRIVAL_S:
            if self._times:
                self._longest = max(self._longest, now - self._times[-1])
            self._times.append(now)
        self._last_step = step
        self._raised = 0

    def check(self, now: float) -> Finding | None:
        """The stall finding due at ``now``, or ``None``."""
        t = list(self._times)
        if len(t) < self.min_steps:
            return None
        usual = median([b - a for a, b in zip(t, t[1:])])
        idle = now - t[-1]
        floor = max(self.min_gap_s, self.past_pause_factor * self._longest)
        if idle < max(self.factor * usual, floor):
            return None
        rank = 2 if idle >= max(self.critical_factor * usual, floor) else 1
        if rank <= self._raised:
            return None  # raised once; again only when it escalates
        self._raised = rank
        return Finding(
            detector=STALL, severity="critical" if rank == 2 else "warning", step=self._last_step,
            title=f"No new step for {_duration(idle)} after step {self._last_step}: {idle / max(usual, 1e-9):.0f}x "
                  f"the median {_duration(usual)} between its last {len(t) - 1} steps",
            summary="The run stopped making progress while its log is still followed: a hung rollout or reward "
                    "server, a deadlocked collective, or a killed job that left no exit in the log.",
            evidence={"values": {"idle_s": idle, "median_step_s": usual, "last_step": self._last_step}},
            causes=[Cause("a hung worker (rollout engine, reward server, a collective waiting on a dead rank)", 0.6),
                    Cause("the job was killed or paused without writing to its log", 0.4)])


def interactive() -> bool:
    """Whether this process is an interactive session (a Python prompt or a Jupyter kernel)."""
    return hasattr(sys, "ps1") or "ipykernel" in sys.modules


def _duration(seconds: float) -> str:
    """``42 s``, ``0.3 s``, ``12.5 min``: a duration a person reads in one look."""
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.2g} s"
