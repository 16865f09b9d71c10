"""Metric guide registry and alias resolution.

One canonical key per concept (verl's key where verl has one). Seed-style (``train/kl_div``),
TRL (``kl``) and article-style (``kl/divergence``) names are aliases; keys with variable parts
(``system/gpu/<i>/utilization``, ``val-core/<source>/<metric>/mean@<N>``) are pattern entries. The
health detectors, ``rlcockpit explain`` and the dashboard all read this one registry, so a metric
explained on the command line is the same metric a detector fires on.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlcockpit.metrics.schema import (
    Knob,
    MetricInfo,
    load_packaged_entries,
    pattern_regex,
    placeholders,
    to_verl_key,
)
from rlcockpit.registry import Registry

__all__ = [
    "DATA_FILES",
    "entry_as_dict",
    "GUIDE",
    "Knob",
    "Match",
    "MetricInfo",
    "all_entries",
    "canonical_name",
    "explain",
    "guide_as_dict",
    "healthy_range",
    "lookup",
    "match",
    "resolve_metrics",
    "suggest",
    "threshold",
    "to_verl_key",
]

# Data files, in display order (``rlcockpit explain --list`` and the dashboard follow it).
DATA_FILES = ("guide_actor.yaml", "guide_critic.yaml", "guide_perf.yaml", "guide_system.yaml", "guide_verl.yaml",
              "guide_rollout_corr.yaml", "guide_trl.yaml", "guide_verl_v1.yaml")

GUIDE: Registry[MetricInfo] = Registry("metric")
_ORDER: list[str] = []
# (compiled regex, entry, source pattern, template): canonical patterns first, then alias patterns,
# each most specific first. ``template`` is the entry key to substitute into (None: key is canonical).
_PATTERNS: list[tuple[re.Pattern[str], MetricInfo, str, str | None]] = []


def _add(info: MetricInfo) -> None:
    for alias in info.aliases:
        if alias in GUIDE:
            raise ValueError(f"metric guide: alias {alias!r} of {info.key!r} is already a metric or alias")
    GUIDE.add(info.key, info, *info.aliases)
    _ORDER.append(info.key)


def _literal_weight(pattern: str) -> int:
    return len(re.sub(r"<[^>]+>", "", pattern))


def _build() -> None:
    for info in load_packaged_entries(DATA_FILES):
        _add(info)
    canonical, aliased = [], []
    for key in _ORDER:
        info = GUIDE.get(key)
        if info.is_pattern:
            canonical.append((info.key, info, None))
        for ap in info.alias_patterns:
            aliased.append((ap, info, info.key))
    for group in (canonical, aliased):
        group.sort(key=lambda t: -_literal_weight(t[0]))
        _PATTERNS.extend((re.compile(pattern_regex(src)), info, src, tpl) for src, info, tpl in group)


_build()


@dataclass(frozen=True)
class Match:
    """How a key was found: ``via`` is "canonical", "alias", "pattern" or "alias-pattern"."""

    key: str  # the key asked for
    canonical: str  # the key it is stored under (itself for canonical and pattern-matched keys)
    info: MetricInfo
    via: str
    parts: Mapping[str, str]  # placeholder values for pattern matches ({"i": "3"})


# prefixes trackers put in front of a trainer's own names: TRL/transformers logged through W&B or TensorBoard
# appear as ``train/kl``, ``train/rewards/<fn>/mean``; such a key means what the rest means
TRACKER_PREFIXES = ("train/",)


def match(key: str) -> Match | None:
    """Resolve ``key`` to its guide entry, saying how it matched; ``None`` if the guide doesn't know it.
    A tracker prefix (``train/kl`` as W&B shows TRL's ``kl``) is tried last, so ``train/`` aliases the
    guide names explicitly still win."""
    found = _match(key)
    if found is None:
        for prefix in TRACKER_PREFIXES:
            if key.startswith(prefix) and len(key) > len(prefix):
                inner = _match(key[len(prefix):])
                if inner is not None:
                    return Match(key, inner.canonical, inner.info, "alias" if inner.via != "pattern" else "alias-pattern",
                                 inner.parts)
    return found


def _match(key: str) -> Match | None:
    if key in GUIDE:
        info = GUIDE.get(key)
        if key == info.key:
            return Match(key, key, info, "canonical", {})
        return Match(key, info.alias_targets.get(key, info.key), info, "alias", {})
    for rx, info, _source, template in _PATTERNS:
        m = rx.match(key)
        if m is None:
            continue
        parts = {k: v for k, v in m.groupdict().items() if v is not None}
        if template is None:
            return Match(key, key, info, "pattern", parts)
        concrete = template
        for name in placeholders(template):
            concrete = concrete.replace(f"<{name}>", parts.get(name, f"<{name}>"))
        return Match(key, concrete, info, "alias-pattern", parts)
    return None


def lookup(key: str) -> MetricInfo | None:
    """The guide entry for ``key`` (canonical, alias or pattern match), or ``None`` if the guide doesn't know it."""
    m = match(key)
    return m.info if m else None


def canonical_name(key: str) -> str:
    """Canonical key for ``key``; unknown keys (and concrete keys of pattern entries) are returned unchanged."""
    m = match(key)
    return m.canonical if m else key


def resolve_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Rename aliased keys to canonical ones. Where a canonical key and an alias of it are both
    present the canonical value wins; between two aliases of one key, the first one seen wins."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        c = canonical_name(k)
        if c != k and (c in metrics or c in out):
            continue
        out[c] = v
    return out


def healthy_range(key: str) -> tuple[float | None, float | None] | None:
    """``(low, high)`` healthy range of the metric ``key`` names (``None`` for an open side), or
    ``None`` when the guide has no fixed range for it (or doesn't know the key)."""
    info = lookup(key)
    return info.healthy if info else None


def threshold(key: str, name: str) -> float:
    """The guide's threshold ``name`` of the metric ``key`` (its ``thresholds:`` block, or ``healthy_low`` /
    ``healthy_high`` for the sides of its ``healthy`` range): the one home of a default that detectors, checkups,
    dashboard panels and advice all read. KeyError naming the key and the thresholds it has when absent."""
    info = lookup(key)
    if info is None:
        raise KeyError(f"metric guide: no entry for {key!r}")
    if name in ("healthy_low", "healthy_high") and info.healthy:
        value = info.healthy[0 if name == "healthy_low" else 1]
        if value is not None:
            return float(value)
    if name in info.thresholds:
        return float(info.thresholds[name])
    known = ", ".join(sorted(info.thresholds)) or "none"
    raise KeyError(f"metric guide: {info.key} has no threshold {name!r} (it has: {known})")


def all_entries() -> list[MetricInfo]:
    """Every entry in display order."""
    return [GUIDE.get(k) for k in _ORDER]


def suggest(key: str, n: int = 5) -> list[str]:
    """Known keys (canonical or alias) closest to ``key``, best first, for "did you mean" messages."""
    known = list(_ORDER) + [a for k in _ORDER for a in GUIDE.get(k).aliases]
    query = key.strip().lower()
    scored: dict[str, float] = {}
    for name in known:
        ratio = difflib.SequenceMatcher(None, query, name.lower()).ratio()
        last = name.lower().rsplit("/", 1)[-1]
        ratio = max(ratio, 0.9 * difflib.SequenceMatcher(None, query.rsplit("/", 1)[-1], last).ratio())
        if query and (query in name.lower() or last in query) and len(last) > 2:
            ratio = max(ratio, 0.75)
        if ratio >= 0.55:
            scored[name] = ratio
    return [name for name, _ in sorted(scored.items(), key=lambda t: (-t[1], t[0]))[:n]]


def entry_as_dict(info: MetricInfo, lang: str = "en") -> dict[str, Any]:
    """One entry as JSON-serialisable data, texts in ``lang`` (English where a Chinese text is missing)."""
    _check_lang(lang)
    return {
        "key": info.key,
        "title": info.text("title", lang),
        "meaning": info.text("meaning", lang),
        "unit": info.unit,
        "direction": info.direction,
        "healthy": list(info.healthy) if info.healthy else None,
        "healthy_note": info.text("healthy_note", lang),
        "abnormal": info.text("abnormal", lang),
        "action": info.text("action", lang),
        "category": info.category,
        "origin": info.origin,
        "aliases": list(info.aliases),
        "alias_targets": dict(info.alias_targets),
        "alias_patterns": list(info.alias_patterns),
        "is_pattern": info.is_pattern,
        "regex": pattern_regex(info.key, named=False) if info.is_pattern else None,
        "signals": list(info.signals),
        "thresholds": dict(info.thresholds),
        "knobs": [k.to_dict() for k in info.knobs],
        "related": list(info.related),
    }


def guide_as_dict(lang: str = "en") -> dict[str, Any]:
    """The whole guide as JSON-serialisable data for the dashboard and detectors.

    ``entries`` maps canonical key -> entry (display order); ``aliases`` maps every concrete alias to
    the key it resolves to; ``patterns`` lists regexes (JavaScript-compatible, no named groups) for
    pattern entries and pattern aliases, most specific first, with the ``canonical`` template
    (``$1``-style substitution of the groups gives the concrete key) or ``null`` when matching keys
    are canonical themselves.
    """
    entries = {k: entry_as_dict(GUIDE.get(k), lang) for k in _ORDER}
    aliases = {a: GUIDE.get(k).alias_targets.get(a, k) for k in _ORDER for a in GUIDE.get(k).aliases}
    patterns = []
    for _rx, info, source, template in _PATTERNS:
        canonical_js = None
        if template is not None:
            canonical_js = template
            for idx, name in enumerate(placeholders(source), start=1):
                canonical_js = canonical_js.replace(f"<{name}>", f"${idx}")
        patterns.append(
            {
                "pattern": source,
                "regex": pattern_regex(source, named=False),
                "entry": info.key,
                "canonical": canonical_js,
            }
        )
    return {"version": 1, "lang": lang, "entries": entries, "aliases": aliases, "patterns": patterns}


def _check_lang(lang: str) -> None:
    if lang not in ("en", "zh"):
        raise ValueError(f"metric guide language must be 'en' or 'zh', got {lang!r}")


def explain(key: str, lang: str = "en") -> str:
    """Human-readable explanation of a metric (the text ``rlcockpit explain KEY`` prints).

    Unknown keys are not an error here: the text says so and lists the closest known keys.
    """
    from rlcockpit.metrics.render import render_explanation

    _check_lang(lang)
    return render_explanation(key, lang)
