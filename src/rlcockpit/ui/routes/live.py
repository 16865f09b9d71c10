"""Server-sent event streams: a run page's live updates and the runs list's change notices.

Each stream reads the store from the worker pool once per ``live_interval_s`` (1 s by default) and
sends only what changed (see :mod:`rlcockpit.ui.live`). A comment line every 15 s keeps proxies from
closing an idle stream; the stream ends (``event: end``) once the run is no longer running, so the
browser does not reconnect forever. Reconnects resume from ``Last-Event-ID`` (``<step>:<time>``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from rlcockpit.ui.live import LiveCursor
from rlcockpit.ui.params import INT64_MAX, Cockpit, LangQ, StepQ, cockpit
from rlcockpit.ui.routes.runs import visible_projects, visible_run

router = APIRouter(prefix="/api", tags=["live"])
Ctx = Annotated[Cockpit, Depends(cockpit)]
KEEPALIVE_S = 15.0
CountQ = Annotated[int, Query(ge=0, le=INT64_MAX)]
SSE_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}


def sse(event: str, data: Any, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'), allow_nan=False)}\n\n"


def _resume(last_event_id: str | None, since: int | None, t: float | None) -> tuple[int | None, float | None]:
    if last_event_id and ":" in last_event_id:
        step, _, ts = last_event_id.partition(":")
        try:
            return (int(step) if step != "" else None), float(ts)
        except ValueError:
            pass
    return since, t


async def _stream(ctx: Cockpit, poll: Any, done: Any, ident: Any) -> AsyncIterator[str]:
    yield "retry: 3000\n\n"
    last_sent = time.monotonic()
    stopping: asyncio.Event = ctx.stopping
    while not stopping.is_set():
        for name, data in await run_in_threadpool(poll):
            yield sse(name, data, ident())
            last_sent = time.monotonic()
        if done():
            yield sse("end", {"reason": "run is no longer running"}, ident())
            return
        if time.monotonic() - last_sent > KEEPALIVE_S:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()
        try:
            await asyncio.wait_for(stopping.wait(), timeout=ctx.live_interval_s)
        except asyncio.TimeoutError:
            pass


@router.get("/runs/{run}/live", summary="Live updates of a run as server-sent events (points, findings, samples, "
                                        "status)", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def run_live(
    ctx: Ctx, request: Request, run: str,
    since: Annotated[StepQ, Query(description="the run's last step when the page loaded")] = None,
    t: Annotated[float | None, Query(description="the server time (`now`) when the page loaded")] = None,
    findings: Annotated[CountQ, Query(description="findings the page has")] = 0,
    events: Annotated[CountQ, Query(description="events the page has")] = 0,
    samples: Annotated[CountQ, Query(description="sample steps the page has")] = 0,
    lang: LangQ = "en",
) -> StreamingResponse:
    r = await run_in_threadpool(visible_run, ctx, request, run)
    since, t = _resume(request.headers.get("last-event-id"), since, t)
    cursor = LiveCursor(ctx.store, r["id"], since, t, findings_n=findings, events_n=events, samples_n=samples,
                        lang=lang)
    clock = [time.time()]

    def poll() -> list[tuple[str, dict[str, Any]]]:
        clock[0] = time.time()
        return cursor.poll()

    def ident() -> str:
        return f"{'' if cursor.last_step is None else cursor.last_step}:{clock[0]:.3f}"

    return StreamingResponse(_stream(ctx, poll, lambda: cursor.finished, ident), media_type="text/event-stream",
                             headers=SSE_HEADERS)


@router.get("/live/runs", summary="Server-sent `changed` events when the runs list changes (new runs, status, "
                                  "progress)", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def runs_live(ctx: Ctx, request: Request,
                    project: Annotated[str | None, Query(description="only runs of this project")] = None
                    ) -> StreamingResponse:
    allowed = visible_projects(request)
    state: dict[str, Any] = {"marker": None}

    def poll() -> list[tuple[str, dict[str, Any]]]:
        runs = [r for r in ctx.store.list_runs(project or None, fields=()) if allowed is None or r["project"] in allowed]
        marker = tuple((r["id"], r["status"], r.get("last_step"), r.get("updated_at")) for r in runs)
        first = state["marker"] is None
        changed = marker != state["marker"]
        state["marker"] = marker
        return [("changed", {"runs": len(runs), "now": time.time()})] if changed and not first else []

    return StreamingResponse(_stream(ctx, poll, lambda: False, lambda: None), media_type="text/event-stream",
                             headers=SSE_HEADERS)
