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
from dataclasses import asdict
from typing import Any

from rlcockpit.health.advice import config_causes
from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.findings import Finding, severity_rank
from rlcockpit.health.monitor import HealthMonitor
from rlcockpit.health.reviews import reviewer_findings

# story -> (detectors that are the visible outcome, mechanisms, sample evidence, config cause ids, explanation)
STORIES: dict[str, dict[str, Any]] = {
    "collapse": {
        "title": "Policy collapse",
        "outcome": ("reward_cliff",), "mechanism": ("kl_spike", "kl_rising", "update_size", "entropy_explosion"),
        "config": ("kl", "lr", "warmup", "clip", "epochs"),
        "explain": "the policy moved too far from the reference in one go{because}; its outputs degenerated and the "
                   "reward collapsed",
    },
    "hacking": {
        "title": "Reward hacking",
        "outcome": ("reward_hacking",), "mechanism": ("length_explosion", "truncation", "kl_rising", "entropy_collapse"),
        "config": ("kl", "entropy_coeff"),
        "explain": "the reward kept rising while the outputs got worse{because}: the policy learned to exploit the "
                   "reward function instead of solving the task",
    },
    "entropy": {
        "title": "Entropy collapse",
        "outcome": ("entropy_collapse",), "mechanism": ("reward_variance_collapse", "reward_stagnation", "kl_rising"),
        "config": ("entropy_coeff", "temperature", "lr", "kl"),
        "explain": "the policy became nearly deterministic{because}; with identical samples per prompt the "
                   "advantages vanish and learning stalls",
    },
    "divergence": {
        "title": "Optimisation diverged",
        "outcome": ("nonfinite", "loss_spike", "value_divergence", "loss_oscillation"), "mechanism": ("grad_spike",),
        "config": ("lr", "warmup", "grad_clip"),
        "explain": "the optimiser took steps too large for the loss surface{because} and the loss blew up",
    },
    "memory": {
        "title": "Out-of-memory risk",
        "outcome": ("gpu_memory", "memory_growth", "host_memory"), "mechanism": (), "config": ("ckpt",),
        "explain": "memory use grew towards the device limit{because}",
    },
    "speed": {
        "title": "Training slowed down",
        "outcome": ("throughput_drop", "gpu_utilization"), "mechanism": ("bottleneck",), "config": (),
        "explain": "the GPU is waiting on another stage of the step{because}",
    },
    "mismatch": {
        "title": "Rollout/trainer mismatch",
        "outcome": ("rollout_mismatch",), "mechanism": (), "config": (),
        "explain": "the rollout engine's log-probs no longer match the trainer's, so importance ratios are wrong"
                   "{because}",
    },
    "other": {"title": "Training problem", "outcome": (), "mechanism": (), "config": ("lr", "kl", "warmup"),
              "explain": "{because}"},
}
SAMPLE_DETECTORS = ("sample_degeneration",)
RELATED_WINDOW = 15  # steps around the anchor in which other findings count as the same event


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


def replay_run(store: Any, run_id: str, settings: Mapping[str, Any] | None = None) -> list[Finding]:
    """Every finding the live monitor would have raised on the stored run ``run_id``."""
    run, metrics, samples = load_run(store, run_id)
    return replay(HealthMonitor(settings, run.get("config") or {}), metrics, samples)


def _finding_id(f: Finding) -> str:
    return f.id or f"{f.detector}@{f.step}"


def _story_of(detector: str) -> str:
    for name, story in STORIES.items():
        if detector in story["outcome"] or detector in story["mechanism"]:
            return name
    return "collapse" if detector in SAMPLE_DETECTORS else "other"


def _link(f: Finding, text: str, role: str) -> dict[str, Any]:
    return {"role": role, "finding_id": _finding_id(f), "detector": f.detector, "severity": f.severity,
            "step": f.step, "step_start": f.step_start, "text": text, "metric": f.metric,
            "values": f.evidence.get("values", {}), "samples": f.evidence.get("samples", [])[:3]}


