"""Routes that return metric points: one run's series, run comparison (overlays, groups, reward-vs-KL),
and the derived panels (step-phase timeline, train/rollout mismatch)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from rlcockpit.ui import analysis, grouping, panels
from rlcockpit.ui.params import (
    DEFAULT_MAX_POINTS,
    JSON,
    MAX_KEYS_PER_REQUEST,
    ApiError,
    Cockpit,
    MaxPointsQ,
    StepQ,
    clamp_points,
    cockpit,
    split_list,
)
from rlcockpit.ui.routes.runs import visible_run

router = APIRouter(prefix="/api", tags=["series"])
Ctx = Annotated[Cockpit, Depends(cockpit)]
KeysQ = Annotated[list[str] | None, Query(description="comma-separated metric keys")]
FormatQ = Annotated[Literal["json", "b64"], Query(description=(
    "json (lists; default) or b64 (steps_b64/values_b64/ts_b64: base64 little-endian float64 arrays, "
    "compact for charts)"))]
MAX_COMPARE_RUNS = 100


def series_map(ctx: Cockpit, rid: str, keys: list[str], *, start: int | None = None, end: int | None = None,
               max_points: int | None = None, binary: bool = True, with_ts: bool = True) -> dict[str, Any]:
    out = {}
    for key in keys:
        steps, vals, ts = ctx.store.series(rid, key, start_step=start, end_step=end, max_points=max_points,
                                           with_ts=with_ts)
        out[key] = analysis.series_payload(steps, vals, ts, binary=binary, with_ts=with_ts)
    return out


@router.get("/runs/{run}/series", summary="Metric points of several keys")
def get_series(
    ctx: Ctx, request: Request, run: str, keys: KeysQ = None,
    max_points: MaxPointsQ = DEFAULT_MAX_POINTS,
    since: Annotated[StepQ, Query(description="only points with step > since (incremental reads)")] = None,
    start: Annotated[StepQ, Query(description="first step")] = None,
    end: Annotated[StepQ, Query(description="last step")] = None,
    format: FormatQ = "json",
    ts: Annotated[bool, Query(description="include timestamps (false: a chart over steps; ts comes back empty and "
                                          "the store reads a third less)")] = True,
) -> Response:
    r = visible_run(ctx, request, run)
    wanted = split_list(keys)
    if not wanted:
        raise ApiError(400, "query parameter 'keys' is required (comma-separated metric keys)")
    if len(wanted) > MAX_KEYS_PER_REQUEST:
        raise ApiError(400, f"at most {MAX_KEYS_PER_REQUEST} keys per request, got {len(wanted)}")
    if since is not None:
        start = since + 1 if start is None else max(start, since + 1)

    def render() -> dict[str, Any]:
        series = series_map(ctx, r["id"], wanted, start=start, end=end, max_points=clamp_points(max_points),
                            binary=format == "b64", with_ts=ts)
        return {"run": r["id"], "status": r["status"], "last_step": r.get("last_step"), "since": since,
                "series": series}

    return ctx.responses.respond(request, r, render)  # an ended run's series: cached, with an ETag


def _reward_kl_path(ctx: Cockpit, rid: str, run_keys: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    kl_key = analysis.find_key(run_keys, analysis.KL_KEYS)
    reward_key = analysis.find_key(run_keys, analysis.REWARD_KEYS)
    if not (kl_key and reward_key):
        missing = [f"{n} metric ({', '.join(keys[:3])}...)" for n, k, keys in
                   (("KL", kl_key, analysis.KL_KEYS), ("reward", reward_key, analysis.REWARD_KEYS)) if not k]
        return None, "logged no " + " and no ".join(missing)
    kx = ctx.store.series(rid, kl_key)
    ry = ctx.store.series(rid, reward_key)
    path = {"x_key": kl_key, "y_key": reward_key, **analysis.xy_path(kx[:2], ry[:2])}
    return path, None if path["steps"] else "has no step where both KL and reward were logged"


@router.get("/compare", summary="Compare runs: overlaid series, groups (mean and min-max band), reward-vs-KL "
                                "paths, config diff")
def compare(
    ctx: Ctx, request: Request,
    runs: Annotated[list[str] | None, Query(description=f"comma-separated run ids (required, max {MAX_COMPARE_RUNS})")] = None,
    keys: KeysQ = None,
    max_points: MaxPointsQ = 800,
    group_by: Annotated[str | None, Query(description="group runs by group, tags, project or a config path; "
                                          "each group gets mean / min / max per key")] = None,
    format: FormatQ = "json",
) -> JSON:
    ids = split_list(runs)
    if not ids:
        raise ApiError(400, "query parameter 'runs' is required (comma-separated run ids)")
    if len(ids) > MAX_COMPARE_RUNS:
        raise ApiError(400, f"at most {MAX_COMPARE_RUNS} runs can be compared, got {len(ids)}")
    wanted = split_list(keys)
    if len(wanted) > MAX_KEYS_PER_REQUEST:
        raise ApiError(400, f"at most {MAX_KEYS_PER_REQUEST} keys per request, got {len(wanted)}")
    found = [visible_run(ctx, request, r) for r in ids]
    points = clamp_points(max_points)
    out_runs = []
    for run in found:
        rid = run["id"]
        run_keys = ctx.store.keys(rid)
        present = [k for k in wanted if k in run_keys]
        path, why = _reward_kl_path(ctx, rid, run_keys)
        out_runs.append({
            "id": rid, "name": run["name"], "status": run["status"], "group": run.get("group"),
            "tags": run.get("tags") or [], "created_at": run.get("created_at"),
            "keys": None if wanted else [k for k in run_keys if not k.startswith("system/")],
            "series": series_map(ctx, rid, present, max_points=points, binary=format == "b64"),
            "path": path, "path_missing": why,
        })
    groups = _groups(ctx, found, wanted, group_by, points) if group_by and wanted else None
    union = sorted({k for r in out_runs for k in (r["keys"] or [])})
    return JSON(analysis.clean_json({
        "runs": out_runs, "keys": union, "groups": groups,
        "config_diff": analysis.config_diff([r.get("config") or {} for r in found]),
    }))


def _groups(ctx: Cockpit, runs: list[dict[str, Any]], keys: list[str], by: str, max_points: int) -> list[dict]:
    members: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        members.setdefault(grouping.group_label(run, by), []).append(run)
    out = []
    for label, rs in members.items():
        series = {}
        for key in keys:
            per_run = [ctx.store.series(r["id"], key)[:2] for r in rs]
            series[key] = grouping.aggregate(per_run, max_points=max_points)
        out.append({"name": label, "runs": [r["id"] for r in rs], "series": series})
    return out


@router.get("/runs/{run}/timeline", summary="Step-phase timeline from timing_s/* with perf/mfu/* and throughput")
def get_timeline(ctx: Ctx, request: Request, run: str, max_points: MaxPointsQ = 600) -> JSON:
    r = visible_run(ctx, request, run)
    return JSON(panels.timeline(ctx.store, r["id"], clamp_points(max_points)))


@router.get("/runs/{run}/mismatch", summary="Train/rollout mismatch metrics against verl's documented thresholds")
def get_mismatch(ctx: Ctx, request: Request, run: str, max_points: MaxPointsQ = 800) -> JSON:
    r = visible_run(ctx, request, run)
    return JSON(panels.mismatch(ctx.store, r["id"], clamp_points(max_points)))
