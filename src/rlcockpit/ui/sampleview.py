"""Samples as the dashboard shows them: sorted and filtered pages, GRPO groups, one prompt across steps.

All of it works on rows as the store returns them (``step, idx, prompt, response, reward`` plus any
extra columns), so it applies to samples logged by the rlcockpit trainer, verl or TRL imports alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rlcockpit.store.media import row_images
from rlcockpit.ui.runfilter import RowView, compile_filter

GROUP_ID_COLUMNS = ("uid", "group", "group_id", "prompt_id", "prompt_uid", "index")
ADVANTAGE_COLUMNS = ("advantage", "advantages", "adv", "score/advantage")
NOT_COMPONENTS = {"step", "idx", "reward", "response_length", "prompt_length", "probe_id", "kind", "split", *GROUP_ID_COLUMNS,
                  *ADVANTAGE_COLUMNS}
PROBE_KIND = "probe"


def is_probe(row: Mapping[str, Any]) -> bool:
    """A validation probe row: ``kind="probe"`` (rlcockpit's trainer) or verl's ``split="val"``."""
    return row.get("kind") == PROBE_KIND or row.get("split") == "val"


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def sort_rows(rows: list[dict[str, Any]], column: str, desc: bool) -> list[dict[str, Any]]:
    """Rows sorted by ``column`` (stable): numbers by value, then text, missing values last either way."""
    nums, texts, missing = [], [], []
    for r in rows:
        v = r.get(column)
        if _num(v) is not None:
            nums.append(r)
        elif v is None or (isinstance(v, float) and math.isnan(v)):
            missing.append(r)
        else:
            texts.append(r)
    nums.sort(key=lambda r: _num(r.get(column)), reverse=desc)  # type: ignore[arg-type, return-value]
    texts.sort(key=lambda r: str(r.get(column)), reverse=desc)
    return nums + texts + missing


def filter_rows(rows: Iterable[dict[str, Any]], expression: str | None) -> list[dict[str, Any]]:
    """Rows matching a filter expression over their columns (``reward > 0.5 and data_source == "gsm8k"``)."""
    predicate, _names = compile_filter(expression or "")
    return [r for r in rows if predicate(RowView(r))]


def _group_key(row: Mapping[str, Any], id_col: str | None) -> str:
    """The group id; without a group-id column the prompt text and its images (one VLM prompt text asked
    about different pictures is different prompts)."""
    if id_col:
        return str(row.get(id_col))
    return str(row.get("prompt")) + "".join(f"\0{ref['sha256']}" for _, ref in row_images(row))


def grpo_groups(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One step's rows as GRPO groups: one prompt with its n responses, rewards, advantages, components.

    A group is the rows sharing a group-id column (``uid``... see :data:`GROUP_ID_COLUMNS`) or,
    without one, the same prompt text. ``zero_variance`` marks groups whose rewards are all equal: GRPO
    gives them zero advantage, so they teach nothing. Advantages are the logged column when there is
    one, else computed as GRPO does, ``(r - mean) / (std + 1e-6)`` (``advantage_source``: the column, or ``None``).
    """
    id_col = next((c for c in GROUP_ID_COLUMNS if any(c in r for r in rows)), None)
    adv_col = next((c for c in ADVANTAGE_COLUMNS if any(_num(r.get(c)) is not None for r in rows)), None)
    components = sorted({k for r in rows for k, v in r.items() if k not in NOT_COMPONENTS
                         and not k.startswith("_") and _num(v) is not None})
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(_group_key(r, id_col), []).append(r)
    out = []
    for gid, members in groups.items():
        rewards = [_num(m.get("reward")) for m in members]
        finite = [x for x in rewards if x is not None]
        mean = sum(finite) / len(finite) if finite else None
        std = math.sqrt(sum((x - mean) ** 2 for x in finite) / (len(finite) - 1)) if len(finite) > 1 else 0.0
        if adv_col:
            advs = [_num(m.get(adv_col)) for m in members]
        else:
            advs = [None if x is None or mean is None else (x - mean) / (std + 1e-6) for x in rewards]
        out.append({
            "id": gid, "prompt": members[0].get("prompt"), "images": [ref for _, ref in row_images(members[0])],
            "n": len(members), "mean_reward": mean,
            "std_reward": std, "zero_variance": len(finite) > 1 and std == 0.0,
            "responses": [{"idx": m.get("idx"), "response": m.get("response"), "reward": rw, "advantage": a,
                           "components": {c: _num(m.get(c)) for c in components},
                           "_repeats": m.get("_repeats", []), "_repeat_ratio": m.get("_repeat_ratio", 0.0)}
                          for m, rw, a in zip(members, rewards, advs)],
        })
    n_zero = sum(g["zero_variance"] for g in out)
    sizes = [g["n"] for g in out]
    return {"groups": out, "group_by": id_col or "prompt", "advantage_source": adv_col,  # None: computed here as GRPO does
            "components": components, "zero_variance": n_zero,
            "zero_variance_fraction": n_zero / len(out) if out else 0.0,
            "responses": len(rows), "group_sizes": [min(sizes), max(sizes)] if sizes else None}


def prompt_history(rows: Sequence[Mapping[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """The responses to exactly ``prompt`` at each step, oldest step first."""
    by_step: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("prompt") == prompt:
            by_step.setdefault(int(r["step"]), []).append(r)
    return [{"step": s, "rows": by_step[s],
             "mean_reward": _mean([_num(r.get("reward")) for r in by_step[s]])} for s in sorted(by_step)]


def _mean(xs: list[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def prompt_index(rows: Iterable[Mapping[str, Any]], probes_only: bool) -> list[dict[str, Any]]:
    """Distinct prompts with the steps they were logged at (probe prompts first, then by step count)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        probe = is_probe(r)
        if probes_only and not probe:
            continue
        p = str(r.get("prompt"))
        entry = seen.setdefault(p, {"prompt": p, "steps": set(), "probe": False, "probe_id": r.get("probe_id")})
        entry["steps"].add(int(r["step"]))
        entry["probe"] = entry["probe"] or probe
    out = [{**e, "steps": sorted(e["steps"]), "n_steps": len(e["steps"])} for e in seen.values()]
    out.sort(key=lambda e: (not e["probe"], -e["n_steps"], str(e["probe_id"]), e["prompt"]))
    return out
