"""Pure data shaping for the dashboard: panel grouping, key metrics, repeated spans, config diffs, paths.

Kept apart from the HTTP layer so every piece is testable without a server, and so the JSON the
browser receives is computed once, server-side, in numpy/Python rather than re-derived in JS.
"""

from __future__ import annotations

import base64
import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from rlcockpit.metrics.guide import canonical_name
from rlcockpit.metrics.headline import HEADLINE_KEYS

# Sections of the run page shown first, in this order; a key's section is its first path segment.
PANEL_GROUPS = ("actor", "critic", "response_length", "perf", "timing_s", "val-core", "samples", "system")

# Summary metrics shown as columns of the runs list (first present alias wins per column).
KEY_METRICS: dict[str, tuple[str, ...]] = {slot: HEADLINE_KEYS[slot] for slot in ("reward", "kl", "entropy", "resp_len")}
KL_KEYS = KEY_METRICS["kl"]
REWARD_KEYS = KEY_METRICS["reward"]


def panel_group(key: str) -> str:
    """The run-page section a metric belongs to: its first path segment (``other`` for keys without one)."""
    head, sep, _rest = key.partition("/")
    return head if sep and head else "other"


def group_keys(keys: Iterable[str]) -> list[dict[str, Any]]:
    """``[{"group": name, "keys": [...]}, ...]``: verl's usual sections in :data:`PANEL_GROUPS` order,
    then any other prefix alphabetically, ``other`` last."""
    groups: dict[str, list[str]] = {}
    for key in sorted(keys):
        groups.setdefault(panel_group(key), []).append(key)
    known = [g for g in PANEL_GROUPS if g in groups]
    rest = sorted(g for g in groups if g not in PANEL_GROUPS and g != "other")
    order = [*known, *rest, *(["other"] if "other" in groups else [])]
    return [{"group": g, "keys": groups[g]} for g in order]


@functools.lru_cache(maxsize=65536)
def canonical(key: str) -> str:
    """The metric guide's canonical name of ``key`` (cached: the runs list asks for every summary key)."""
    return canonical_name(key)


def find_key(available: Sequence[str], candidates: Sequence[str]) -> str | None:
    """First of ``candidates`` present in ``available``; else a key whose guide-canonical name is the
    first candidate (so a TRL or seed-style alias of ``actor/kl_loss`` is found too)."""
    present = set(available)
    for c in candidates:
        if c in present:
            return c
    for k in available:
        if canonical(k) == candidates[0]:
            return k
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def summary_number(v: Any) -> float | None:
    """A summary value as one number: itself, or for W&B's nested form (``define_metric(summary="max")``
    or ``run.summary["loss"] = {"min": ...}``) its ``last`` if kept, else the first aggregate the user
    chose (``{"max": 0.9}`` -> 0.9)."""
    if isinstance(v, Mapping) and "_type" not in v:
        v = v.get("last") if _number(v.get("last")) else next((x for x in v.values() if _number(x)), None)
    return float(v) if _number(v) else None


