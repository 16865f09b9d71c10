"""Plain-text rendering of guide entries (``rlcockpit explain``), in English or Chinese.

Plain text rather than rich markup so the same string works in a terminal, a log file, an alert
e-mail and a test assertion.
"""

from __future__ import annotations

import textwrap

from rlcockpit.metrics.guide import Match, match, suggest
from rlcockpit.metrics.schema import MetricInfo

_LABELS = {
    "en": {
        "aliases": "Aliases",
        "alias_of": "{key} is an alias of {canonical}.",
        "pattern_of": "{key} matches the pattern {pattern} ({parts}).",
        "unit": "Unit",
        "direction": "Direction",
        "healthy": "Healthy range",
        "meaning": "Meaning",
        "abnormal": "When abnormal",
        "action": "What to change",
        "knobs": "Config keys",
        "related": "See also",
        "origin_rl": "rlcockpit metric (verl has no such key)",
        "origin_wandb": "W&B's system monitor (verl has no such key)",
        "origin_trl": "TRL's trainers (verl has no such key)",
        "origin": "Defined by",
        "none": "none",
        "unknown": "Unknown metric {key!r}: it is not in the metric guide.",
        "suggest": "Did you mean:",
        "no_suggest": "No similar key. List all keys with: rlcockpit explain --list",
        "verl": "verl",
        "verl_none": "no verl equivalent",
        "e.g.": "e.g.",
    },
    "zh": {
        "aliases": "别名",
        "alias_of": "{key} 是 {canonical} 的别名。",
        "pattern_of": "{key} 匹配模式 {pattern}（{parts}）。",
        "unit": "单位",
        "direction": "方向",
        "healthy": "健康范围",
        "meaning": "含义",
        "abnormal": "异常说明",
        "action": "调整建议",
        "knobs": "相关配置项",
        "related": "相关指标",
        "origin_rl": "rlcockpit 指标（verl 中没有该键）",
        "origin_wandb": "W&B 系统监控（verl 中没有该键）",
        "origin_trl": "TRL 训练器（verl 中没有该键）",
        "origin": "来源",
        "none": "无",
        "unknown": "未知指标 {key!r}：指标指南中没有这个键。",
        "suggest": "你是不是要找：",
        "no_suggest": "没有相近的键。用 rlcockpit explain --list 列出全部指标。",
        "verl": "verl",
        "verl_none": "verl 中无对应项",
        "e.g.": "例如",
    },
}
_DIRECTION = {
    "en": {
        "higher": "higher is better",
        "lower": "lower is better",
        "band": "keep inside the healthy range",
        "none": "no better direction; watch the trend",
    },
    "zh": {
        "higher": "越高越好",
        "lower": "越低越好",
        "band": "保持在健康范围内",
        "none": "无好坏方向，关注趋势",
    },
}
_CHANGE = {
    "en": {
        "increase": "raise",
        "decrease": "lower",
        "enable": "enable",
        "disable": "disable",
        "set": "set",
        "check": "check",
    },
    "zh": {
        "increase": "调大",
        "decrease": "调小",
        "enable": "开启",
        "disable": "关闭",
        "set": "设置",
        "check": "检查",
    },
}


def format_range(healthy: tuple[float | None, float | None] | None, lang: str = "en") -> str:
    """``0.01 – 0.1``, ``≤ 0.2``, ``≥ 0.05`` or "none"."""
    if healthy is None or healthy == (None, None):
        return _LABELS[lang]["none"]
    low, high = healthy
    if low is not None and high is not None:
        return f"{low:g} – {high:g}"
    if high is not None:
        return f"≤ {high:g}"
    return f"≥ {low:g}"


def _para(text: str, lang: str, indent: str = "  ") -> list[str]:
    if not text:
        return [indent + _LABELS[lang]["none"]]
    if lang == "zh":  # no spaces to wrap at; a terminal wraps Chinese fine
        return [indent + text]
    return textwrap.wrap(
        text, width=100, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    )


def render_entry(info: MetricInfo, lang: str = "en", found: Match | None = None) -> str:
    """The full explanation of one entry, as printed by ``rlcockpit explain``."""
    labels = _LABELS[lang]
    sep = "：" if lang == "zh" else ": "
    heading = f"{info.text('title', lang)}  [{info.key}]"
    lines = [heading, "=" * min(100, len(heading))]
    if found is not None and found.via == "alias":
        lines.append(labels["alias_of"].format(key=found.key, canonical=found.canonical))
    elif found is not None and found.via in ("pattern", "alias-pattern"):
        parts = ", ".join(f"{k}={v}" for k, v in found.parts.items())
        lines.append(labels["pattern_of"].format(key=found.key, pattern=info.key, parts=parts))
        if found.via == "alias-pattern":
            lines.append(labels["alias_of"].format(key=found.key, canonical=found.canonical))
    aliases = list(info.aliases) + list(info.alias_patterns)
    lines.append(f"{labels['aliases']}{sep}{', '.join(aliases) if aliases else labels['none']}")
    if info.origin != "verl":
        lines.append(f"{labels['origin']}{sep}{labels.get('origin_' + info.origin, labels['origin_rl'])}")
    lines.append(f"{labels['unit']}{sep}{info.unit or labels['none']}")
    lines.append(f"{labels['direction']}{sep}{_DIRECTION[lang][info.direction]}")
    lines.append(f"{labels['healthy']}{sep}{format_range(info.healthy, lang)}")
    lines.extend(_para(info.text("healthy_note", lang), lang))
    for name in ("meaning", "abnormal", "action"):
        lines.append("")
        lines.append(labels[name] + sep.strip())
        lines.extend(_para(info.text(name, lang), lang))
    if info.knobs:
        lines.append("")
        lines.append(labels["knobs"] + sep.strip())
        for knob in info.knobs:
            verb = _CHANGE[lang][knob.change]
            name = knob.key or knob.verl_key or ""
            extra = []
            if knob.key:
                verl = knob.verl_key
                if verl is None:
                    extra.append(labels["verl_none"])
                elif verl != knob.key:
                    extra.append(f"{labels['verl']}{sep}{verl}")
            else:
                extra.append(labels["verl"])
            if knob.example:
                extra.append(f"{labels['e.g.']} {knob.example}")
            suffix = f"  ({'; '.join(extra)})" if extra else ""
            lines.append(f"  - {verb} {name}{suffix}")
    if info.related:
        lines.append("")
        lines.append(f"{labels['related']}{sep}{', '.join(info.related)}")
    return "\n".join(lines)


def render_unknown(key: str, lang: str = "en") -> str:
    labels = _LABELS[lang]
    lines = [labels["unknown"].format(key=key)]
    close = suggest(key)
    if close:
        lines.append(labels["suggest"])
        for name in close:
            m = match(name)
            title = m.info.text("title", lang) if m else ""
            target = f" -> {m.canonical}" if m and m.canonical != name else ""
            lines.append(f"  {name}{target}  ({title})")
    else:
        lines.append(labels["no_suggest"])
    return "\n".join(lines)


def render_explanation(key: str, lang: str = "en") -> str:
    found = match(key)
    if found is None:
        return render_unknown(key, lang)
    return render_entry(found.info, lang, found)
