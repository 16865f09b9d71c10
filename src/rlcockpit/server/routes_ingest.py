"""The ingestion API the remote logger speaks (``/api/v1``): write ops, run rows, sync state.

``POST /api/v1/runs/{run}/ingest`` — body ``{"stream", "ops": [...]}`` (see :mod:`rlcockpit.store.remote.wire`);
200 ``{"applied_through", "applied", "duplicates"}``; 400/422 malformed, a step going backwards, or a value
breaking the store's rules (:mod:`rlcockpit.store.rules`: the message names the op and field),
403 no ``member`` role in the run's project, 404 data for a run never created, 413 too large,
429 rate limited, 503 the database is unavailable (the client keeps the ops and retries).
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from rlcockpit.server.ingest import Refused, UnknownRun, ingest, parse_request
from rlcockpit.server.state import TeamState, fail, require, team, user_of
from rlcockpit.store.base import StoreUnavailable, ValueRefused
from rlcockpit.store.remote.wire import BadBatch
from rlcockpit.ui.params import JSON

router = APIRouter(prefix="/api/v1")


@router.post("/runs/{run_id}/ingest")
async def ingest_ops(run_id: str, request: Request) -> Response:
    t0 = time.perf_counter()
    state = team(request)
    user = user_of(request)
    try:
        body = await request.body()
    except ClientDisconnect:  # the client gave up (its timeout) while sending: it retries from its spool
        return Response(status_code=400)
    if getattr(request.state, "body_too_large", False) or len(body) > state.limits.max_body_bytes:
        return JSON({"error": f"batch larger than the limit ({state.limits.max_body_bytes} bytes)"}, status_code=413)

    def authorize(project: str, creating: bool) -> None:
        if not creating and not user.can(project, "viewer"):  # another project's run: as if it did not exist
            raise UnknownRun(f"run {run_id!r} does not exist on this server")
        if not user.can(project, "member"):
            raise Refused(f"user {user.name!r} may not log runs in project {project!r} (needs the member role)")

    times = [0.0, 0.0]

    def work() -> Any:
        times[0] = time.perf_counter()
        stream, ops = parse_request(body)
        for op in ops:  # who ran it: recorded on the run when it is created here
            if isinstance(op.get("create"), dict):
                op["create"].setdefault("meta", {})
                if isinstance(op["create"]["meta"], dict):
                    op["create"]["meta"]["team_user"] = user.name
        try:
            applied = ingest(state.store, run_id, stream, ops, authorize)
        finally:
            times[1] = time.perf_counter()
        if applied.points:  # queued for the KPI thread; may read targets from the database: not on the event loop
            state.kpis.after_ingest(run_id, applied.project, applied.points)
        return applied

    try:
        applied = await anyio.to_thread.run_sync(work, limiter=state.ingest_limiter())
    except BadBatch as exc:
        return JSON({"error": f"batch refused: {exc}"}, status_code=422)
    except ValueRefused as exc:  # a value the rules did not catch but PostgreSQL refuses: as deterministic
        return JSON({"error": f"batch refused: {exc}"}, status_code=422)
    except Refused as exc:
        return JSON({"error": str(exc)}, status_code=403)
    except UnknownRun as exc:
        return JSON({"error": str(exc)}, status_code=404)
    except StoreUnavailable:  # its text may carry the database's address: never shown to a client
        return JSON({"error": "the team database is unavailable"}, status_code=503,
                    headers={"retry-after": "1"})
    state.metrics.observe(time.perf_counter() - t0, applied.applied, times[0] - t0, times[1] - times[0])
    return JSON(applied.to_json())


@router.get("/runs/{run_id}")
def run_row(run_id: str, request: Request) -> Response:
    state, user = team(request), user_of(request)
    try:
        row = state.store.get_run(run_id)
    except KeyError as exc:
        fail(404, exc.args[0])
    require(user, row["project"], "viewer")
    return JSON({"run": row})


@router.get("/runs")
def run_rows(request: Request, project: str | None = None) -> Response:
    state, user = team(request), user_of(request)
    rows = [r for r in state.store.list_runs(project) if user.can(r["project"], "viewer")]  # full rows: resume
    return JSON({"runs": rows})


@router.get("/runs/{run_id}/sync-state")
def sync_state(run_id: str, request: Request) -> Response:
    """What the server holds of a run, so ``rlcockpit sync`` sends only the rest (resumable)."""
    state, user = team(request), user_of(request)
    store = state.store
    rows = store._query("SELECT project FROM runs WHERE id = %s", (run_id,))
    if not rows:
        return JSON({"exists": False})
    require(user, rows[0][0], "viewer")
    points = dict(store._query("SELECT k.name, sum(c.n)::bigint FROM keys k JOIN chunks c ON c.key_id = k.id WHERE "
                               "k.run_id = %s GROUP BY k.name", (run_id,)))
    samples = {str(s): int(n) for s, n in store._query("SELECT step, count(*) FROM samples WHERE run_id = %s GROUP BY "
                                                        "step", (run_id,))}
    events = [r[0] for r in store._query("SELECT id FROM events WHERE run_id = %s", (run_id,))]
    findings = [r[0] for r in store._query("SELECT id FROM findings WHERE run_id = %s", (run_id,))]
    return JSON({"exists": True, "points": {k: int(v) for k, v in points.items()}, "samples": samples,
                 "events": events, "findings": findings})


@router.get("/health")
def health(request: Request) -> Response:
    state: TeamState = team(request)
    return JSON({"ok": True, "user": user_of(request).name, "ingest": state.metrics.snapshot()})


@router.get("/whoami")
def whoami(request: Request) -> Response:
    user = user_of(request)
    return JSON({"name": user.name, "is_admin": user.is_admin, "roles": user.roles,
                 "csrf_cookie": "rlcockpit_csrf"})
