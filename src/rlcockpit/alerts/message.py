"""The alert message: one platform-neutral record that every channel formats its own way.

Why a separate record instead of passing findings around: alerts come from six places (findings,
run finished/failed/killed, stall watchdog, out-of-process watchdog, manual ``run.alert``), and
every channel must show the same facts — title, run, step, evidence, the overrides to try, and a
link to the dashboard page — whatever produced them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

LEVELS = ("info", "warning", "critical")  # = rlcockpit.health.findings.SEVERITIES, without importing health


def level_rank(level: str) -> int:
    """0 info, 1 warning, 2 critical; unknown levels rank as info."""
    return LEVELS.index(level) if level in LEVELS else 0
LEVEL_EMOJI = {"info": "ℹ️", "warning": "⚠️", "critical": "🚨"}
MAX_EVIDENCE_LINES = 6
MAX_TEXT_CHARS = 3000  # WeCom markdown allows 4096 bytes; keep every platform comfortably inside


@dataclass
class AlertMessage:
    """What an alert says. ``kind`` says what produced it; ``key`` drives dedup and cooldown."""

    title: str
    text: str = ""
    level: str = "warning"  # info | warning | critical
    kind: str = "manual"  # finding | finished | failed | killed | stalled | crashed | manual | test
    project: str | None = None
    run_id: str | None = None
    run_name: str | None = None
    step: int | None = None
    evidence: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    verl_overrides: list[str] = field(default_factory=list)
    link: str | None = None
    key: str | None = None
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            self.level = "warning"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    # ---- renderings shared by channels -------------------------------------------------------
    @property
    def headline(self) -> str:
        """``[rlcockpit] CRITICAL: reward collapsed (run my-run)``: fits Slack's 150-char header."""
        where = f" ({self.run_name or self.run_id})" if (self.run_name or self.run_id) else ""
        return f"[rlcockpit] {self.level.upper()}: {self.title}{where}"[:150]

    def facts(self) -> list[tuple[str, str]]:
        """(label, value) rows shown by every channel."""
        rows: list[tuple[str, str]] = []
        if self.run_name or self.run_id:
            run = self.run_name or ""
            if self.run_id and self.run_id != self.run_name:
                run = f"{run} ({self.run_id})" if run else self.run_id
            rows.append(("run", run))
        if self.project:
            rows.append(("project", self.project))
        if self.step is not None and self.step >= 0:
            rows.append(("step", str(self.step)))
        rows.append(("level", self.level))
        return rows

    def plain_text(self) -> str:
        """Plain text (console, e-mail body, Feishu/DingTalk fallbacks)."""
        lines = [self.headline, ""]
        lines += [f"{k}: {v}" for k, v in self.facts()]
        if self.text:
            lines += ["", self.text]
        if self.evidence:
            lines += ["", "evidence:"] + [f"  - {e}" for e in self.evidence]
        if self.overrides:
            lines += ["", "try:"] + [f"  {o}" for o in self.overrides]
        if self.verl_overrides and self.verl_overrides != self.overrides:
            lines += ["", "in verl:"] + [f"  {o}" for o in self.verl_overrides]
        if self.link:
            lines += ["", f"dashboard: {self.link}"]
        return _clip("\n".join(lines))

    def markdown(self, *, bold: str = "**", link_style: str = "md") -> str:
        """Markdown for chat platforms. Slack uses ``*bold*`` and ``<url|text>`` links."""
        b = bold
        lines = [f"{LEVEL_EMOJI.get(self.level, '')} {b}{self.title}{b}".strip()]
        lines.append(" · ".join(f"{k}: {v}" for k, v in self.facts()))
        if self.text:
            lines += ["", self.text]
        if self.evidence:
            lines += ["", f"{b}Evidence{b}"] + [f"- {e}" for e in self.evidence]
        if self.overrides:
            lines += ["", f"{b}Recommended overrides{b}", "```", *self.overrides, "```"]
        if self.verl_overrides and self.verl_overrides != self.overrides:
            lines += [f"{b}verl{b}", "```", *self.verl_overrides, "```"]
        if self.link:
            lines += ["", f"<{self.link}|Open in dashboard>" if link_style == "slack"
                      else f"[Open in dashboard]({self.link})"]
        return _clip("\n".join(lines))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 20] + "\n… (truncated)"


def run_link(dashboard_url: str | None, run_id: str | None) -> str | None:
    """``http://host:port`` + ``/#/run/<id>`` — the dashboard's page for the run."""
    if not dashboard_url or not run_id:
        return None
    return f"{dashboard_url.rstrip('/')}/#/run/{run_id}"


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def evidence_lines(evidence: Mapping[str, Any] | None) -> list[str]:
    """Short human lines from a finding's ``evidence`` (metric series, samples, anything else)."""
    if not evidence:
        return []
    lines: list[str] = []
    metrics = evidence.get("metrics") if isinstance(evidence, Mapping) else None
    if isinstance(metrics, Mapping):
        for key, points in metrics.items():
            pts = [p for p in (points or []) if isinstance(p, (list, tuple)) and len(p) >= 2]
            if not pts:
                continue
            first, last = pts[0], pts[-1]
            if len(pts) == 1:
                lines.append(f"{key} = {_fmt_value(last[1])} at step {last[0]}")
            else:
                lines.append(f"{key}: {_fmt_value(first[1])} (step {first[0]}) → {_fmt_value(last[1])} "
                             f"(step {last[0]})")
    samples = evidence.get("samples") if isinstance(evidence, Mapping) else None
    if isinstance(samples, list) and samples:
        s = samples[0]
        text = s.get("response") if isinstance(s, Mapping) else s
        lines.append(f"sample response: {str(text)[:120]!r}")
    for k, v in evidence.items():
        if k in ("metrics", "samples") or isinstance(v, (Mapping, list)):
            continue
        lines.append(f"{k} = {_fmt_value(v)}")
    return lines[:MAX_EVIDENCE_LINES]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def from_finding(finding: Any, *, project: str | None = None, run_id: str | None = None,
                 run_name: str | None = None, dashboard_url: str | None = None) -> AlertMessage:
    """An alert for a health finding (a ``Finding`` or its dict form)."""
    overrides: list[str] = []
    verl: list[str] = []
    titles: list[str] = []
    for action in _get(finding, "actions") or []:
        overrides += list(_get(action, "overrides") or [])
        verl += list(_get(action, "verl_overrides") or [])
        if _get(action, "title"):
            titles.append(str(_get(action, "title")))
    text = str(_get(finding, "summary") or "")
    causes = _get(finding, "causes") or []
    if causes:
        text += ("\n" if text else "") + "Probable cause: " + str(_get(causes[0], "title"))
    if titles and not overrides:
        text += ("\n" if text else "") + "Suggested: " + "; ".join(titles[:3])
    detector = str(_get(finding, "detector") or "finding")
    title = str(_get(finding, "title") or detector)
    return AlertMessage(
        title=title, text=text, level=str(_get(finding, "severity") or "warning"), kind="finding",
        project=project, run_id=run_id, run_name=run_name, step=_get(finding, "step"),
        evidence=evidence_lines(_get(finding, "evidence")), overrides=list(dict.fromkeys(overrides)),
        verl_overrides=list(dict.fromkeys(verl)), link=run_link(dashboard_url, run_id),
        key=f"finding:{detector}:{title}",
    )
