"""One override set per diagnosis: every finding proposes config changes; a user pastes one list.

Findings of one run often propose the same knob (a reward cliff and a gradient spike both cut the learning
rate, by 10x and 5x); pasting both lines lets the last one win, whichever it is. :func:`merge_overrides` keeps
one value per key, in the run's own vocabulary (verl paths for a verl run, ``GRPOConfig`` names for TRL, trainer
keys for ours), and says why whenever the findings disagreed:

* all proposals move the knob the same way from the run's current value: the strongest one is kept (the milder
  changes are contained in it);
* they pull in different directions, or the knob has no current value to compare with: the finding that comes
  first in the diagnosis (the root cause, then criticals, then warnings, each in time order) wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlcockpit.health.config_view import ALREADY_SET, VERL_KEYS, RunConfigView, format_value
from rlcockpit.health.findings import Action, Finding


@dataclass
class _Proposal:
    value: Any
    finding: Finding
    action: Action
    rank: int

    @property
    def source(self) -> str:
        return f"{self.finding.detector} at step {self.finding.step_start}"


def target_key(view: RunConfigView, key: str) -> str | None:
    """The key advice key ``key`` is written as in this run (``None``: its launcher has no such knob)."""
    return view.key_for(key)


def _numeric(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _choose(props: list[_Proposal], current: Any) -> tuple[_Proposal, str]:
    """The winning proposal for one knob and the reason (empty when all proposals agree)."""
    values = {format_value(p.value) for p in props}
    first = min(props, key=lambda p: p.rank)
    if len(values) == 1:
        return first, ""
    cur = _numeric(current)
    nums = [_numeric(p.value) for p in props]
    if cur is not None and cur > 0 and all(n is not None and n > 0 for n in nums):
        ups = [n > cur for n in nums]  # type: ignore[operator]
        if all(ups) or not any(ups):
            best = max(props, key=lambda p: abs(math.log(_numeric(p.value) / cur)))  # type: ignore[operator]
            direction = "raises" if all(ups) else "cuts"
            return best, (f"the strongest of the proposed {direction} from {format_value(current)} (the milder ones are "
                          "included in it)")
    return first, "the findings disagree; the fix for the finding that comes first in the diagnosis wins"


def _merge(ordered: Sequence[Finding], view: RunConfigView, name: Callable[[str], str | None]
           ) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, str]]:
    """One choice per knob as ``name`` spells it; the changes ``name`` cannot spell; and those that would set
    a knob to the value it already has (proposing ``num_iterations=1`` to a run at 1 changes nothing)."""
    by_target: dict[str, list[_Proposal]] = {}
    advice_key: dict[str, str] = {}
    skipped: dict[str, str] = {}
    unchanged: dict[str, str] = {}
    for rank, f in enumerate(ordered):
        for action in f.actions:
            for text in action.dropped:  # checked out when the action was made: a no-op there, or already set
                key, _, why = text.partition(": ")
                (unchanged if why == ALREADY_SET else skipped).setdefault(key, f"{key} (for {f.detector}): {why}")
            for key, value in (action.changes or {}).items():
                target = name(key)
                if target is None:
                    skipped.setdefault(key, f"{key}={format_value(value)} (for {f.detector}): a {view.framework} run "
                                            "has no such setting")
                    continue
                current = view.get(key)
                if current is not None and format_value(current) == format_value(value):
                    unchanged.setdefault(target, f"{target}={format_value(value)} (for {f.detector}): already the "
                                                 "run's value")
                    continue
                advice_key.setdefault(target, key)
                by_target.setdefault(target, []).append(_Proposal(value, f, action, rank))
    choices = []
    for target, props in sorted(by_target.items(), key=lambda kv: min(p.rank for p in kv[1])):
        win, reason = _choose(props, view.get(advice_key[target]))
        text = format_value(win.value)
        others: dict[str, list[str]] = {}
        for p in props:
            if format_value(p.value) != text and p.source not in others.setdefault(format_value(p.value), []):
                others[format_value(p.value)].append(p.source)
        choices.append({"key": target, "value": text, "for": win.source, "reason": reason,
                        "alternatives": [{"value": v, "for": ", ".join(src)} for v, src in others.items()]})
    return choices, skipped, unchanged


def merge_overrides(ordered: Sequence[Finding], view: RunConfigView) -> dict[str, Any]:
    """The merged override set of ``ordered`` findings (highest priority first).

    Returns ``{"vocabulary": "verl"|"trl"|"rlcockpit", "apply": ["key=value", ...] (one per key, the run's
    vocabulary), "verl": [...] (the same changes as verl paths, one per path; empty for TRL runs), "choices":
    [{"key", "value", "for", "reason", "alternatives": [{"value", "for"}]}] (one per key of ``apply``),
    "not_applicable": [texts of changes the run's launcher has no key for], "already_set": [texts of changes to
    the value the run already has: left out]}``.
    """
    choices, skipped, unchanged = _merge(ordered, view, lambda k: target_key(view, k))
    verl: list[str] = []
    if view.is_verl:
        verl = [f"{c['key']}={c['value']}" for c in choices]
    elif not view.is_trl:  # rlcockpit's trainer: its keys are verl's paths, and verl-only knobs are added
        verl = [f"{c['key']}={c['value']}" for c in _merge(ordered, view, VERL_KEYS.get)[0]]
    return {"vocabulary": view.framework, "apply": [f"{c['key']}={c['value']}" for c in choices], "verl": verl,
            "choices": choices, "not_applicable": list(skipped.values()), "already_set": list(unchanged.values())}


def assign_to_actions(ordered: Sequence[Finding], merged: dict[str, Any], view: RunConfigView,
                      limit: int = 5) -> list[dict[str, Any]]:
    """The actions to show for ``ordered`` findings, each key under the first action that proposed it and with
    the merged value: no key appears twice, and no value contradicts ``merged["apply"]`` / ``merged["verl"]``."""
    chosen = dict(o.split("=", 1) for o in merged["apply"])
    chosen_verl = dict(o.split("=", 1) for o in merged["verl"])
    placed: set[str] = set()
    out: list[dict[str, Any]] = []
    seen_titles: set[str] = set()
    for f in ordered:
        for action in f.actions:
            if action.title in seen_titles:
                continue
            overrides, verl = [], []
            for key in action.changes or {}:
                target, vpath = target_key(view, key), VERL_KEYS.get(key)
                if target is not None and target in chosen and target not in placed:
                    placed.add(target)
                    overrides.append(f"{target}={chosen[target]}")
                if vpath and vpath in chosen_verl and ("verl:" + vpath) not in placed:
                    placed.add("verl:" + vpath)
                    verl.append(f"{vpath}={chosen_verl[vpath]}")
            if action.changes and not overrides and not verl:
                continue  # everything it would change is already set by an earlier action
            seen_titles.add(action.title)
            out.append({"title": action.title, "overrides": overrides, "verl_overrides": verl, "why": action.why,
                        "for": f"{f.detector} at step {f.step_start}", "evidence": action.evidence})
    return out[:limit]
