"""The diagnosis in the dashboard's language: Chinese texts for findings, root-cause stories, causes and actions.

The English texts keep their one home (detectors, :mod:`rlcockpit.health.stories`, :mod:`rlcockpit.health.advice`);
``diagnosis_zh.yaml`` next to this file holds only their translations, keyed by structured ids (detector name,
story name, the English template of an action or cause). Numbers, metric keys and steps are never translated
text: a detector's title is rebuilt from the finding's structured fields (``step_start``, ``metric`` and its
evidence ``values``), and an action or cause keeps every number and key its English text had. Whatever has no
translation stays English, item by item, so nothing is ever blank; the English title is kept as ``title_en``.
"""

from __future__ import annotations

import copy
import re
from functools import cache
from importlib import resources
from string import Formatter
from typing import Any

import yaml

LANGS = ("en", "zh")


@cache
def catalogue(lang: str = "zh") -> dict[str, Any]:
    """The parsed catalogue of ``lang`` (``stories``, ``detectors``, ``texts``); English has none."""
    if lang == "en":
        return {"stories": {}, "detectors": {}, "texts": {}}
    raw = resources.files(__package__).joinpath(f"diagnosis_{lang}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(raw) or {}
    return {"stories": data.get("stories") or {}, "detectors": data.get("detectors") or {},
            "texts": data.get("texts") or {}}


def template_shape(english: str) -> str:
    """``english`` with every placeholder written ``{}`` (how catalogue keys and source f-strings compare)."""
    return re.sub(r"\{[^{}]*\}", "{}", english)


@cache
def _text_patterns(lang: str) -> list[tuple[re.Pattern[str], str]]:
    out = []
    for english, local in catalogue(lang)["texts"].items():
        parts = template_shape(str(english)).split("{}")
        regex = "(.+?)".join(re.escape(p) for p in parts)
        out.append((re.compile(f"^{regex}$", re.DOTALL), str(local)))
    return out


def translate_text(text: str, lang: str) -> str:
    """An action's or cause's title in ``lang`` (its numbers and keys copied verbatim), else ``text``."""
    if lang == "en" or not isinstance(text, str):
        return text
    for pattern, local in _text_patterns(lang):
        m = pattern.match(text)
        if m:
            return local.format(*m.groups())
    return text


def _fields(finding: dict[str, Any]) -> dict[str, Any]:
    values = (finding.get("evidence") or {}).get("values") or finding.get("values") or {}
    fields = {k: v for k, v in values.items() if isinstance(k, str) and k.isidentifier() and v is not None}
    for key in ("step", "step_start", "step_end", "metric"):
        if finding.get(key) is not None:
            fields[key] = finding[key]
    return fields


def _fill(template: str, fields: dict[str, Any]) -> str | None:
    """``template`` filled from ``fields``; ``None`` when a placeholder is missing or of the wrong type."""
    try:
        for _lit, name, _spec, _conv in Formatter().parse(template):
            if name is not None and re.split(r"[.\[]", name)[0] not in fields:
                return None
        return template.format_map(fields)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError):
        return None


def finding_title(finding: dict[str, Any], lang: str) -> str:
    """The finding's title in ``lang``: the detector's first template its fields fill, else its label and step."""
    entry = catalogue(lang)["detectors"].get(finding.get("detector") or "")
    if lang == "en" or not entry:
        return finding.get("title") or ""
    fields = _fields(finding)
    for template in entry.get("titles") or []:
        text = _fill(str(template), fields)
        if text is not None:
            return text
    step = finding.get("step_start", finding.get("step"))
    return f"{entry['label']}（第 {step} 步）" if step is not None else str(entry["label"])


def _cause(text: str, detector: str | None, lang: str) -> str:
    """A cause title: the detector's own ``cause`` has its translation under the detector; others by template."""
    from rlcockpit.health.base import DETECTORS

    entry = catalogue(lang)["detectors"].get(detector or "")
    if entry and entry.get("cause") and detector in DETECTORS and text == getattr(DETECTORS.get(detector), "cause", None):
        return str(entry["cause"])
    return translate_text(text, lang)


def localize_finding(finding: dict[str, Any], lang: str) -> dict[str, Any]:
    """A copy of ``finding`` (a :meth:`Finding.to_dict`) with its texts in ``lang``; ``title_en`` keeps the English."""
    if lang == "en" or not isinstance(finding, dict):
        return finding
    out = copy.deepcopy(finding)
    det = finding.get("detector")
    entry = catalogue(lang)["detectors"].get(det or "")
    out["title_en"] = finding.get("title")
    out["title"] = finding_title(finding, lang)
    if finding.get("summary") and entry and entry.get("summary"):
        out["summary"] = str(entry["summary"])
    for cause in out.get("causes") or []:
        cause["title"] = _cause(cause.get("title", ""), det, lang)
    for action in out.get("actions") or []:
        action["title"] = translate_text(action.get("title", ""), lang)
    return out


def _with_evidence(text: str, lang: str) -> str:
    """A config cause shown as ``title (evidence)``: the title translated, the evidence (a key=value) kept."""
    whole = translate_text(text, lang)
    if whole != text:
        return whole
    for m in re.finditer(r" \(", text):
        head = text[:m.start()]
        local = translate_text(head, lang)
        if local != head and text.endswith(")"):
            return f"{local}（{text[m.end():-1]}）"
    return text


def _root_cause(rc: dict[str, Any], by_id: dict[str, dict[str, Any]], lang: str) -> dict[str, Any]:
    story = catalogue(lang)["stories"].get(rc.get("story") or "")
    out = copy.deepcopy(rc)
    out["title_en"] = rc.get("title")
    if story:
        out["title"] = f"{story['title']}（第 {rc.get('step')} 步）"
        because = rc.get("because")
        if isinstance(because, dict) and because.get("title"):
            text = _cause(because["title"], because.get("detector"), lang)
            because_zh = f"，原因是 {text}" + (f"（{because['evidence']}）" if because.get("evidence") else "")
        else:
            because_zh = ""
        out["explanation"] = str(story["explain"]).format(because=because_zh).strip("，") + "。"
    for link in out.get("chain") or []:
        f = by_id.get(link.get("finding_id") or "")
        if f is not None:
            link["text"] = f"{finding_title(f, lang)}（第 {link.get('step_start', f.get('step_start'))} 步）"
        elif link.get("role") == "config":
            link["text"] = _with_evidence(link.get("text", ""), lang)
    for action in out.get("actions") or []:
        if isinstance(action, dict) and "title" in action:
            action["title"] = translate_text(action["title"], lang)
    if isinstance(out.get("root"), dict) and out["root"].get("finding_id") in by_id:
        out["root"]["title"] = finding_title(by_id[out["root"]["finding_id"]], lang)
    return out


def localize_diagnosis(diag: dict[str, Any], lang: str) -> dict[str, Any]:
    """A copy of a :func:`~rlcockpit.health.diagnosis.diagnose.diagnose_run` result with its texts in ``lang``."""
    if lang == "en":
        return diag
    out = dict(diag)
    findings = [f for f in diag.get("findings") or [] if isinstance(f, dict)]
    by_id = {f["id"]: f for f in findings if f.get("id")}
    out["findings"] = [localize_finding(f, lang) for f in findings]
    if isinstance(diag.get("root_cause"), dict):
        out["root_cause"] = _root_cause(diag["root_cause"], by_id, lang)
    return out
