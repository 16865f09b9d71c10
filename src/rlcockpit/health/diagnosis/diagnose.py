"""Post-mortem diagnosis: replay a stored run through the live detectors and link the findings into a
root-cause chain, the way the worked example in our users' guide does:

    reward fell off a cliff at step N -> KL jumped 3x at the same step -> samples after N are repetitive
    gibberish (examples) -> kl_coef=0.001 is far below the usual 0.01-0.1 -> the KL penalty was too weak and
    the policy collapsed -> set algorithm.kl_ctrl.kl_coef=0.02 ...

Replaying through :class:`HealthMonitor` (instead of re-implementing checks) is what guarantees that the live
console and ``rlcockpit diagnose`` never disagree.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from rlcockpit.health.advice import story_causes
from rlcockpit.health.base import DETECTORS, Detector, fmt
from rlcockpit.health.config_view import RunConfigView, with_framework
from rlcockpit.health.diagnosis.evidence import RELATED_WINDOW, Weighed, baseline_note, weigh
from rlcockpit.health.diagnosis.overrides import assign_to_actions, merge_overrides
from rlcockpit.health.diagnosis.reviews import reviewer_findings
from rlcockpit.health.findings import Finding, severity_rank
from rlcockpit.health.monitor import HealthMonitor
from rlcockpit.health.stories import Story, resolve_story
from rlcockpit.metrics.guide import canonical_name

LOOKBACK = 60  # steps before it in which findings of the same story count as its precursors
ROLE_ORDER = {"mechanism": 0, "outcome": 1, "samples": 2}


def replay(monitor: HealthMonitor, metrics_by_step: Mapping[int, Mapping[str, float]],
           samples_by_step: Mapping[int, list[dict[str, Any]]]) -> list[Finding]:
    """Feed a recorded run to ``monitor`` in step order (samples of a step before its metrics)."""
    for step in sorted(set(metrics_by_step) | set(samples_by_step)):
        if step in samples_by_step:
            monitor.observe_samples(step, samples_by_step[step])
        if step in metrics_by_step:
            monitor.observe(step, metrics_by_step[step])
    monitor.close()
    return monitor.findings


def load_run(store: Any, run_id: str) -> tuple[dict[str, Any], dict[int, dict[str, float]], dict[int, list[dict[str, Any]]]]:
    """(run dict, metrics by step, samples by step) read from ``store``. Per-key series keep genuine NaNs
    (a NaN loss is evidence), unlike a wide history table where NaN also means "not logged"."""
    run = store.get_run(run_id)
    rid = run["id"]
    metrics: dict[int, dict[str, float]] = defaultdict(dict)
    for key in store.keys(rid):
        steps, values, _ts = store.series(rid, key)
        for s, v in zip(steps.tolist(), values.tolist()):
            metrics[int(s)][key] = v
    samples: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in store.samples(rid):
        samples[int(row["step"])].append(row)
    return run, dict(metrics), dict(samples)


def run_config(run: Mapping[str, Any], metrics: Mapping[int, Mapping[str, float]]) -> dict[str, Any]:
    """The stored run's config, marked with the framework it came from when the config does not say (an
    imported TRL ``trainer_state.json`` stores none): advice is then written in that framework's names."""
    keys = {k for row in metrics.values() for k in row}
    return with_framework(run.get("config"), keys, run.get("meta"))


def replay_run(store: Any, run_id: str, settings: Mapping[str, Any] | None = None) -> list[Finding]:
    """Every finding the live monitor would have raised on the stored run ``run_id``."""
    run, metrics, samples = load_run(store, run_id)
    return replay(HealthMonitor(settings, run_config(run, metrics)), metrics, samples)


def _finding_id(f: Finding) -> str:
    return f.id or f"{f.detector}@{f.step}"


def _detector(name: str) -> type[Detector] | None:
    return DETECTORS.get(name) if name in DETECTORS else None


def _story(f: Finding) -> Story:
    cls = _detector(f.detector)
    return cls.story_of() if cls is not None else resolve_story("other")


