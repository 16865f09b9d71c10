"""Routes over logged rollout samples: pages (sort, filter, search), GRPO groups, one prompt across steps."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from rlcockpit.ui import analysis, sampleview
from rlcockpit.ui.params import INT64_MAX, INT64_MIN, JSON, ApiError, Cockpit, OffsetQ, StepQ, cockpit
from rlcockpit.ui.routes.runs import visible_run
from rlcockpit.ui.runfilter import FilterError

router = APIRouter(prefix="/api", tags=["samples"])
Ctx = Annotated[Cockpit, Depends(cockpit)]
MAX_SAMPLES_PER_PAGE = 500
MAX_SCAN = 50_000  # rows read to sort / filter / group / index in Python
LimitQ = Annotated[int, Query(ge=1, le=INT64_MAX, description=f"rows per page (max {MAX_SAMPLES_PER_PAGE})")]


def _parse_step(raw: str | None) -> int | str | None:
    if raw is None or raw == "":
        return None
    if raw == "all":
        return "all"
    try:
        val = int(raw)
    except ValueError:
        raise ApiError(400, f"query parameter 'step' must be an integer or 'all', got {raw!r}") from None
    if not INT64_MIN <= val <= INT64_MAX:
        raise ApiError(400, f"query parameter 'step' must be within -2**63 .. 2**63-1, got {raw!r}")
    return val


@router.get("/runs/{run}/samples", summary="Logged rollout samples: sort, filter, full-text search, pages")
def get_samples(
    ctx: Ctx, request: Request, run: str,
    step: Annotated[str | None, Query(description="sample step (default: latest; 'all' for every step)")] = None,
    q: Annotated[str | None, Query(description="text search in prompt, response and extra columns")] = None,
    sort: Annotated[str | None, Query(description="column to sort by (reward, response_length, any column)")] = None,
    desc: Annotated[bool, Query(description="sort descending")] = False,
    filter: Annotated[str | None, Query(description='expression over columns, e.g. reward > 0.5 and '
                                        'data_source == "gsm8k"')] = None,
    kind: Annotated[str | None, Query(description="only rows of this kind (probe: the validation probe set)")] = None,
    limit: LimitQ = 100,
    offset: OffsetQ = 0,
) -> JSON:
    r = visible_run(ctx, request, run)
    rid = r["id"]
    steps = ctx.store.sample_steps(rid)
    text = (q or "").strip() or None
    parsed = _parse_step(step)
    if parsed is None and not text and steps:
        parsed = steps[-1]
    at = None if parsed in (None, "all") else parsed
    limit = min(limit, MAX_SAMPLES_PER_PAGE)
    if not (sort or filter or kind):  # the store pages by itself
        rows = ctx.store.samples(rid, at, limit=limit + 1, offset=offset, query=text)
        more, total, truncated = len(rows) > limit, None, False
        page = rows[:limit]
    else:
        rows = ctx.store.samples(rid, at, limit=MAX_SCAN + 1, query=text)
        truncated = len(rows) > MAX_SCAN
        rows = rows[:MAX_SCAN]
        if kind == sampleview.PROBE_KIND:
            rows = [x for x in rows if sampleview.is_probe(x)]
        elif kind:
            rows = [x for x in rows if x.get("kind") == kind]
        try:
            rows = sampleview.filter_rows(rows, filter)
        except FilterError as exc:
            raise ApiError(400, str(exc)) from None
        if sort:
            rows = sampleview.sort_rows(rows, sort, desc)
        total = len(rows)
        page = rows[offset: offset + limit]
        more = offset + limit < total
    page = analysis.annotate_samples(page)
    return JSON({"run": rid, "steps": steps, "step": "all" if parsed == "all" else at, "query": text,
                 "offset": offset, "limit": limit, "more": more, "total": total, "truncated": truncated,
                 "sort": sort, "desc": desc, "columns": analysis.sample_columns(page), "rows": page})


@router.get("/runs/{run}/samples/compare", summary="The same prompts' responses at two steps")
def compare_samples(
    ctx: Ctx, request: Request, run: str,
    a: Annotated[StepQ, Query(description="first step (required)")] = None,
    b: Annotated[StepQ, Query(description="second step (required)")] = None,
    limit: LimitQ = 50,
) -> JSON:
    r = visible_run(ctx, request, run)
    if a is None or b is None:
        raise ApiError(400, "query parameters 'a' and 'b' (two sample steps) are required")
    rows_a = analysis.annotate_samples(ctx.store.samples(r["id"], a, limit=2000))
    rows_b = analysis.annotate_samples(ctx.store.samples(r["id"], b, limit=2000))
    pairs = analysis.pair_by_prompt(rows_a, rows_b)
    return JSON({"run": r["id"], "a": a, "b": b, "pairs": pairs[:min(limit, MAX_SAMPLES_PER_PAGE)],
                 "total": len(pairs)})


@router.get("/runs/{run}/samples/groups", summary="GRPO group view: each prompt with its n responses, rewards, "
                                                  "advantages and reward components; zero-variance groups marked")
def sample_groups(
    ctx: Ctx, request: Request, run: str,
    step: Annotated[StepQ, Query(description="sample step (default: latest)")] = None,
) -> JSON:
    r = visible_run(ctx, request, run)
    steps = ctx.store.sample_steps(r["id"])
    if step is None:
        if not steps:
            return JSON({"run": r["id"], "steps": [], "step": None, "groups": [], "components": []})
        step = steps[-1]
    rows = analysis.annotate_samples(ctx.store.samples(r["id"], step, limit=MAX_SCAN))
    rows = [x for x in rows if not sampleview.is_probe(x)]
    return JSON({"run": r["id"], "steps": steps, "step": step, **sampleview.grpo_groups(rows)})


@router.get("/runs/{run}/samples/prompts", summary="Distinct prompts with the steps they were logged at "
                                                   "(the validation probe set first)")
def sample_prompts(
    ctx: Ctx, request: Request, run: str,
    probes: Annotated[bool, Query(description="only the probe set (rows of kind 'probe')")] = False,
) -> JSON:
    r = visible_run(ctx, request, run)
    rows = ctx.store.samples(r["id"], None, limit=MAX_SCAN)
    index = sampleview.prompt_index(rows, probes)
    return JSON({"run": r["id"], "prompts": index[:1000], "total": len(index), "truncated": len(rows) >= MAX_SCAN})


@router.get("/runs/{run}/samples/history", summary="One prompt's responses at every step it was logged")
def sample_history(
    ctx: Ctx, request: Request, run: str,
    prompt: Annotated[str, Query(description="the exact prompt text")],
) -> JSON:
    r = visible_run(ctx, request, run)
    rows = analysis.annotate_samples(ctx.store.samples(r["id"], None, limit=MAX_SCAN, query=prompt))
    history: list[dict[str, Any]] = sampleview.prompt_history(rows, prompt)
    return JSON({"run": r["id"], "prompt": prompt, "steps": history})
