"""Diagnosis reports: readable text for the terminal, one self-contained HTML file for sharing.

The HTML has no external resources (no CDN, no scripts): inline CSS and inline SVG plots. Everything that
came from the run — metric names, sample prompts/responses (model output is untrusted), config values — is
HTML-escaped.
"""

from __future__ import annotations

import html
import math
from typing import Any

from rlcockpit.health.base import fmt

PLOT_W, PLOT_H, PAD = 640, 150, 36
MAX_PLOTS = 6


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _num(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


VOCABULARY = {"verl": "verl key paths", "trl": "TRL GRPOConfig arguments", "rlcockpit": "rlcockpit train overrides"}


def format_overrides_text(merged: dict[str, Any] | None) -> list[str]:
    """The "Overrides to apply" block: one line to paste (one value per key), then why a value was chosen
    where findings disagreed, and the changes the run's launcher has no setting for."""
    if not merged or not (merged.get("apply") or merged.get("not_applicable")):
        return []
    lines = ["", f"Overrides to apply ({VOCABULARY.get(merged.get('vocabulary'), merged.get('vocabulary'))}, "
             "one value per key):"]
    if merged.get("apply"):
        lines.append("  " + " ".join(merged["apply"]))
    if merged.get("vocabulary") == "rlcockpit" and merged.get("verl"):
        lines.append("  verl: " + " ".join(merged["verl"]))
    disputed = [c for c in merged.get("choices", []) if c.get("alternatives")]
    for c in disputed:
        others = "; ".join(f"{a['value']} for {a['for']}" for a in c["alternatives"])
        lines.append(f"  - {c['key']}={c['value']} (for {c['for']}): {c['reason']}; not {others}")
    for text in merged.get("not_applicable", []):
        lines.append(f"  - not set: {text}")
    return lines


def format_held_back_text(diagnosis: dict[str, Any]) -> list[str]:
    """Why a diagnosis proposes less than its findings' advice: a run too short for a baseline of its own,
    warnings without corroboration (see ``rlcockpit.health.diagnosis.evidence``), changes the run already has."""
    merged = diagnosis.get("overrides") or {}
    note = (diagnosis.get("baseline") or {}).get("note")
    held, same = merged.get("held_back") or [], merged.get("already_set") or []
    if not (note or held or same):
        return []
    lines = ["", "Too little evidence yet:" if (note or held) else "Not proposed:"]
    if note:
        lines.append(f"  {note}")
    lines += [f"  - {h['for']}: {h['text']}" for h in held]
    lines += [f"  - unchanged: {t}" for t in same]
    return lines


def format_diagnosis_text(diagnosis: dict[str, Any]) -> str:
    """The terminal report printed by ``rlcockpit diagnose``."""
    run = diagnosis.get("run") or {}
    counts = diagnosis.get("counts") or {}
    lines = [f"Run {run.get('name') or run.get('id')} ({run.get('id')}, project {run.get('project')}, status {run.get('status')})",
             f"Findings: {counts.get('critical', 0)} critical, {counts.get('warning', 0)} warning, {counts.get('info', 0)} info"]
    if run.get("stop_reason") and run.get("stop_kind") != "finished":
        lines.insert(1, f"Stopped ({run.get('stop_kind') or 'reason'}): {run['stop_reason']}")
    rc = diagnosis.get("root_cause")
    if rc:
        lines += ["", f"ROOT CAUSE: {rc['title']}"]
        for i, link in enumerate(rc["chain"], 1):
            prefix = "  " + ("-> " if i > 1 else "   ")
            lines.append(f"{prefix}{link['text']}")
        lines += ["", f"Why: {rc['explanation']}", "", "Fix:"]
        for a in rc["actions"]:
            lines.append(f"  - {a['title']}" + (f" (for {a['for']})" if a.get("for") else ""))
            if a.get("evidence"):
                lines.append(f"      ranked by: {a['evidence']}")
            if a.get("overrides"):
                lines.append(f"      {' '.join(a['overrides'])}")
            if a.get("verl_overrides") and a["verl_overrides"] != a.get("overrides"):
                lines.append(f"      verl: {' '.join(a['verl_overrides'])}")
    else:
        lines += ["", "No critical problem found."]
    lines += format_overrides_text(diagnosis.get("overrides"))
    lines += format_held_back_text(diagnosis)
    shown = [f for f in diagnosis.get("findings", []) if f["severity"] != "info"]
    if shown:
        lines += ["", "All warnings and criticals:"]
        for f in shown:
            lines.append(f"  [{f['severity']:>8}] step {f['step']:>6}  {f['detector']}: {f['title']}")
            if f.get("causes") and not rc:  # no root-cause chain explains it: its most likely cause
                lines.append(f"{'':>29}likely: {f['causes'][0]['title']}")
    return "\n".join(lines)


def _series(store: Any, run_id: str, key: str, diagnosis: dict[str, Any]) -> tuple[list[float], list[float]]:
    from rlcockpit.metrics.guide import canonical_name

    if store is not None:  # the key as stored, or the name the run logged it under (``kl`` for actor/kl_loss)
        names = [key] + [raw for raw in store.keys(run_id) if raw != key and canonical_name(raw) == key]
        for name in names:
            try:
                steps, values, _ts = store.series(run_id, name, max_points=600)
                return [float(s) for s in steps], [float(v) for v in values]
            except KeyError:
                continue

    for f in diagnosis.get("findings", []):  # fall back to the points kept in the evidence (logged names)
        for name, pts in ((f.get("evidence") or {}).get("metrics") or {}).items():
            if pts and (name == key or canonical_name(name) == key):
                return [p[0] for p in pts], [float(p[1]) if not isinstance(p[1], str) else math.nan for p in pts]
    return [], []


def svg_plot(key: str, steps: list[float], values: list[float], marks: list[tuple[float, str]]) -> str:
    """A line plot of one metric with vertical markers at ``marks`` (step, label)."""
    pts = [(s, v) for s, v in zip(steps, values) if isinstance(v, float) and math.isfinite(v)]
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_W}" height="{PLOT_H}" role="img" aria-label="{_e(key)}">'
    if not pts:
        return head + f'<text x="10" y="20">{_e(key)}: no finite values</text></svg>'
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs + [m[0] for m in marks]), max(xs + [m[0] for m in marks])
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1, y0 = y0 + abs(y0) * 0.1 + 1e-9, y0 - abs(y0) * 0.1 - 1e-9

    def sx(x: float) -> float:
        return PAD + (x - x0) / (x1 - x0) * (PLOT_W - 2 * PAD)

    def sy(y: float) -> float:
        return PLOT_H - 20 - (y - y0) / (y1 - y0) * (PLOT_H - 40)

    poly = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    parts = [head, f'<rect x="0" y="0" width="{PLOT_W}" height="{PLOT_H}" fill="#fff" stroke="#ddd"/>',
             f'<text x="{PAD}" y="14" font-size="12" font-weight="bold">{_e(key)}</text>',
             f'<text x="2" y="{sy(y1) + 4:.1f}" font-size="10">{_e(_num(y1))}</text>',
             f'<text x="2" y="{sy(y0) + 4:.1f}" font-size="10">{_e(_num(y0))}</text>',
             f'<text x="{PAD}" y="{PLOT_H - 4}" font-size="10">step {_e(int(x0))}</text>',
             f'<text x="{PLOT_W - PAD - 60}" y="{PLOT_H - 4}" font-size="10">step {_e(int(x1))}</text>',
             f'<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="{poly}"/>']
    for step, label in marks:
        x = sx(step)
        parts.append(f'<line x1="{x:.1f}" y1="18" x2="{x:.1f}" y2="{PLOT_H - 18}" stroke="#d73a49" stroke-dasharray="4,3"/>')
        parts.append(f'<text x="{x + 3:.1f}" y="28" font-size="10" fill="#d73a49">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


_CSS = """body{font-family:system-ui,sans-serif;margin:24px;max-width:1000px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}.critical{color:#b31d28}.warning{color:#b08800}.info{color:#555}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:4px 6px;font-size:13px;text-align:left;vertical-align:top}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;word-break:break-all;font-size:12px}
ol.chain li{margin:6px 0}code{background:#f6f8fa;padding:1px 4px}"""


def render_html_report(diagnosis: dict[str, Any], store: Any = None, run_id: str | None = None) -> str:
    """A self-contained HTML report of ``diagnosis`` (from ``diagnose_run``); plots read ``store`` when given."""
    run = diagnosis.get("run") or {}
    run_id = run_id or run.get("id")
    rc = diagnosis.get("root_cause")
    findings = diagnosis.get("findings", [])
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\">",
           f"<title>rlcockpit diagnosis — {_e(run.get('name') or run_id)}</title><style>{_CSS}</style></head><body>",
           f"<h1>Diagnosis of run {_e(run.get('name') or run_id)}</h1>",
           f"<p>id <code>{_e(run_id)}</code> · project {_e(run.get('project'))} · status {_e(run.get('status'))}</p>"]
    keys: list[str] = []
    marks: list[tuple[float, str]] = []
    if rc:
        out.append(f'<h2 class="critical">Root cause: {_e(rc["title"])}</h2><ol class="chain">')
        for link in rc["chain"]:
            out.append(f"<li><b>{_e(link['role'])}</b>: {_e(link['text'])}")
            for s in link.get("samples") or []:
                out.append(f"<pre>{_e(_sample_heading(link.get('step'), s))}\n{_e(s.get('response'))}</pre>")
            out.append("</li>")
            if link.get("metric") and link["metric"] not in keys:
                keys.append(link["metric"])
        out.append(f"</ol><p><b>Why:</b> {_e(rc['explanation'])}</p><h2>What to change</h2><ul>")
        for a in rc["actions"]:
            out.append(f"<li>{_e(a['title'])}")
            if a.get("overrides"):
                out.append(f"<pre>{_e(' '.join(a['overrides']))}</pre>")
            if a.get("verl_overrides") and a["verl_overrides"] != a.get("overrides"):
                out.append(f"<pre>verl: {_e(' '.join(a['verl_overrides']))}</pre>")
            out.append("</li>")
        out.append("</ul>")
        if rc.get("step") is not None:
            marks.append((float(rc["step"]), "event"))
    else:
        out.append("<h2>No critical problem found</h2>")
    note = (diagnosis.get("baseline") or {}).get("note")
    if note:  # too short to judge against itself: the per-finding fixes below are not proposed yet
        out.append(f"<p><b>Too little evidence yet:</b> {_e(note)}</p>")
    for f in findings:
        if f["severity"] == "critical" and f.get("metric") and f["metric"] not in keys:
            keys.append(f["metric"])
    if keys:
        out.append("<h2>Metrics around the event</h2>")
        for key in keys[:MAX_PLOTS]:
            steps, values = _series(store, run_id, key, diagnosis)
            out.append(f"<div>{svg_plot(key, steps, values, marks)}</div>")
    out.append("<h2>All findings</h2><table><tr><th>step</th><th>severity</th><th>detector</th><th>finding</th>"
               "<th>top cause</th><th>fix</th></tr>")
    for f in findings:
        cause = f["causes"][0]["title"] if f.get("causes") else ""
        fix = " ".join(f["actions"][0]["overrides"]) if f.get("actions") else ""
        out.append(f'<tr><td>{_e(f["step_start"])}–{_e(f["step"])}</td><td class="{_e(f["severity"])}">{_e(f["severity"])}</td>'
                   f"<td>{_e(f['detector'])}</td><td>{_e(f['title'])}</td><td>{_e(cause)}</td><td><code>{_e(fix)}</code></td></tr>")
    out.append("</table><p style=\"color:#888;font-size:12px\">Generated by rlcockpit diagnose.</p></body></html>")
    return "\n".join(out)


def _sample_heading(step: Any, sample: dict[str, Any]) -> str:
    """"step 120 · sample #7 · reward 0.6": the step the finding saw it at, and the reward as the charts round it
    (a float32 reward read back is 0.6000000238418579)."""
    parts = [f"step {step}"] if step is not None else []
    parts.append(f"sample #{sample.get('idx')}")
    reward = sample.get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        parts.append(f"reward {fmt(float(reward))}")
    elif reward is not None:
        parts.append(f"reward {reward}")
    return " · ".join(parts)

