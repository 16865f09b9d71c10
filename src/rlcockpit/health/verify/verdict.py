"""``rlcockpit diagnose RUN --verify``: test the proposed fix by rerunning the failure.

A diagnosis names a root cause and ranks fixes; this module checks the fix it prints to paste works. From the last checkpoint
at least :data:`FIX_LEAD` steps before the root-cause finding's onset (or the run's start, same seed, when there is none) it runs two short
branches with the same seeds: the run unchanged, and the run with the fix's overrides, each K steps past the onset.
Each branch is replayed through the same detectors as ``diagnose`` (the parent's steps up to the branch point
first, so the detectors see the history the branch grew from) and the verdict per finding is one of
:data:`VERDICTS`. The first try is the merged override line a user pastes; when it is not confirmed the root
cause's ranked actions are tried one by one, up to ``tries`` in all.

Branches are ordinary runs of rlcockpit's trainer in the same store, launched as subprocesses (a crash of one never
kills the verifier): group = the parent's id, config ``trainer.branch_of`` = the parent's id, tags
``verify:unchanged`` / ``verify:fix<N>``. Launching and budgeting live in :mod:`rlcockpit.health.verify.branches`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcockpit.health.config_view import detect_framework
from rlcockpit.health.diagnosis.diagnose import load_run, replay
from rlcockpit.health.findings import Finding, severity_rank
from rlcockpit.health.monitor import HealthMonitor

CONFIRMED, NOT_CONFIRMED, DID_NOT_REPRODUCE = "fix confirmed", "fix not confirmed", "failure did not reproduce"
VERDICTS = (CONFIRMED, NOT_CONFIRMED, DID_NOT_REPRODUCE)
# A detector fires once its metric is far from the baseline; the drift starts steps earlier, and a checkpoint saved
# during it already holds the failing policy (arith-hacking: answers 4.0 tokens at step 5, 9.8 at the step-10
# checkpoint, truncation fired at 12, and a fix branched at 10 could not stop it). A branch starts at least this
# many steps before the onset, so the fix gets updates before the failure shows.
FIX_LEAD = 3
MIN_STEPS, MAX_STEPS = 8, 40  # steps past the onset: 2x the onset's distance from the branch point, in these bounds
REWARD = "critic/score/mean"


@dataclass
class Plan:
    """What to rerun: the parent, the finding under test, the branch point and end, and the candidate fixes."""

    run_id: str
    run_name: str
    config: dict[str, Any]
    finding: dict[str, Any]  # the root-cause finding: detector, step, title, finding_id
    onset: int
    start_step: int  # 0: from the run's start (no checkpoint before the onset)
    checkpoint: str | None
    end_step: int
    steps_past_onset: int
    actions: list[dict[str, Any]]  # the root cause's ranked actions that change something
    watched: list[dict[str, Any]] = field(default_factory=list)  # the event's findings: detector, severity, step


def onset_of(diagnosis: Mapping[str, Any]) -> tuple[dict[str, Any], int] | None:
    """(root-cause finding, its onset step) of a diagnosis, or ``None`` when nothing critical happened."""
    rc = diagnosis.get("root_cause")
    if not rc:
        return None
    return dict(rc["root"]), int(rc["root"]["step"])


def checkpoint_before(store: Any, run_id: str, onset: int) -> tuple[int, str | None]:
    """(step, path) of the run's newest checkpoint still on disk at least :data:`FIX_LEAD` steps before ``onset``
    (one at the onset already holds the failed update; one just before it, the drift that led there), else
    (0, None): the branch starts from the run's start."""
    best: tuple[int, str | None] = (0, None)
    for e in store.events(run_id, "checkpoint"):
        payload = e.get("payload") or {}
        step, path = payload.get("step", e.get("step")), payload.get("path")
        if (isinstance(step, int) and path and 0 < step <= onset - FIX_LEAD
                and (Path(path) / "trainer_state.pt").is_file()):
            best = max(best, (step, str(path)), key=lambda t: t[0])
    return best


def steps_past_onset(onset: int, start: int, steps: int | None = None) -> int:
    """K: ``steps`` when given, else 2x the onset's distance from the branch point, within [MIN_STEPS, MAX_STEPS]."""
    if steps is not None:
        if steps < 1:
            raise ValueError(f"--steps must be >= 1, got {steps}")
        return steps
    return max(MIN_STEPS, min(MAX_STEPS, 2 * (onset - start)))