def root_cause(findings: list[Finding], view: RunConfigView) -> dict[str, Any] | None:
    """Link ``findings`` into one root-cause chain, or ``None`` when nothing critical happened."""
    critical = [f for f in findings if f.severity == "critical"]
    if not critical:
        return None
    # the event: the earliest critical finding; an outcome detector beats a mechanism at the same step
    def order(f: Finding) -> tuple[int, int]:
        return (f.step_start or f.step, 0 if any(f.detector in s["outcome"] for s in STORIES.values()) else 1)

    anchor = min(critical, key=order)
    story_name = _story_of(anchor.detector)
    story = STORIES[story_name]
    lo, hi = (anchor.step_start or anchor.step) - RELATED_WINDOW, anchor.step + RELATED_WINDOW
    near = [f for f in findings if severity_rank(f.severity) >= 1 and lo <= f.step <= hi + RELATED_WINDOW and f is not anchor]

    def best(detectors: tuple[str, ...]) -> Finding | None:
        cands = [f for f in near if f.detector in detectors]
        return max(cands, key=lambda f: (severity_rank(f.severity), -f.step)) if cands else None

    chain = []
    outcome = anchor if anchor.detector in story["outcome"] else best(story["outcome"]) or anchor
    chain.append(_link(outcome, f"{outcome.title} (step {outcome.step_start})", "outcome"))
    seen = {id(outcome)}
    for det in story["mechanism"]:
        f = best((det,))
        if f is not None and id(f) not in seen:
            seen.add(id(f))
            chain.append(_link(f, f"{f.title} (step {f.step_start})", "mechanism"))
    sample_f = best(SAMPLE_DETECTORS)
    if sample_f is None and id(anchor) not in seen and anchor.detector in SAMPLE_DETECTORS:
        sample_f = anchor
    if sample_f is not None and id(sample_f) not in seen:
        seen.add(id(sample_f))
        excerpts = [s.get("response", "") for s in sample_f.evidence.get("samples", [])[:2]]
        text = f"Samples from step {sample_f.step}: {sample_f.title}" + (
            " — e.g. " + " | ".join(repr(e[:60]) for e in excerpts) if excerpts else "")
        chain.append(_link(sample_f, text, "samples"))
    if id(anchor) not in seen:
        chain.insert(1, _link(anchor, f"{anchor.title} (step {anchor.step_start})", "mechanism"))
    causes = config_causes(view)
    picked = [causes[c] for c in story["config"] if c in causes]
    for c in picked:
        chain.append({"role": "config", "finding_id": None, "detector": None, "severity": None, "step": None,
                      "step_start": None, "text": c.title + (f" ({c.evidence})" if c.evidence else ""), "values": {},
                      "samples": []})
    because = f" because {picked[0].title}" + (f" ({picked[0].evidence})" if picked[0].evidence else "") if picked else (
        f" ({outcome.causes[0].title})" if outcome.causes else "")
    explanation = story["explain"].format(because=because).strip()
    explanation = explanation[0].upper() + explanation[1:] + "." if explanation else anchor.title
    actions, seen_titles = [], set()
    for f in [anchor, outcome] + [f for f in near if f.severity == "critical"]:
        for a in f.actions:
            if a.title not in seen_titles:
                seen_titles.add(a.title)
                actions.append(asdict(a))
    return {"title": f"{story['title']} at step {outcome.step_start}", "story": story_name, "step": outcome.step_start,
            "chain": chain, "explanation": explanation, "actions": actions[:4]}


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/Inf become strings (json.dumps would write invalid JSON)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def diagnose_findings(findings: list[Finding], run_config: Mapping[str, Any] | None, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The diagnosis dict for already computed ``findings`` (see :func:`diagnose_run`)."""
    for f in findings:
        f.id = _finding_id(f)
    view = RunConfigView(run_config)
    run_info = {k: (run or {}).get(k) for k in ("id", "name", "project", "group", "tags", "status", "created_at",
                                                 "finished_at", "last_step", "exit_code")}
    summary = (run or {}).get("summary") or {}
    run_info["stop_reason"] = summary.get("stop_reason") or ((run or {}).get("meta") or {}).get("end_reason")
    run_info["stop_kind"] = summary.get("stop_kind")
    counts = {sev: sum(1 for f in findings if f.severity == sev) for sev in ("critical", "warning", "info")}
    return _clean({"run": run_info, "counts": counts, "findings": [f.to_dict() for f in findings],
                   "root_cause": root_cause(findings, view)})


def diagnose_run(store: Any, run_id: str, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Replay the stored run ``run_id`` (id, unique name or id prefix) and diagnose it.

    Returns ``{"run": {...}, "counts": {...}, "findings": [finding dicts with "id"], "root_cause": {"title",
    "story", "step", "chain": [{"role", "finding_id", "detector", "step", "text", "values", "samples"}],
    "explanation", "actions": [...]} | None}``. ``root_cause`` is ``None`` unless something critical happened.
    """
    run, metrics, samples = load_run(store, run_id)
    findings = replay(HealthMonitor(settings, run.get("config") or {}), metrics, samples)
    findings += reviewer_findings(store, run["id"])  # samples people rated reward-hacked (health/reviews.py)
    return diagnose_findings(findings, run.get("config") or {}, run)
