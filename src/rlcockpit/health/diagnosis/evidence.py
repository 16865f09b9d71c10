"""How much advice the evidence of a run justifies: the gate between findings and the overrides a diagnosis
proposes.

An expert reading a run does not answer one warning with five knob changes. A finding's own advice lists
every fix its detector knows (its first action is the detector's primary, lowest-risk one); a diagnosis
proposes from it in proportion to the evidence:

* a critical finding, or a finding of the root-cause event's own story (see ``diagnose.fixes_for``): every
  action — the event is the root-cause story that justifies stacking changes;
* a warning: one action per corroborating finding — its own detector's primary action when it stands alone,
  its first two when a second detector of the same story (collapse, entropy, ...) warned within
  ``RELATED_WINDOW`` steps of it, and so on;
* a warning on a run shorter than ``BASELINE_STEPS`` logged steps: nothing. The detectors judge a run against
  its own early steps, and a run this short has none to speak of; the diagnosis says so and names what to
  watch instead of proposing changes.

What is held back is reported (``held_back``) with the reason, so nothing is silently dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rlcockpit.health.base import DETECTORS
from rlcockpit.health.findings import Action, Finding

BASELINE_STEPS = 10  # fewer logged steps: the run has no baseline of its own to judge a warning against
RELATED_WINDOW = 15  # steps between two findings that count as one event (the same as the diagnosis' window)


@dataclass(frozen=True)
class Weighed:
    """``finding`` with only the actions its evidence justifies; ``held`` says why some were held back."""

    finding: Finding
    held: str = ""


def _story(f: Finding) -> str:
    cls = DETECTORS.get(f.detector) if f.detector in DETECTORS else None
    return cls.story_of().name if cls is not None else "other"


def _near(a: Finding, b: Finding) -> bool:
    """The two findings' step ranges overlap once widened by ``RELATED_WINDOW``."""
    a0, b0 = a.step_start if a.step_start is not None else a.step, b.step_start if b.step_start is not None else b.step
    return b0 <= a.step + RELATED_WINDOW and b.step >= a0 - RELATED_WINDOW


def corroboration(finding: Finding, findings: Sequence[Finding]) -> int:
    """How many detectors (``finding``'s own included) raised a warning or critical of the same story within
    ``RELATED_WINDOW`` steps of it: independent evidence for the same failure."""
    story = _story(finding)
    detectors = {finding.detector}
    if story == "other":  # no shared failure story: unrelated findings do not back each other up
        return 1
    for f in findings:
        if f.severity in ("warning", "critical") and f.detector not in detectors and _story(f) == story \
                and _near(finding, f):
            detectors.add(f.detector)
    return len(detectors)


def run_too_short(steps: int | None) -> bool:
    """True when a run of ``steps`` logged steps is too short for a baseline of its own (unknown: not)."""
    return steps is not None and steps < BASELINE_STEPS


def _changes(finding: Finding) -> list[int]:
    """Indices of the finding's actions that change something (an action without changes is a note)."""
    return [i for i, a in enumerate(finding.actions) if a.changes]


def weigh(ordered: Sequence[Finding], findings: Sequence[Finding], steps: int | None,
          trusted: Sequence[Finding] = ()) -> list[Weighed]:
    """``ordered`` findings, each keeping only the actions the evidence in ``findings`` justifies (see the
    module docstring). ``trusted`` are findings whose every action counts (the root-cause event's fixes);
    ``steps`` is the run's number of logged steps (``None``: unknown)."""
    trusted_ids = {id(f) for f in trusted}
    out = []
    for f in ordered:
        acting = _changes(f)
        if f.severity == "critical" or id(f) in trusted_ids or not acting:
            out.append(Weighed(f))
            continue
        if run_too_short(steps):
            allowed, why = 0, (f"the run has {steps} logged steps, too few for a baseline of its own: watch "
                               "whether it persists before changing anything")
        else:
            allowed = corroboration(f, findings)
            why = ("one warning and no other finding of the same kind: only its detector's primary fix is "
                   "proposed" if allowed == 1 else
                   f"{allowed} findings of the same kind: only the first {allowed} fixes are proposed")
        keep = set(acting[:allowed])
        if len(keep) == len(acting):
            out.append(Weighed(f))
            continue
        held = "; ".join(_describe(a) for i, a in enumerate(f.actions) if i in acting and i not in keep)
        trimmed = replace(f, actions=[a for i, a in enumerate(f.actions) if i in keep or i not in acting])
        out.append(Weighed(trimmed, f"{why}; held back: {held}"))
    return out


def _describe(action: Action) -> str:
    return action.title + (f" ({' '.join(action.overrides)})" if action.overrides else "")


def baseline_note(steps: int | None, findings: Sequence[Finding]) -> str | None:
    """The diagnosis' word on a run too short to judge against itself (``None`` for a long enough run)."""
    if not run_too_short(steps):
        return None
    warned = sorted({f.detector for f in findings if f.severity == "warning"})
    head = (f"The run has only {steps} logged step{'s' if steps != 1 else ''}: too short for a baseline of its own "
            "(the detectors judge a run against its first steps)")
    if not warned:
        return head + ", so most detectors were still warming up: no findings here means little yet."
    return head + f", so warnings propose no changes yet; watch {', '.join(warned)} over the next steps."