def candidate_actions(diagnosis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fixes to try, in order: first the one override line ``diagnose`` prints to paste ("Overrides to
    apply": every action's changes merged, one value per key), since that is what a user tries; then the root
    cause's ranked actions that still change something (an action whose every change was dropped as a no-op or
    already set has nothing to test), each on its own, skipping one that is the pasted line again."""
    pasted = list((diagnosis.get("overrides") or {}).get("apply") or [])
    found = [{"title": "the printed overrides to apply (the actions merged)", "overrides": pasted}] if pasted else []
    for a in (diagnosis.get("root_cause") or {}).get("actions") or []:
        overrides = list(a.get("overrides") or [])
        if overrides and sorted(overrides) != sorted(pasted):
            found.append({"title": a.get("title", ""), "overrides": overrides})
    return [{"rank": i + 1, **c} for i, c in enumerate(found)]


def watched_findings(diagnosis: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The root-cause event's findings (its chain links that name a detector): what a branch may reproduce."""
    chain = (diagnosis.get("root_cause") or {}).get("chain") or []
    return [{"detector": c["detector"], "severity": c["severity"], "step": c["step_start"]}
            for c in chain if c.get("detector")]


def make_plan(store: Any, run_id: str, diagnosis: Mapping[str, Any], steps: int | None = None, *,
              external: bool = False) -> Plan:
    """The verification plan for ``run_id``; ``ValueError`` naming why when there is nothing to verify.
    ``external``: a verl/TRL run, which is not rerun here (its checkpoints are not rlcockpit's)."""
    run = store.get_run(run_id)
    config = dict(run.get("config") or {})
    if not external and (framework := detect_framework(config)) != "rlcockpit":
        raise ValueError(f"run {run['id']} was trained by {framework}, not rlcockpit's trainer: "
                         "rerun it there (diagnose --verify prints the resume command)")
    found = onset_of(diagnosis)
    if found is None:
        raise ValueError(f"run {run['id']}: the diagnosis has no critical finding, so there is no failure to verify")
    finding, onset = found
    start, path = (0, None) if external else checkpoint_before(store, run["id"], onset)
    k = steps_past_onset(onset, start, steps)
    return Plan(run_id=run["id"], run_name=run.get("name") or run["id"], config=config, finding=finding,
                onset=onset, start_step=start, checkpoint=path, end_step=onset + k, steps_past_onset=k,
                actions=candidate_actions(diagnosis), watched=watched_findings(diagnosis))


# ---- replaying a branch --------------------------------------------------------------------------------

def branch_findings(store: Any, parent_id: str, branch_id: str, start: int) -> list[Finding]:
    """Findings of a branch replayed through the live detectors, after the parent's steps up to ``start``
    (the history the branch continues); only those that start after the branch point are the branch's."""
    _p, p_metrics, p_samples = load_run(store, parent_id)
    branch, b_metrics, b_samples = load_run(store, branch_id)
    metrics = {s: m for s, m in p_metrics.items() if s <= start} | {s: m for s, m in b_metrics.items() if s > start}
    samples = {s: r for s, r in p_samples.items() if s <= start} | {s: r for s, r in b_samples.items() if s > start}
    found = replay(HealthMonitor(None, branch.get("config") or {}), metrics, samples)
    return [f for f in found if (f.step_start or f.step) > start]


def reproduces(findings: list[Finding], watched: Mapping[str, Any]) -> bool:
    """Whether ``findings`` hold the watched finding again: same detector, at least its severity."""
    need = severity_rank(watched.get("severity") or "warning")
    return any(f.detector == watched["detector"] and severity_rank(f.severity) >= need for f in findings)


def headline(store: Any, run_id: str) -> tuple[str, float | None]:
    """(metric, value): the last validation accuracy the run logged, else its mean reward over its last 3 steps."""
    keys = store.keys(run_id)
    val = sorted(k for k in keys if k.startswith("val-core/") and "/acc/" in k)
    if val:
        _steps, values, _ts = store.series(run_id, val[0])
        return val[0], (float(values[-1]) if len(values) else None)
    if REWARD in keys:
        _steps, values, _ts = store.series(run_id, REWARD)
        tail = [float(v) for v in values[-3:]]
        return REWARD, (sum(tail) / len(tail) if tail else None)
    return REWARD, None


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def judge(plan: Plan, unchanged: list[list[Finding]], fixed: list[list[Finding]]) -> tuple[str, list[dict[str, Any]]]:
    """(verdict, per-finding rows) for one fix: each branch's findings per seed that ran. The root-cause finding
    must reproduce in an unchanged branch, and every event finding an unchanged branch reproduced must be avoided
    by every fixed branch, for *fix confirmed*."""
    rows = []
    for w in plan.watched:
        rep = [reproduces(f, w) for f in unchanged]
        avoid = [not reproduces(f, w) for f in fixed]
        rows.append({**w, "reproduced": sum(rep), "unchanged_runs": len(rep), "avoided": sum(avoid),
                     "fixed_runs": len(avoid)})
    root = next((r for r in rows if r["detector"] == plan.finding["detector"]), None)
    if not unchanged or not fixed:
        return NOT_CONFIRMED, rows
    if root is None or root["reproduced"] == 0:
        return DID_NOT_REPRODUCE, rows
    confirmed = all(r["avoided"] == r["fixed_runs"] for r in rows if r["reproduced"] > 0)
    return (CONFIRMED if confirmed else NOT_CONFIRMED), rows


def summarise(plan: Plan, tries: list[dict[str, Any]], not_run: list[str], cpu_s: float, wall_s: float,
              budget_s: float | None, seeds: list[int], metric: str) -> dict[str, Any]:
    """The verification report (the ``--json`` schema, see docs/health.md "Verifying a fix")."""
    worked = next((t["action"]["rank"] for t in tries if t["verdict"] == CONFIRMED), None)
    if worked is not None:
        verdict = CONFIRMED
    elif any(t["verdict"] == DID_NOT_REPRODUCE for t in tries):  # the unchanged branches are every try's
        verdict = DID_NOT_REPRODUCE
    else:
        verdict = NOT_CONFIRMED
    return {"run": {"id": plan.run_id, "name": plan.run_name},
            "finding": plan.finding, "onset": plan.onset,
            "start": {"step": plan.start_step, "checkpoint": plan.checkpoint},
            "end_step": plan.end_step, "steps_past_onset": plan.steps_past_onset, "seeds": seeds,
            "headline_metric": metric, "tries": tries, "verdict": verdict, "worked": worked,
            "not_run": not_run, "cpu_s": round(cpu_s, 1), "wall_s": round(wall_s, 1), "budget_s": budget_s}


def try_report(action: Mapping[str, Any], branches: list[dict[str, Any]], verdict: str,
               rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One tried fix: its action, its branches (and the unchanged ones it was compared with), the headlines."""
    head = {role: _mean([b["headline"] for b in branches if b["role"] == role and b["status"] == "finished"])
            for role in ("unchanged", "fixed")}
    return {"action": dict(action), "branches": branches, "findings": rows, "headline": head, "verdict": verdict}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def format_verify_text(report: Mapping[str, Any]) -> str:
    """The human-readable verification report."""
    f, start = report["finding"], report["start"]
    origin = f"checkpoint at step {start['step']}" if start["checkpoint"] else "the run's start (no checkpoint before the onset)"
    lines = [f"Verifying the fix for: {f['title']} ({f['detector']}, onset step {report['onset']})",
             f"  branches from {origin} to step {report['end_step']} ({report['steps_past_onset']} steps past the "
             f"onset), seeds {', '.join(map(str, report['seeds']))}; headline: {report['headline_metric']}"]
    for t in report["tries"]:
        a = t["action"]
        lines.append(f"\nTry {a['rank']}: {a['title']}\n  overrides: {' '.join(a['overrides'])}")
        for b in t["branches"]:
            state = b["status"] if b["status"] == "finished" else f"{b['status']}: {b.get('error') or ''}".rstrip(": ")
            seed = f" seed {b['seed']}" if b["seed"] is not None else ""
            lines.append(f"  {b['role']:<9}{seed}: run {b.get('run_id') or '-'} {state}, "
                         f"headline {_fmt(b['headline'])}" + (f", {b['cpu_s']:.0f} s CPU" if b["cpu_s"] else ""))
        for r in t["findings"]:
            lines.append(f"  {r['detector']} ({r['severity']}): reproduced {r['reproduced']}/{r['unchanged_runs']} "
                         f"unchanged, avoided {r['avoided']}/{r['fixed_runs']} fixed")
        h = t["headline"]
        lines.append(f"  headline unchanged {_fmt(h['unchanged'])} vs fixed {_fmt(h['fixed'])} -> {t['verdict'].upper()}")
    worked = report["worked"]
    lines.append(f"\nVerdict: {report['verdict']}" + (f" (try {worked} worked)" if worked else ""))
    for line in report["not_run"]:
        lines.append(f"  not run: {line}")
    budget = f" of a {report['budget_s']:.0f} s budget" if report["budget_s"] else ""
    if report["cpu_s"] or report["wall_s"]:
        lines.append(f"  {report['cpu_s']:.0f} s CPU{budget}, {report['wall_s']:.0f} s wall")
    return "\n".join(lines)
