"""What one metric-guide entry holds, and how the YAML data files become entries.

The guide's text lives in ``metrics/guide_*.yaml`` (bilingual prose is easier to review there than
in Python literals). This module turns those files into frozen :class:`MetricInfo` objects and
rejects malformed data at import time with an error naming the file and the entry, so a typo in a
data file fails the test suite instead of silently dropping an explanation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from rlcockpit.metrics.keys import to_verl_key

DIRECTIONS = ("higher", "lower", "band", "none")
KNOB_CHANGES = ("increase", "decrease", "enable", "disable", "set", "check")
TEXT_FIELDS = ("title", "meaning", "healthy_note", "abnormal", "action")
STAT_ZH = {
    "mean": "均值",
    "max": "最大值",
    "min": "最小值",
    "clip_ratio": "截断比例",
    "std": "标准差",
    "read": "读取",
    "write": "写入",
    "sent": "发送",
    "recv": "接收",
}

_PLACEHOLDER = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
# Regex for a placeholder's value, by placeholder name. A data source may contain "/"
# (verl's gsm8k source is "openai/gsm8k"); counters are digits; anything else is one path segment.
_PLACEHOLDER_REGEX = {
    "source": r".+",
    "path": r".+",  # a key's tail that may hold "/" (transformers' eval_<path> copies of TRL's rewards/<fn>/mean)
    "N": r"\d+",
    "n": r"\d+",
    "i": r"\d+",
    "stat": r"[a-z]+@\d+(?:/[a-z]+)?",
}
_DEFAULT_PLACEHOLDER_REGEX = r"[^/]+"
_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")


@dataclass(frozen=True)
class Knob:
    """A config key to turn when the metric is abnormal: ``change`` is the direction, ``example`` a typical value.

    ``key`` is the rlcockpit trainer key (empty for a setting only verl has); ``verl`` overrides the
    derived verl path where the mapping isn't mechanical.
    """

    key: str  # rlcockpit trainer key, e.g. "actor.optim.lr"; "" when only verl has the setting
    change: str  # one of KNOB_CHANGES
    example: str = ""
    verl: str = ""

    @property
    def verl_key(self) -> str | None:
        return self.verl or (to_verl_key(self.key) if self.key else None)

    def to_dict(self) -> dict[str, str | None]:
        return {"key": self.key, "verl_key": self.verl_key, "change": self.change, "example": self.example}


@dataclass(frozen=True)
class MetricInfo:
    """One canonical metric. English texts are attributes; Chinese texts are in ``zh`` (same field names).

    ``healthy`` is ``(low, high)`` with ``None`` for an open side; detectors compare values against it.
    A ``key`` containing ``<name>`` placeholders is a *pattern* entry (``system/gpu/<i>/utilization``):
    concrete keys that match it are canonical themselves and resolve to this entry on lookup.
    """

    key: str  # canonical key (verl's name where verl has one)
    title: str
    meaning: str = ""
    unit: str = ""
    direction: str = "band"  # "higher" | "lower" | "band" | "none"
    healthy: tuple[float | None, float | None] | None = None  # (low, high), None where unbounded
    abnormal: str = ""  # what an abnormal value usually means
    action: str = ""  # what to change
    aliases: tuple[str, ...] = ()
    zh: Mapping[str, str] = field(
        default_factory=dict
    )  # Chinese texts: title, meaning, healthy_note, abnormal, action
    healthy_note: str = ""  # the healthy range in words (typical values, caveats)
    category: str = ""
    origin: str = "verl"  # who defines the key: "verl" or "rlcockpit" (verl has no such metric)
    signals: tuple[
        str, ...
    ] = ()  # shapes detectors should watch for: spike, collapse, drop, rise, plateau, nan
    thresholds: Mapping[str, float] = field(default_factory=dict)  # named numbers for detectors
    knobs: tuple[Knob, ...] = ()
    alias_targets: Mapping[str, str] = field(default_factory=dict)  # alias -> concrete key (pattern entries)
    alias_patterns: tuple[str, ...] = ()  # aliases with placeholders, e.g. "rewards/<fn>/mean"
    related: tuple[str, ...] = ()

    @property
    def is_pattern(self) -> bool:
        return "<" in self.key

    def text(self, name: str, lang: str = "en") -> str:
        """Text field ``name`` in ``lang`` ("en" or "zh"), falling back to English."""
        if lang == "zh" and self.zh.get(name):
            return self.zh[name]
        return str(getattr(self, name))


def placeholders(pattern: str) -> list[str]:
    return _PLACEHOLDER.findall(pattern)


def pattern_regex(pattern: str, *, named: bool = True) -> str:
    """Anchored regex for a ``<name>`` pattern. A literal ``*`` is accepted for any placeholder, so
    ``timing_s/*`` or ``val-core/*/acc/mean@*`` (the way users write wildcards) match the entry.

    ``named=False`` gives a regex without named groups that JavaScript's ``RegExp`` also accepts.
    """
    out: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(pattern):
        out.append(_escape(pattern[pos : m.start()]))
        name = m.group(1)
        body = _PLACEHOLDER_REGEX.get(name, _DEFAULT_PLACEHOLDER_REGEX)
        out.append(f"(?P<{name}>{body}|\\*)" if named else f"({body}|\\*)")
        pos = m.end()
    out.append(_escape(pattern[pos:]))
    return "^" + "".join(out) + "$"


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def _fail(where: str, msg: str) -> ValueError:
    return ValueError(f"metric guide {where}: {msg}")


def _expand_families(raw: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """An entry with ``stats: [mean, max, min]`` and ``{stat}`` in its key stands for one entry per stat;
    ``per_stat`` overrides fields (and merges ``en``/``zh`` texts) for single stats."""
    if "stats" not in raw:
        return [dict(raw)]
    key = str(raw.get("key", ""))
    if "{stat}" not in key:
        raise _fail(where, f"entry {key!r} has 'stats' but no '{{stat}}' in its key")
    per_stat = raw.get("per_stat") or {}
    unknown = set(per_stat) - set(raw["stats"])
    if unknown:
        raise _fail(where, f"entry {key!r}: per_stat names {sorted(unknown)} that are not in stats")
    out = []
    for stat in raw["stats"]:
        entry = {k: v for k, v in raw.items() if k not in ("stats", "per_stat")}
        override = dict(per_stat.get(stat) or {})
        for lang in ("en", "zh"):
            merged = dict(entry.get(lang) or {})
            merged.update(override.pop(lang, None) or {})
            entry[lang] = merged
        entry.update(override)
        entry = _substitute(entry, stat)
        out.append(entry)
    return out


def _substitute(value: Any, stat: str) -> Any:
    if isinstance(value, str):
        return value.replace("{stat}", stat).replace("{stat_zh}", STAT_ZH.get(stat, stat))
    if isinstance(value, list):
        return [_substitute(v, stat) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, stat) for k, v in value.items()}
    return value


def _healthy(value: Any, where: str) -> tuple[float | None, float | None] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise _fail(where, f"healthy must be [low, high] (null for an open side), got {value!r}")
    low, high = (None if v is None else float(v) for v in value)
    if low is not None and high is not None and low > high:
        raise _fail(where, f"healthy low {low} is above high {high}")
    return (low, high)


def build_entry(raw: Mapping[str, Any], where: str) -> MetricInfo:
    """One :class:`MetricInfo` from a parsed YAML mapping (after family expansion)."""
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise _fail(where, f"entry without a 'key': {dict(raw)!r}"[:300])
    where = f"{where}: entry {key!r}"
    allowed = {
        "key", "unit", "direction", "healthy", "aliases", "category", "origin", "signals",
        "thresholds", "knobs", "related", "en", "zh",
    }  # fmt: skip
    extra = set(raw) - allowed
    if extra:
        raise _fail(where, f"unknown field(s) {sorted(extra)}; allowed: {sorted(allowed)}")
    en = dict(raw.get("en") or {})
    zh = dict(raw.get("zh") or {})
    for lang, texts in (("en", en), ("zh", zh)):
        bad = set(texts) - set(TEXT_FIELDS)
        if bad:
            raise _fail(where, f"{lang}: unknown text field(s) {sorted(bad)}; allowed: {TEXT_FIELDS}")
        if not str(texts.get("title", "")).strip():
            raise _fail(where, f"{lang}: 'title' is missing")
    direction = raw.get("direction", "none")
    if direction not in DIRECTIONS:
        raise _fail(where, f"direction must be one of {DIRECTIONS}, got {direction!r}")
    aliases: list[str] = []
    alias_targets: dict[str, str] = {}
    alias_patterns: list[str] = []
    for item in raw.get("aliases") or []:
        if isinstance(item, Mapping):
            name, target = str(item.get("name", "")), str(item.get("to", ""))
            if not name or not target:
                raise _fail(where, f"an alias mapping needs 'name' and 'to', got {dict(item)!r}")
            if not re.match(pattern_regex(key), target):
                raise _fail(where, f"alias {name!r} targets {target!r}, which does not match {key!r}")
            aliases.append(name)
            alias_targets[name] = target
        elif "<" in str(item):
            if set(placeholders(str(item))) != set(placeholders(key)):
                raise _fail(where, f"pattern alias {item!r} must use the placeholders of {key!r}")
            alias_patterns.append(str(item))
        else:
            aliases.append(str(item))
    if "<" in key:
        untargeted = [a for a in aliases if a not in alias_targets]
        if untargeted:
            raise _fail(
                where, f"aliases {untargeted} of a pattern entry need a concrete target ({{name, to}})"
            )
    knobs = []
    for k in raw.get("knobs") or []:
        if (
            not isinstance(k, Mapping)
            or not (k.get("key") or k.get("verl"))
            or k.get("change") not in KNOB_CHANGES
        ):
            raise _fail(where, f"a knob needs 'key' (or 'verl') and 'change' in {KNOB_CHANGES}, got {k!r}")
        example = "" if k.get("example") is None else str(k["example"])
        knobs.append(Knob(str(k.get("key") or ""), str(k["change"]), example, str(k.get("verl") or "")))
    thresholds = {str(k): float(v) for k, v in (raw.get("thresholds") or {}).items()}
    return MetricInfo(
        key=key,
        title=str(en["title"]).strip(),
        meaning=str(en.get("meaning", "")).strip(),
        unit=str(raw.get("unit", "") or ""),
        direction=direction,
        healthy=_healthy(raw.get("healthy"), where),
        abnormal=str(en.get("abnormal", "")).strip(),
        action=str(en.get("action", "")).strip(),
        aliases=tuple(aliases),
        zh={k: str(v).strip() for k, v in zh.items()},
        healthy_note=str(en.get("healthy_note", "")).strip(),
        category=str(raw.get("category", "")),
        origin=str(raw.get("origin", "verl")),
        signals=tuple(str(s) for s in raw.get("signals") or ()),
        thresholds=thresholds,
        knobs=tuple(knobs),
        alias_targets=alias_targets,
        alias_patterns=tuple(alias_patterns),
        related=tuple(str(r) for r in raw.get("related") or ()),
    )


def parse_entries(text: str, where: str) -> list[MetricInfo]:
    """Entries from one YAML document (a list of mappings, or ``{category: ..., entries: [...]}``)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise _fail(where, f"invalid YAML: {exc}") from exc
    category = ""
    if isinstance(doc, Mapping):
        category = str(doc.get("category", ""))
        doc = doc.get("entries")
    if not isinstance(doc, list):
        raise _fail(where, "expected a list of entries (or a mapping with 'entries')")
    out = []
    for raw in doc:
        if not isinstance(raw, Mapping):
            raise _fail(where, f"every entry must be a mapping, got {raw!r}"[:300])
        for expanded in _expand_families(raw, where):
            expanded.setdefault("category", category)
            out.append(build_entry(expanded, where))
    return out


def load_packaged_entries(names: Iterable[str]) -> list[MetricInfo]:
    """Entries from the YAML data files shipped in this package, in the order given."""
    base = resources.files("rlcockpit.metrics")
    out: list[MetricInfo] = []
    for name in names:
        out.extend(parse_entries(base.joinpath(name).read_text(encoding="utf-8"), name))
    return out
