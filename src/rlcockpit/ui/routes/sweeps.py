"""Routes of the sweep pages: the sweeps of the store, one sweep (trial table, parallel coordinates,
best-so-far curve) and its importance panel. The data comes from :mod:`rlcockpit.sweeps.data`, the same
functions ``rlcockpit sweep --status`` and ``rlcockpit importance`` use, over a read-only connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.data import best_so_far, importance_panel, parallel_coordinates, sweep_summary
from rlcockpit.sweeps.state import SweepState
from rlcockpit.ui.params import JSON, ApiError, Cockpit, cockpit
from rlcockpit.ui.routes.runs import visible_projects

router = APIRouter(prefix="/api", tags=["sweeps"])
Ctx = Annotated[Cockpit, Depends(cockpit)]


@contextmanager
def _state(ctx: Cockpit) -> Iterator[SweepState | None]:
    """The sweep tables (None when no sweep was ever created in this store, or the store has no local file:
    sweeps live beside a local SQLite store; a PostgreSQL store's ``dir`` is its URL, a string, so the team
    server has none)."""
    store_dir = getattr(ctx.store, "dir", None)
    if not isinstance(store_dir, Path) or not (store_dir / "rlcockpit.db").is_file():
        yield None
        return
    db = open_database(store_dir, read_only=True)
    try:
        yield SweepState(db) if db.has_table("sweeps") else None
    finally:
        db.close()


def _summary(ctx: Cockpit, request: Request, sweep: str) -> dict[str, Any]:
    with _state(ctx) as st:
        if st is None:
            raise ApiError(404, f"no sweep {sweep!r}")
        try:
            summary = sweep_summary(st, sweep)
        except KeyError as exc:
            raise ApiError(404, exc.args[0]) from None
    allowed = visible_projects(request)
    if allowed is not None and summary["project"] not in allowed:
        raise ApiError(404, f"no sweep {sweep!r}")
    return summary


@router.get("/sweeps", summary="Sweeps of the store (newest first) with trial counts and the best trial")
def list_sweeps(ctx: Ctx, request: Request, project: str | None = None) -> JSON:
    allowed = visible_projects(request)
    out = []
    with _state(ctx) as st:
        for sw in (st.list(project) if st is not None else []):
            if allowed is not None and sw["project"] not in allowed:
                continue
            s = sweep_summary(st, sw["id"])
            out.append({k: s[k] for k in ("id", "project", "name", "method", "state", "reason", "metric", "counts",
                                          "best", "created_at")} | {"trials": len(s["trials"])})
    return JSON({"sweeps": out})


@router.get("/sweeps/{sweep}", summary="One sweep: config, trial table, parallel coordinates, best so far")
def get_sweep(ctx: Ctx, request: Request, sweep: str) -> JSON:
    summary = _summary(ctx, request, sweep)
    return JSON({**summary, "parallel": parallel_coordinates(summary), "best_so_far": best_so_far(summary)})


@router.get("/sweeps/{sweep}/importance", summary="Hyperparameter importance of the sweep's trials")
def get_importance(ctx: Ctx, request: Request, sweep: str,
                   metric: Annotated[str | None, Query(max_length=500, description="default: the sweep metric")] = None
                   ) -> JSON:
    summary = _summary(ctx, request, sweep)
    return JSON(importance_panel(ctx.store, summary, metric))
