"""Routes about runs: the runs list (filters, config columns), projects, one run's detail, findings, events.

Every handler is a plain ``def``: FastAPI runs it in its worker pool, so a slow store read never
blocks the event loop that serves the live streams. Handlers return :class:`~rlcockpit.ui.params.JSON`.
The caller's :class:`~rlcockpit.ui.security.Principal` restricts what is visible (``projects``), so a
team server can reuse these routes with per-user projects.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from rlcockpit.ui import analysis
from rlcockpit.ui.i18n import localize_finding
from rlcockpit.ui.params import JSON, ApiError, Cockpit, LangQ, cockpit, run_or_404, split_list
from rlcockpit.ui.runfilter import MISSING, RUN_FIELDS, FilterError, RunView, compile_filter
from rlcockpit.version import __version__

router = APIRouter(prefix="/api", tags=["runs"])
Ctx = Annotated[Cockpit, Depends(cockpit)]
MAX_COLUMNS = 40
MAX_FIELDS = 5000


def visible_projects(request: Request) -> tuple[str, ...] | None:
    principal = getattr(request.state, "principal", None)
    return getattr(principal, "projects", None)


def visible_run(ctx: Cockpit, request: Request, run_id: str) -> dict[str, Any]:
    """The run, or 404 when it does not exist or the caller may not see its project."""
    run = run_or_404(ctx, run_id)
    allowed = visible_projects(request)
    if allowed is not None and run["project"] not in allowed:
        raise ApiError(404, f"no run {run_id!r}")
    return run


def run_row(run: dict[str, Any], counts: dict[str, int], columns: list[str]) -> dict[str, Any]:
    """A run as one line of the runs list: fixed fields, key metrics, finding counts, chosen columns."""
    metrics = analysis.key_metrics(run.get("summary") or {})
    row = {
        "id": run["id"], "name": run["name"], "project": run["project"], "group": run.get("group"),
        "tags": run.get("tags") or [], "status": run["status"], "created_at": run.get("created_at"),
        "updated_at": run.get("updated_at"), "heartbeat_at": run.get("heartbeat_at"),
        "finished_at": run.get("finished_at"), "last_step": run.get("last_step"),
        "exit_code": run.get("exit_code"), "metrics": metrics, "findings": counts,
        "data_lost": run.get("data_lost") or 0,
    }
    if columns:
        view = RunView(run, metrics)
        row["cols"] = {c: (None if (v := view.lookup(c)) is MISSING else _cell(v)) for c in columns}
    return row


def _summary_only(name: str) -> bool:
    """A filter/column name that never needs the config (run fields, metric columns, summary keys)."""
    return name in RUN_FIELDS or name in analysis.KEY_METRICS or name.startswith("summary.")


def _cell(v: Any) -> Any:
    """Table cells stay small: long lists/dicts become their JSON text cut to 200 characters."""
    if isinstance(v, (dict, list)):
        import json

        text = json.dumps(v, default=str)
        return text if len(text) <= 200 else text[:199] + "…"
    return v


@router.get("/health", summary="Server liveness and version")
def health(ctx: Ctx) -> JSON:
    return JSON({"ok": True, "version": __version__, "store": str(getattr(ctx.store, "dir", ""))})


@router.get("/projects", summary="Projects in the store with run counts")
def projects(ctx: Ctx, request: Request) -> JSON:
    allowed = visible_projects(request)
    counts: dict[str, int] = {}
    for r in ctx.store.list_runs(fields=()):
        if allowed is None or r["project"] in allowed:
            counts[r["project"]] = counts.get(r["project"], 0) + 1
    return JSON({"projects": [{"name": k, "runs": v} for k, v in sorted(counts.items())]})


@router.get("/runs", summary="Runs (newest first) with key metrics, finding counts and chosen columns")
def list_runs(
    ctx: Ctx, request: Request,
    project: Annotated[str | None, Query(description="only runs of this project")] = None,
    q: Annotated[str | None, Query(description="substring of id, name, group or tags")] = None,
    status: Annotated[str | None, Query(description="running, finished, failed or crashed")] = None,
    group: Annotated[str | None, Query(description="only runs of this group")] = None,
    tag: Annotated[str | None, Query(description="only runs carrying this tag")] = None,
    filter: Annotated[str | None, Query(description='expression on run fields, config and summary, e.g. '
                                        'actor_rollout_ref.actor.optim.lr < 1e-5 and status == "finished"')] = None,
    columns: Annotated[list[str] | None, Query(description="comma-separated config paths / summary keys "
                                               "to return per run under `cols`")] = None,
) -> JSON:
    cols = split_list(columns)
    if len(cols) > MAX_COLUMNS:
        raise ApiError(400, f"at most {MAX_COLUMNS} columns, got {len(cols)}")
    try:
        predicate, names = compile_filter(filter or "")
    except FilterError as exc:
        raise ApiError(400, str(exc)) from None
    allowed = visible_projects(request)
    wanted = {"tags", "summary"}
    if any(not _summary_only(n) for n in (*names, *cols)):
        wanted.add("config")
    if any(n.startswith("meta.") for n in (*names, *cols)):
        wanted.add("meta")
    runs = [r for r in ctx.store.list_runs(project or None, fields=wanted) if allowed is None or r["project"] in allowed]
    counts = ctx.store.finding_counts([r["id"] for r in runs])
    text = (q or "").strip().lower()
    rows, seen_names = [], set()
    for r in runs:
        if (status and r["status"] != status) or (group and r.get("group") != group) or \
                (tag and tag not in (r.get("tags") or [])):
            continue
        if text and text not in " ".join([r["id"], r["name"], r.get("group") or "", *(r.get("tags") or [])]).lower():
            continue
        if names:
            view = RunView(r, analysis.key_metrics(r.get("summary") or {}))
            seen_names.update(n for n in names if view.lookup(n) is not MISSING)
            if not predicate(view):
                continue
        rows.append(run_row(r, counts.get(r["id"]) or analysis.finding_counts([]), cols))
    unknown = sorted(n for n in names if n not in seen_names and runs)
    return JSON({"runs": rows, "total": len(runs), "metric_columns": list(analysis.KEY_METRICS),
                 "columns": cols, "unknown_names": unknown, "now": time.time()})


@router.get("/runs/fields", summary="Config paths and summary keys present in the runs (for column pickers)")
def run_fields(ctx: Ctx, request: Request,
               project: Annotated[str | None, Query(description="only runs of this project")] = None) -> JSON:
    allowed = visible_projects(request)
    config: dict[str, int] = {}
    summary: dict[str, int] = {}
    for r in ctx.store.list_runs(project or None, fields=("config", "summary")):
        if allowed is not None and r["project"] not in allowed:
            continue
        for k in analysis.flatten(r.get("config") or {}):
            config[k] = config.get(k, 0) + 1
        for k in analysis.summary_fields(r.get("summary") or {}):
            summary[k] = summary.get(k, 0) + 1
    return JSON({"config": sorted(config)[:MAX_FIELDS], "summary": sorted(summary)[:MAX_FIELDS],
                 "counts": {"config": config if len(config) <= MAX_FIELDS else {}, "summary": {}}})


@router.get("/runs/{run}", summary="Run detail: config, meta, summary, metric sections, findings, events, "
                                   "sample steps, data-loss records")
def get_run(ctx: Ctx, request: Request, run: str, lang: LangQ = "en") -> JSON:
    return JSON(run_detail(ctx, visible_run(ctx, request, run), lang))


def run_detail(ctx: Cockpit, run: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """Everything the run page needs except metric points (also sent again by the live stream); the findings'
    texts in ``lang``."""
    rid = run["id"]
    keys = ctx.store.keys(rid)
    findings = ctx.store.findings(rid)
    for f in findings:
        f["cites"] = analysis.cited_keys(f, keys)
    findings = [localize_finding(f, lang) for f in analysis.clean_json(findings)]
    events = ctx.store.events(rid)
    return analysis.clean_json({
        "run": {k: run.get(k) for k in (
            "id", "name", "project", "group", "tags", "status", "stored_status", "config", "summary", "meta",
            "notes", "created_at", "updated_at", "heartbeat_at", "finished_at", "exit_code", "last_step")},
        "keys": keys,
        "groups": analysis.group_keys(keys),
        "findings": findings,
        "finding_counts": analysis.finding_counts(findings),
        "events": events,
        "data_lost": [e for e in events if e.get("kind") == "data_lost"],
        "sample_steps": ctx.store.sample_steps(rid),
        "reward_key": analysis.find_key(keys, analysis.REWARD_KEYS),
        "kl_key": analysis.find_key(keys, analysis.KL_KEYS),
        "now": time.time(),
    })


@router.get("/runs/{run}/findings", summary="Stored findings of the run")
def get_findings(ctx: Ctx, request: Request, run: str, lang: LangQ = "en") -> JSON:
    r = visible_run(ctx, request, run)
    return JSON({"findings": [localize_finding(f, lang) for f in analysis.clean_json(ctx.store.findings(r["id"]))]})


@router.get("/runs/{run}/events", summary="Events (guardrail interventions, alerts, data_lost...)")
def get_events(ctx: Ctx, request: Request, run: str,
               kind: Annotated[str | None, Query(description="only events of this kind, e.g. guardrail")] = None) -> JSON:
    r = visible_run(ctx, request, run)
    return JSON({"events": ctx.store.events(r["id"], kind or None)})