def _role(f: Finding) -> str:
    cls = _detector(f.detector)
    return cls.role if cls is not None else "mechanism"


def _link(f: Finding, role: str) -> dict[str, Any]:
    cls = _detector(f.detector)
    text = cls.chain_text(f) if cls is not None else f"{f.title} (step {f.step_start})"
    return {"role": role, "finding_id": _finding_id(f), "detector": f.detector, "severity": f.severity,
            "step": f.step, "step_start": f.step_start, "text": text, "metric": f.metric,
            "values": f.evidence.get("values", {}), "samples": f.evidence.get("samples", [])[:3]}


def event_findings(findings: list[Finding]) -> tuple[Finding, list[Finding]] | None:
    """(anchor, linked findings in time order) for the run's first critical event, or ``None``. The anchor is
    the earliest critical finding (an outcome before a mechanism at the same step); linked are the warnings
    and criticals around it, and the earlier findings of the same story that led up to it — one per detector,
    its first, so the chain starts with the first failure in time."""
    critical = [f for f in findings if f.severity == "critical"]
    if not critical:
        return None
    anchor = min(critical, key=lambda f: (f.step_start, 0 if _role(f) == "outcome" else 1))
    story = _story(anchor).name
    start = anchor.step_start
    lo, hi = start - RELATED_WINDOW, anchor.step + RELATED_WINDOW
    linked: dict[str, Finding] = {}
    for f in sorted(findings, key=lambda f: (f.step_start, ROLE_ORDER.get(_role(f), 3))):
        if severity_rank(f.severity) < 1:
            continue
        near = lo <= f.step_start <= hi
        precursor = _story(f).name == story and start - LOOKBACK <= f.step_start <= start
        if (near or precursor or f is anchor) and f.detector not in linked:
            linked[f.detector] = f
    return anchor, list(linked.values())


def root_cause(findings: list[Finding], view: RunConfigView) -> dict[str, Any] | None:
    """Link ``findings`` into one root-cause chain, or ``None`` when nothing critical happened: the first
    failure in time (``root``), then what followed (mechanisms, the visible outcome, degenerate samples), then
    the config settings that commonly cause this story; the explanation; the fixes, one value per key."""
    event = event_findings(findings)
    if event is None:
        return None
    anchor, linked = event
    story = _story(anchor)
    outcome = next((f for f in linked if _role(f) == "outcome" and _story(f).name == story.name), anchor)
    root = linked[0]
    chain = [_link(f, "root" if f is root else _role(f)) for f in linked]
    picked = story_causes(view, story.config)
    for c in picked:
        chain.append({"role": "config", "finding_id": None, "detector": None, "severity": None, "step": None,
                      "step_start": None, "text": c.title + (f" ({c.evidence})" if c.evidence else ""), "values": {},
                      "samples": []})
    top = picked[0] if picked else (root.causes[0] if root.causes else None)
    because = (f" because {top.title}" + (f" ({top.evidence})" if top.evidence else "")) if top is not None else ""
    explanation = story.explain.format(because=because).strip()
    explanation = explanation[0].upper() + explanation[1:] + "." if explanation else anchor.title
    fixing = fixes_for(anchor, linked)
    merged = merge_overrides(fixing, view)
    because_of = None if top is None else {"title": top.title, "evidence": top.evidence,  # for translations
                                           "detector": None if picked else root.detector}
    return {"title": f"{story.title} at step {outcome.step_start}", "story": story.name, "step": outcome.step_start,
            "because": because_of,
            "root": {"detector": root.detector, "step": root.step_start, "title": root.title,
                     "finding_id": _finding_id(root)},
            "chain": chain, "explanation": explanation, "actions": assign_to_actions(fixing, merged, view)}


def fixes_for(anchor: Finding, linked: list[Finding]) -> list[Finding]:
    """The findings of an event whose fixes count: the first failure and those of the event's own story. The
    others around it are consequences — a collapsed policy's answers run to the length limit, but giving them
    more room fixes nothing."""
    story = _story(anchor).name
    return [f for i, f in enumerate(linked) if i == 0 or _story(f).name == story]