def summary_fields(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary as the runs table's columns: a W&B nested summary ``{"loss": {"min": 0.1, "last": 0.2}}``
    as ``loss.min`` and ``loss.last`` (W&B's column names); media dicts (``_type``) and plain values as
    they are."""
    out: dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, Mapping) and v and "_type" not in v:
            out.update({f"{k}.{op}": x for op, x in v.items()})
        else:
            out[k] = v
    return out


def key_metrics(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The runs-list columns (reward, kl, entropy, response length) from a run's summary."""
    keys = list(summary)
    out: dict[str, float | None] = {}
    for col, cands in KEY_METRICS.items():
        k = find_key(keys, cands)
        out[col] = summary_number(summary.get(k)) if k else None
    return out


# ---- JSON helpers ----------------------------------------------------------------------------


def clean_json(obj: Any) -> Any:
    """Replace NaN/Inf (not valid JSON) by ``None`` and numpy scalars by Python numbers, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer)):
        return clean_json(obj.item())
    return obj


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(arr, dtype="<f8").tobytes()).decode("ascii")


def series_payload(steps: np.ndarray, values: np.ndarray, ts: np.ndarray, binary: bool = False,
                   with_ts: bool = True) -> dict[str, Any]:
    """One series for the browser; non-finite values are listed under ``nonfinite`` as
    ``[step, "nan"|"inf"|"-inf"]`` (a NaN loss is evidence the chart must show, not drop).

    ``binary=False``: JSON lists, non-finite values as ``null``. ``binary=True`` (what the dashboard
    asks for): ``steps_b64``/``values_b64``/``ts_b64`` are base64 little-endian float64 arrays, which
    cost a fraction of the JSON float formatting (the dominant cost of a 50-chart run page).
    ``with_ts=False``: timestamps are left out (empty), for charts over steps.
    """
    finite = np.isfinite(values)
    nonfinite: list[list[Any]] = []
    if not finite.all():
        for i in np.flatnonzero(~finite).tolist():
            v = float(values[i])
            nonfinite.append([int(steps[i]), "nan" if v != v else ("inf" if v > 0 else "-inf")])
    if binary:
        return {"n": int(len(steps)), "steps_b64": _b64(steps), "values_b64": _b64(values),
                "ts_b64": _b64(ts) if with_ts else "", "nonfinite": nonfinite}
    vals: list[Any] = values.tolist()
    if nonfinite:
        for i in np.flatnonzero(~finite).tolist():
            vals[i] = None
    return {"steps": steps.tolist(), "values": vals, "ts": np.round(ts, 3).tolist() if with_ts else [],
            "nonfinite": nonfinite}


# ---- samples: repeated spans -------------------------------------------------------------------

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNIT = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_CHAR_RUN = re.compile(r"(\S.{0,7}?)\1{2,}", re.S)  # a short pattern repeated >= 3 times in a row
MAX_SPAN_CHARS = 20_000


def repeated_spans(text: str | None, n: int = 4, min_count: int = 2) -> list[list[int]]:
    """Character ranges ``[start, end)`` of ``text`` covered by repetition, merged and sorted.

    Two signals: a run of ``n`` units (words, or single CJK characters) that occurs ``min_count``+
    times, and a short character pattern repeated 3+ times in a row ("!!!!!!", "这个这个这个").
    Only the first :data:`MAX_SPAN_CHARS` characters are scanned, to bound the cost per response.
    """
    if not text:
        return []
    text = text[:MAX_SPAN_CHARS]
    spans: list[tuple[int, int]] = []
    toks = [(m.start(), m.end(), m.group()) for m in _UNIT.finditer(text)]
    if len(toks) >= n * min_count:
        seen: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(toks) - n + 1):
            seen.setdefault(tuple(t[2] for t in toks[i : i + n]), []).append(i)
        for starts in seen.values():
            if len(starts) >= min_count:
                spans.extend((toks[i][0], toks[i + n - 1][1]) for i in starts)
    spans.extend((m.start(), m.end()) for m in _CHAR_RUN.finditer(text) if m.end() - m.start() >= 6)
    spans.sort()
    merged: list[list[int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def annotate_samples(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows with ``_repeats`` (spans in ``response``) and ``_repeat_ratio`` (fraction of chars covered)."""
    out = []
    for row in rows:
        d = clean_json(dict(row))
        resp = d.get("response") if isinstance(d.get("response"), str) else None
        spans = repeated_spans(resp)
        covered = sum(e - s for s, e in spans)
        d["_repeats"] = spans
        d["_repeat_ratio"] = round(covered / len(resp), 3) if resp else 0.0
        out.append(d)
    return out


def sample_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Column order for the samples table: the fixed ones, then extra columns as first seen."""
    cols = ["step", "idx", "prompt", "response", "reward"]
    for row in rows:
        for k in row:
            if k not in cols and not k.startswith("_"):
                cols.append(k)
    return cols


def pair_by_prompt(a_rows: Sequence[Mapping[str, Any]], b_rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Prompts present at both steps, each with its responses at step A and at step B."""
    def by_prompt(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
        d: dict[str, list[Mapping[str, Any]]] = {}
        for r in rows:
            d.setdefault(str(r.get("prompt")), []).append(r)
        return d

    a, b = by_prompt(a_rows), by_prompt(b_rows)
    return [{"prompt": p, "a": a[p], "b": b[p]} for p in a if p in b]


# ---- compare: config diff and reward-vs-KL paths ------------------------------------------------


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys (``{"actor": {"lr": 1}}`` -> ``{"actor.lr": 1}``); lists stay values."""
    out: dict[str, Any] = {}
    if isinstance(config, Mapping):
        for k, v in config.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, Mapping) and v:
                out.update(flatten(v, key))
            else:
                out[key] = v
    elif prefix:
        out[prefix] = config
    return out


def config_diff(configs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per config key of any run: ``{"key", "values": [per run, None if absent], "differs"}``."""
    flats = [flatten(c or {}) for c in configs]
    keys = sorted(set().union(*[f.keys() for f in flats])) if flats else []
    rows = []
    missing = object()
    for k in keys:
        vals = [f.get(k, missing) for f in flats]
        differs = any(v != vals[0] for v in vals[1:])
        rows.append({"key": k, "values": [None if v is missing else clean_json(v) for v in vals],
                     "differs": differs})
    return rows


def xy_path(
    x: tuple[np.ndarray, np.ndarray], y: tuple[np.ndarray, np.ndarray], max_points: int = 400
) -> dict[str, list[Any]]:
    """Join two series ``(steps, values)`` on step (last value per step wins) and thin the path to
    ``max_points`` by an even stride that keeps the last point (where the run ended up)."""
    def last_per_step(steps: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(steps) == 0:
            return steps, vals
        rev_unique, rev_idx = np.unique(steps[::-1], return_index=True)
        return rev_unique, vals[::-1][rev_idx]

    xs, xv = last_per_step(*x)
    ys, yv = last_per_step(*y)
    common, xi, yi = np.intersect1d(xs, ys, assume_unique=True, return_indices=True)
    px, py = xv[xi], yv[yi]
    ok = np.isfinite(px) & np.isfinite(py)
    common, px, py = common[ok], px[ok], py[ok]
    if len(common) > max_points:
        idx = np.unique(np.append(np.linspace(0, len(common) - 1, max_points).astype(int), len(common) - 1))
        common, px, py = common[idx], px[idx], py[idx]
    return {"steps": common.tolist(), "x": px.tolist(), "y": py.tolist()}


# ---- findings: counts and which charts they belong on ---------------------------------------------


def finding_counts(findings: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Open findings by severity (resolved ones are not counted)."""
    counts = {"critical": 0, "warning": 0, "info": 0}
    for f in findings:
        if f.get("resolved") or f.get("status") == "resolved":
            continue
        counts[f.get("severity") if f.get("severity") in counts else "info"] += 1
    return counts


def cited_keys(finding: Mapping[str, Any], keys: Sequence[str]) -> list[str]:
    """The run's metric keys a finding is about: its ``metric`` and the keys of its evidence, matched
    exactly or through the guide's canonical names (a finding says ``actor/kl_loss``, a TRL run logs
    ``objective/kl``). The run page draws the finding's marker only on these charts."""
    named: list[str] = []
    if isinstance(finding.get("metric"), str):
        named.append(finding["metric"])
    evidence = finding.get("evidence")
    if isinstance(evidence, Mapping) and isinstance(evidence.get("metrics"), Mapping):
        named.extend(str(k) for k in evidence["metrics"])
    if not named:
        return []
    present = set(keys)
    wanted = {canonical(n) for n in named}
    out = [n for n in dict.fromkeys(named) if n in present]
    out += [k for k in keys if k not in out and canonical(k) in wanted]
    return out
