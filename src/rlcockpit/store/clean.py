"""Splitting a write into what a store can hold and what it cannot, at the smallest unit.

The rules are :mod:`rlcockpit.store.rules`; this module applies them to a :class:`WriteBatch` or a run row:
one bad metric key loses that key's points (not the batch), one bad sample row loses that row, one bad run
field loses that field. Each refused unit is a :class:`Refusal` (which field, why, which steps and how many
points), turned into ``data_lost`` records by :func:`refusal_losses` — so what was lost is recorded exactly.

Used twice with the same rules: the remote client cleans each batch before spooling it (the server then
never refuses a whole op over one value), and the team server refuses an op that breaks them (422 naming
the field) — a client that did not clean, or sent a hand-made op, loses that op only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcockpit.store.batch import DataLoss, WriteBatch, step_ranges
from rlcockpit.store.rules import json_problem, key_problem, name_problem, run_field_problem, step_problem

_GOOD_KEYS: set[str] = set()  # keys already checked (the same keys arrive in every batch of a run)


@dataclass
class Refusal:
    """One refused unit: ``where`` names it (``points['a\\nb']``, ``samples[step 3][0]``, ``run.tags``)."""

    where: str
    reason: str
    what: str  # metrics | samples | events | findings | summary | run
    steps: list[int] = field(default_factory=list)
    points: int = 0
    entries: int = 1

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def checked_key(key: Any) -> str | None:
    """:func:`key_problem`, remembering good keys (metric names repeat in every batch)."""
    if key in _GOOD_KEYS:
        return None
    why = key_problem(key)
    if why is None and len(_GOOD_KEYS) < 200_000:
        _GOOD_KEYS.add(key)
    return why


def split_points(points: dict[str, Any], out: list[Refusal]) -> dict[str, Any]:
    good = {}
    for key, (s, v, t) in points.items():
        why = checked_key(key)
        if why is None and len(s) and int(np.min(s)) < 0:
            keep = np.asarray(s) >= 0
            out.append(Refusal(f"points[{key!r}]", "negative steps", "metrics", np.asarray(s)[~keep].tolist(),
                               int((~keep).sum())))
            s, v, t = s[keep], v[keep], t[keep]
        if why is not None:
            out.append(Refusal(f"points[{key!r}]", why, "metrics", np.unique(s).tolist(), len(s)))
        elif len(s):
            good[key] = (s, v, t)
    return good


def row_problem(row: Any) -> str | None:
    """Why a sample row cannot be stored (columns are text keys, ``reward`` a number), or ``None``."""
    if not isinstance(row, Mapping):
        return f"expected a row object, got a {type(row).__name__}"
    for k, v in row.items():
        why = key_problem(k) if not isinstance(k, str) or k not in ("prompt", "response", "reward") else None
        why = why or json_problem(v)
        if why:
            return f"column {str(k)[:40]!r}: {why}"
    reward = row.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        return f"reward: expected a number, got a {type(reward).__name__}"
    return None


def _event_problem(event: Any) -> str | None:
    kind, payload, step = event[0], event[1], event[2]
    return (name_problem(kind, optional=False) or json_problem(payload)
            or (None if step is None else step_problem(step)) or (json_problem(event[3]) if len(event) > 3 else None))


def split_batch(batch: WriteBatch) -> tuple[WriteBatch, list[Refusal]]:
    """``batch`` without the units a store cannot hold, and the refused units."""
    out: list[Refusal] = []
    clean = WriteBatch(nbytes=batch.nbytes, entries=batch.entries)
    clean.points = split_points(batch.points, out) if batch.points else {}
    for step, rows in batch.samples:
        kept = []
        for i, row in enumerate(rows):
            why = row_problem(row)
            if why:
                out.append(Refusal(f"samples[step {step}][{i}]", why, "samples", [int(step)]))
            else:
                kept.append(row)
        if kept:
            clean.samples.append((step, kept))
    for i, e in enumerate(batch.events):
        why = _event_problem(e)
        if why:
            out.append(Refusal(f"events[{i}]", why, "events", [] if e[2] is None else [int(e[2])]))
        else:
            clean.events.append(e)
    for i, f in enumerate(batch.findings):
        why = json_problem(f.to_dict() if hasattr(f, "to_dict") else f)
        if why:
            out.append(Refusal(f"findings[{i}]", why, "findings"))
        else:
            clean.findings.append(f)
    for i, loss in enumerate(batch.losses):
        why = json_problem(loss.payload())
        if why:
            out.append(Refusal(f"losses[{i}]", why, "events"))
        else:
            clean.losses.append(loss)
    for name, value in batch.run_fields.items():
        why = run_field_problem(name, value)
        if why:
            out.append(Refusal(f"run.{name}", why, "summary" if name == "summary" else "run"))
        else:
            clean.run_fields[name] = value
    for name, value in batch.meta_patch.items():
        why = (None if isinstance(name, str) and name else "expected a text key") or json_problem(value)
        if why:
            out.append(Refusal(f"meta.{str(name)[:40]}", why, "run"))
        else:
            clean.meta_patch[name] = value
    return clean, out


def split_run_row(row: Mapping[str, Any]) -> tuple[dict[str, Any], list[Refusal]]:
    """A run row (a ``create`` op) without the fields a store cannot hold (a refused ``id`` is the caller's
    to handle: without it there is no run)."""
    clean, out = {}, []
    for name, value in row.items():
        why = run_field_problem(name, value)
        if why:
            out.append(Refusal(f"run.{name}", why, "run"))
        else:
            clean[name] = value
    return clean, out


def refusal_losses(refused: list[Refusal], reason: str = "rejected") -> list[DataLoss]:
    """One ``data_lost`` record per kind of data refused: its steps, entries, points, and which units why."""
    by_what: dict[str, list[Refusal]] = {}
    for r in refused:
        by_what.setdefault(r.what, []).append(r)
    out = []
    for what, rs in by_what.items():
        steps = np.array([s for r in rs for s in r.steps], dtype=np.int64)
        shown = "; ".join(str(r) for r in rs[:5]) + (f"; … ({len(rs)} in all)" if len(rs) > 5 else "")
        out.append(DataLoss(what, reason, step_ranges(steps), entries=sum(r.entries for r in rs),
                            points=sum(r.points for r in rs), message=shown[:2000]))
    return out