def priority_order(findings: list[Finding]) -> list[Finding]:
    """The order in which findings' fixes take precedence: the root-cause event's findings of its own story (in
    chain order; the event's other findings are its consequences and propose nothing), then the other
    criticals, then the warnings, each in time order (info findings propose nothing)."""
    event = event_findings(findings)
    first = fixes_for(*event) if event else []
    ids = {id(f) for f in (event[1] if event else [])}
    if event:  # the event's consequences (also their later findings within the event) propose nothing
        anchor, linked = event
        after = {f.detector for f in linked} - {f.detector for f in first}
        ids |= {id(f) for f in findings if f.detector in after and f.step_start <= anchor.step + 2 * RELATED_WINDOW}
    rest = sorted((f for f in findings if id(f) not in ids and severity_rank(f.severity) >= 1),
                  key=lambda f: (-severity_rank(f.severity), f.step_start))
    return first + rest


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/Inf become strings (json.dumps would write invalid JSON)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def headline(metrics: Mapping[int, Mapping[str, float]]) -> dict[str, Any] | None:
    """The run's headline metric, ``{"key", "first", "last"}``: its held-out accuracy (``val-core/...``) where
    logged, else its training reward; first and last are the means of its first and last three values."""
    keys = {k for row in metrics.values() for k in row}
    key = min((k for k in keys if k.startswith("val-core/")), default=None) or next(
        (k for k in sorted(keys) if canonical_name(k) == "critic/score/mean"), None)
    if key is None:
        return None
    values = [float(metrics[s][key]) for s in sorted(metrics) if key in metrics[s] and math.isfinite(metrics[s][key])]
    if len(values) < 2:
        return None
    head, tail = values[:3] if len(values) >= 6 else values[:1], values[-3:] if len(values) >= 6 else values[-1:]
    return {"key": key, "first": sum(head) / len(head), "last": sum(tail) / len(tail)}


def _improved(head: Mapping[str, Any] | None) -> bool:
    return head is not None and head["last"] - head["first"] > 0.05 * max(1.0, abs(head["first"]))


def _hold_while_improving(w: Weighed, head: Mapping[str, Any]) -> Weighed:
    """``w`` with its config changes held back when it is a warning about a mechanism (KL, update size, gradient)
    on a run whose headline metric kept improving: the outcome shows no harm yet, so the advice is to watch."""
    f = w.finding
    if f.severity != "warning" or _role(f) != "mechanism" or not any(a.changes for a in f.actions):
        return w
    held = "; ".join(a.title + (f" ({' '.join(a.overrides)})" if a.overrides else "") for a in f.actions if a.changes)
    why = (f"{head['key']} rose {fmt(head['first'])} -> {fmt(head['last'])} over the run: no harm to the outcome "
           f"yet, watch it; held back: {held}")
    return Weighed(replace(f, actions=[a for a in f.actions if not a.changes]), why + (f"; {w.held}" if w.held else ""))


def proposed_overrides(findings: list[Finding], view: RunConfigView, steps: int | None = None,
                       head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The merged override set of the diagnosis, in proportion to the evidence (see
    :mod:`rlcockpit.health.diagnosis.evidence`): the root-cause event's fixes and criticals in full, a warning's fixes one
    per corroborating finding, none from warnings on a run too short for a baseline. ``held_back`` lists what
    was left out and why."""
    event = event_findings(findings)
    trusted = fixes_for(*event) if event else []
    weighed = weigh(priority_order(findings), findings, steps, trusted)
    if event:
        own = {id(f) for f in trusted}
        weighed = [w if id(w.finding) in own else _hold_consequence(w, event[0]) for w in weighed]
    elif _improved(head):  # nothing critical and the run's outcome kept improving
        weighed = [_hold_while_improving(w, head) for w in weighed]  # type: ignore[arg-type]
    merged = merge_overrides([w.finding for w in weighed], view)
    merged["held_back"] = [{"for": f"{w.finding.detector} at step {w.finding.step_start}", "text": w.held}
                           for w in weighed if w.held]
    return merged


# stories of the policy's learning dynamics: after a critical event of one of them, a later warning of any of them
# describes the failed policy (a collapsed policy's groups all score 0), not a cause of its own
DYNAMICS_STORIES = ("collapse", "entropy", "hacking", "length", "divergence")


def _hold_consequence(w: Weighed, anchor: Finding) -> Weighed:
    """``w`` with its config changes held back when it is a warning of a learning-dynamics story raised after the
    root-cause event ``anchor``: until that event is fixed, it is a symptom (proposing more samples per prompt
    for the zero-variance groups of a collapsed policy doubles the rerun's cost and fixes nothing)."""
    f, story = w.finding, _story(anchor)
    if (f.severity != "warning" or f.step_start <= anchor.step or _story(f).name not in DYNAMICS_STORIES
            or story.name not in DYNAMICS_STORIES or not any(a.changes for a in f.actions)):
        return w
    held = "; ".join(a.title + (f" ({' '.join(a.overrides)})" if a.overrides else "") for a in f.actions if a.changes)
    why = (f"follows the {story.title.lower()} at step {anchor.step_start}: a symptom of it until that is fixed; "
           f"held back: {held}")
    return Weighed(replace(f, actions=[a for a in f.actions if not a.changes]), why + (f"; {w.held}" if w.held else ""))


def diagnose_findings(findings: list[Finding], run_config: Mapping[str, Any] | None, run: Mapping[str, Any] | None = None,
                      steps: int | None = None, head: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The diagnosis dict for already computed ``findings`` (see :func:`diagnose_run`); ``steps`` is the run's
    number of logged steps (default: the run's ``last_step``; unknown: the run counts as long enough); ``head`` its
    headline metric (:func:`headline`), by which warnings about a mechanism on a run still improving propose nothing."""
    for f in findings:
        f.id = _finding_id(f)
    view = RunConfigView(run_config)
    run_info = {k: (run or {}).get(k) for k in ("id", "name", "project", "group", "tags", "status", "created_at",
                                                 "finished_at", "last_step", "exit_code")}
    summary = (run or {}).get("summary") or {}
    run_info["stop_reason"] = summary.get("stop_reason") or ((run or {}).get("meta") or {}).get("end_reason")
    run_info["stop_kind"] = summary.get("stop_kind")
    if steps is None and isinstance(run_info["last_step"], int) and run_info["last_step"] >= 0:
        steps = run_info["last_step"]
    counts = {sev: sum(1 for f in findings if f.severity == sev) for sev in ("critical", "warning", "info")}
    note = baseline_note(steps, findings)
    return _clean({"run": run_info, "counts": counts, "findings": [f.to_dict() for f in findings],
                   "root_cause": root_cause(findings, view),
                   "baseline": {"steps": steps, "enough": note is None, "note": note},
                   "overrides": proposed_overrides(findings, view, steps, head)})


def diagnose_run(store: Any, run_id: str, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Replay the stored run ``run_id`` (id, unique name or id prefix) and diagnose it.

    Returns ``{"run": {...}, "counts": {...}, "findings": [finding dicts with "id"], "root_cause": {"title",
    "story", "step", "root": {"detector", "step", "title", "finding_id"}, "chain": [{"role", "finding_id",
    "detector", "step", "text", "values", "samples"}], "explanation", "actions": [...]} | None, "baseline":
    {"steps", "enough", "note"}, "overrides": {"vocabulary", "apply", "verl", "choices", "not_applicable",
    "already_set", "held_back": [{"for", "text"}]}}``. ``root_cause`` is ``None`` unless something critical
    happened; ``overrides`` is the one merged set to paste, in proportion to the evidence (see
    :func:`proposed_overrides`); ``baseline.note`` says when the run is too short to judge against itself.
    """
    run, metrics, samples = load_run(store, run_id)
    config = run_config(run, metrics)
    findings = replay(HealthMonitor(settings, config), metrics, samples)
    findings += reviewer_findings(store, run["id"])  # samples people rated reward-hacked (health/diagnosis/reviews.py)
    return diagnose_findings(findings, config, run, steps=len(metrics), head=headline(metrics))
