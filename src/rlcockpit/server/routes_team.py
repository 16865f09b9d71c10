"""Team routes (``/api/team``): KPI targets and leaderboard, saved views, sample ratings, runs, alerts, users.

Reads need ``viewer`` in the project; saving views and rating samples ``member``; targets, alert
channels, deleting runs and roles ``admin`` (users: a server admin; tokens: their owner or a server
admin). Runs are looked up among the caller's projects only (see ``RUN_SCOPE``), so a run of another
project is "no run", and no message names a project the caller cannot read. Every change is written
to the audit log (who, what, when). Handlers are plain ``def``: FastAPI runs them in its thread pool.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import time
from typing import Any

from fastapi import APIRouter, Body, Request
from starlette.responses import Response

from rlcockpit.server.accounts import DEFAULT_TOKEN_DAYS, token_id_of
from rlcockpit.server.state import fail, require, team, user_of
from rlcockpit.ui.params import JSON

router = APIRouter(prefix="/api/team", tags=["team"])
RATINGS = ("good", "bad", "hacked")
MAX_VIEW_BYTES = 64 * 1024
MAX_NOTE = 2000


def _body(data: Any, *fields: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        fail(400, "expected a JSON object")
    missing = [f for f in fields if f not in data]
    if missing:
        fail(400, f"missing field(s): {', '.join(missing)}")
    return data


def _run_project(request: Request, run_id: str, role: str) -> dict[str, Any]:
    try:
        run = team(request).store.get_run(run_id)
    except KeyError:
        fail(404, f"no run {run_id!r}")
    require(user_of(request), run["project"], role, missing=f"run {run_id!r}")
    return run


# ---- KPI targets and leaderboard ----------------------------------------------------------------
@router.get("/targets")
def all_targets(request: Request) -> Response:
    """Every KPI target the caller may read (the dashboard draws them as lines on matching charts)."""
    state, user = team(request), user_of(request)
    rows = state.store._query("SELECT DISTINCT project FROM kpi_targets")
    out = [t for (p,) in rows if user.can(p, "viewer") for t in state.kpis.targets(p)]
    return JSON({"targets": out})


@router.get("/projects/{project}/targets")
def list_targets(project: str, request: Request) -> Response:
    require(user_of(request), project, "viewer", missing=f"project {project!r}")
    return JSON({"targets": team(request).kpis.targets(project, fresh=True)})


@router.post("/projects/{project}/targets")
def set_target(project: str, request: Request, data: Any = Body(None)) -> Response:
    """``{"target": "val-core/aime/acc/mean@1 >= 0.70", "label": "AIME"}`` (admin)."""
    user = user_of(request)
    require(user, project, "admin", missing=f"project {project!r}")
    data = _body(data, "target")
    state = team(request)
    try:
        target = state.kpis.set_target(project, str(data["target"]), data.get("label"), user.name,
                                       state.accounts._audit)
    except ValueError as exc:
        fail(400, str(exc))
    return JSON({"target": target})


@router.delete("/targets/{target_id}")
def delete_target(target_id: int, request: Request) -> Response:
    state, user = team(request), user_of(request)
    rows = state.store._query("SELECT project FROM kpi_targets WHERE id = %s", (target_id,))
    if not rows:
        fail(404, f"no KPI target {target_id}")
    require(user, rows[0][0], "admin", missing=f"KPI target {target_id}")
    state.kpis.delete_target(target_id, user.name, state.accounts._audit)
    return JSON({"deleted": target_id})


@router.get("/projects/{project}/leaderboard")
def leaderboard(project: str, request: Request) -> Response:
    require(user_of(request), project, "viewer", missing=f"project {project!r}")
    return JSON({"project": project, "leaderboard": team(request).kpis.leaderboard(project)})


# ---- saved views --------------------------------------------------------------------------------
@router.get("/projects/{project}/views")
def list_views(project: str, request: Request) -> Response:
    require(user_of(request), project, "viewer", missing=f"project {project!r}")
    rows = team(request).store._query("SELECT id, name, owner, state, created_at, updated_at FROM views WHERE "
                                      "project = %s ORDER BY updated_at DESC", (project,))
    return JSON({"views": [_view(project, *r) for r in rows]})


def _view(project: str, vid: str, name: str, owner: str, state: str, created: float, updated: float) -> dict:
    return {"id": vid, "project": project, "name": name, "owner": owner, "state": json.loads(state),
            "created_at": created, "updated_at": updated, "url": f"/#/view/{vid}"}


@router.post("/projects/{project}/views")
def save_view(project: str, request: Request, data: Any = Body(None)) -> Response:
    """``{"name": ..., "state": {"route": "#/compare?runs=a,b", "filter": ..., "panels": [...], "smoothing": 0.6,
    "x": "step"}}`` → the view with its shareable URL (member)."""
    user = user_of(request)
    require(user, project, "member", missing=f"project {project!r}")
    data = _body(data, "name", "state")
    state = data["state"]
    text = json.dumps(state)
    if not isinstance(state, dict) or len(text) > MAX_VIEW_BYTES:
        fail(400, f"state: expected an object of at most {MAX_VIEW_BYTES} bytes")
    name = str(data["name"]).strip()[:200] or "view"
    vid, now = secrets.token_urlsafe(9), time.time()
    accounts = team(request).accounts

    def work(tx: Any) -> None:
        tx.conn.execute("INSERT INTO views(id, project, name, owner, state, created_at, updated_at) VALUES (%s, %s, "
                        "%s, %s, %s, %s, %s)", (vid, project, name, user.name, text, now, now))
        accounts._audit(tx.conn, user.name, "view.save", project, vid, {"name": name})

    team(request).store._tx(work)
    return JSON({"view": _view(project, vid, name, user.name, text, now, now)})


@router.get("/views/{view_id}")
def get_view(view_id: str, request: Request) -> Response:
    rows = team(request).store._query("SELECT project, id, name, owner, state, created_at, updated_at FROM views "
                                      "WHERE id = %s", (view_id,))
    if not rows:
        fail(404, f"no view {view_id!r}")
    require(user_of(request), rows[0][0], "viewer", missing=f"view {view_id!r}")
    return JSON({"view": _view(*rows[0])})


@router.delete("/views/{view_id}")
def delete_view(view_id: str, request: Request) -> Response:
    state, user = team(request), user_of(request)
    rows = state.store._query("SELECT project, owner FROM views WHERE id = %s", (view_id,))
    if not rows:
        fail(404, f"no view {view_id!r}")
    project, owner = rows[0]
    require(user, project, "member" if owner == user.name else "admin", missing=f"view {view_id!r}")

    def work(tx: Any) -> None:
        tx.conn.execute("DELETE FROM views WHERE id = %s", (view_id,))
        state.accounts._audit(tx.conn, user.name, "view.delete", project, view_id, {})

    state.store._tx(work)
    return JSON({"deleted": view_id})


# ---- sample ratings -----------------------------------------------------------------------------
@router.get("/runs/{run_id}/ratings")
def run_ratings(run_id: str, request: Request) -> Response:
    run = _run_project(request, run_id, "viewer")
    return JSON({"ratings": _ratings(team(request).store, "r.run_id = %s", (run["id"],))})


def _ratings(store: Any, where: str, params: tuple) -> list[dict[str, Any]]:
    rows = store._query("SELECT r.run_id, r.step, r.idx, r.rating, r.note, r.author, r.created_at, s.prompt, "
                        "s.response, s.reward FROM ratings r LEFT JOIN samples s ON s.run_id = r.run_id AND s.step = "
                        f"r.step AND s.idx = r.idx WHERE {where} ORDER BY r.run_id, r.step, r.idx, r.created_at", params)
    keys = ("run_id", "step", "idx", "rating", "note", "author", "created_at", "prompt", "response", "reward")
    return [dict(zip(keys, r)) for r in rows]


@router.post("/runs/{run_id}/ratings")
def rate_sample(run_id: str, request: Request, data: Any = Body(None)) -> Response:
    """``{"step": 12, "idx": 3, "rating": "good"|"bad"|"hacked", "note": "..."}`` (member). A ``hacked`` rating
    is also stored as a finding of the run, so diagnosis and the findings list count it as evidence."""
    run = _run_project(request, run_id, "member")
    user, state = user_of(request), team(request)
    data = _body(data, "step", "idx", "rating")
    rating, note = data["rating"], str(data.get("note") or "")[:MAX_NOTE]
    if rating not in RATINGS:
        fail(400, f"rating must be one of {', '.join(RATINGS)}, got {rating!r}")
    try:
        step, idx = int(data["step"]), int(data["idx"])
    except (TypeError, ValueError):
        fail(400, "step and idx must be integers")
    sample = state.store.samples(run["id"], step)
    row = next((s for s in sample if s["idx"] == idx), None)
    if row is None:
        fail(404, f"run {run_id!r} has no sample {idx} at step {step}")

    def work(tx: Any) -> None:
        tx.conn.execute("INSERT INTO ratings(run_id, step, idx, rating, note, author, created_at) VALUES (%s, %s, %s, "
                        "%s, %s, %s, %s) ON CONFLICT (run_id, step, idx, author) DO UPDATE SET rating = "
                        "EXCLUDED.rating, note = EXCLUDED.note, created_at = EXCLUDED.created_at",
                        (run["id"], step, idx, rating, note, user.name, time.time()))
        state.store._event_tx(tx, run["id"], "sample_rating", {"step": step, "idx": idx, "rating": rating,
                                                               "note": note, "author": user.name}, step)
        if rating == "hacked":
            state.store._finding_tx(tx, run["id"], human_finding(run["id"], step, idx, note, user.name, row))
        state.accounts._audit(tx.conn, user.name, "sample.rate", run["project"], f"{run['id']}/{step}/{idx}",
                              {"rating": rating})

    state.store._tx(work)
    return JSON({"rated": {"run_id": run["id"], "step": step, "idx": idx, "rating": rating, "note": note,
                           "author": user.name}})


def human_finding(run_id: str, step: int, idx: int, note: str, author: str, sample: dict[str, Any]) -> dict:
    """A reviewer's "reward hacked" rating as a finding (id per sample and author: re-rating replaces it)."""
    response = str(sample.get("response") or "")
    summary = f"{author} rated sample {idx} of step {step} as reward-hacked" + (f": {note}" if note else "")
    return {"id": f"rating-{run_id}-{step}-{idx}-{author}"[:120], "detector": "human_rating", "severity": "warning",
            "step": step, "step_start": step, "step_end": step, "title": "A reviewer rated a sample as reward hacking",
            "summary": summary, "message": summary,
            "evidence": {"samples": [{"step": step, "idx": idx, "prompt": str(sample.get("prompt") or "")[:500],
                                      "reward": sample.get("reward"), "response": response[:500]}],
                         "notes": [note] if note else [], "reviewer": author},
            "source": "human", "author": author, "created_at": time.time()}


@router.get("/projects/{project}/ratings/export")
def export_ratings(project: str, request: Request, format: str = "jsonl") -> Response:
    require(user_of(request), project, "viewer", missing=f"project {project!r}")
    rows = _ratings(team(request).store, "r.run_id IN (SELECT id FROM runs WHERE project = %s)", (project,))
    if format == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["run_id", "step", "idx", "rating"])
        writer.writeheader()
        writer.writerows(rows)
        body, media = buf.getvalue(), "text/csv; charset=utf-8"
    elif format == "jsonl":
        body, media = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "application/x-ndjson"
    else:
        fail(400, "format must be csv or jsonl")
    return Response(body, media_type=media,
                    headers={"content-disposition": f'attachment; filename="ratings-{project}.{format}"'})


# ---- runs, alert channels, audit, users -----------------------------------------------------------
@router.delete("/runs/{run_id}")
def delete_run(run_id: str, request: Request) -> Response:
    run = _run_project(request, run_id, "admin")
    state, user = team(request), user_of(request)
    state.store.delete_run(run["id"])
    state.accounts.audit(user.name, "run.delete", run["project"], run["id"], {"name": run["name"]})
    return JSON({"deleted": run["id"]})


@router.put("/projects/{project}/alerts")
def set_alerts(project: str, request: Request, data: Any = Body(None)) -> Response:
    """The project's alert section (``{"channels": [{"type": "slack", "url": ...}], ...}``, admin)."""
    from rlcockpit.alerts.config import load_alerts_config

    user, state = user_of(request), team(request)
    require(user, project, "admin", missing=f"project {project!r}")
    try:
        load_alerts_config(data, env={})
    except (ValueError, TypeError) as exc:
        fail(400, f"alerts config: {exc}")

    def work(tx: Any) -> None:
        tx.conn.execute("INSERT INTO project_alerts(project, config, updated_by, updated_at) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (project) DO UPDATE SET config = EXCLUDED.config, updated_by = "
                        "EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at",
                        (project, json.dumps(data), user.name, time.time()))
        state.accounts._audit(tx.conn, user.name, "alerts.set", project, None,
                              {"channels": len((data or {}).get("channels") or []) if isinstance(data, dict) else 0})

    state.store._tx(work)
    request.app.state.team_alerts.forget(project)
    return JSON({"project": project, "channels": len((data or {}).get("channels") or []) if isinstance(data, dict)
                 else len(data or [])})


@router.get("/audit")
def audit(request: Request, project: str | None = None, limit: int = 200) -> Response:
    user = user_of(request)
    if project is None and not user.is_admin:
        fail(403, "the whole audit log is for server admins; ask for ?project=")
    if project is not None:
        require(user, project, "admin", missing=f"project {project!r}")
    return JSON({"audit": team(request).accounts.audit_log(project, min(max(limit, 1), 5000))})


@router.post("/users")
def create_user(request: Request, data: Any = Body(None)) -> Response:
    """``{"name": "bob", "projects": {"rl": "member"}}`` → the user and a first token (server admin)."""
    user, accounts = user_of(request), team(request).accounts
    if not user.is_admin:
        fail(403, "only a server admin creates users")
    data = _body(data, "name")
    try:
        accounts.create_user(str(data["name"]), is_admin=bool(data.get("is_admin")), actor=user.name)
        for project, role in (data.get("projects") or {}).items():
            accounts.grant(str(data["name"]), str(project), str(role), actor=user.name)
        token = accounts.issue_token(str(data["name"]), "first token", actor=user.name)
    except ValueError as exc:
        fail(400, str(exc))
    return JSON({"user": accounts.user(str(data["name"])).name, "token": token})


@router.post("/projects/{project}/members")
def set_member(project: str, request: Request, data: Any = Body(None)) -> Response:
    """``{"user": "bob", "role": "viewer"|"member"|"admin"|null}`` (project admin)."""
    user, accounts = user_of(request), team(request).accounts
    require(user, project, "admin", missing=f"project {project!r}")
    data = _body(data, "user", "role")
    try:
        accounts.grant(str(data["user"]), project, data["role"], actor=user.name)
    except (KeyError, ValueError) as exc:
        fail(400, str(exc.args[0] if exc.args else exc))
    return JSON({"project": project, "user": data["user"], "role": data["role"]})


# ---- tokens -----------------------------------------------------------------------------------------
@router.get("/tokens")
def list_tokens(request: Request, user: str | None = None) -> Response:
    """The caller's tokens (a server admin: everyone's, or ``?user=``'s): id, label, created, expires, last
    used, revoked — never a secret."""
    me, accounts = user_of(request), team(request).accounts
    if user is not None and user != me.name and not me.is_admin:
        fail(403, "only a server admin lists other users' tokens")
    return JSON({"tokens": accounts.tokens(user if me.is_admin else me.name)})


@router.post("/tokens")
def issue_token(request: Request, data: Any = Body(None)) -> Response:
    """``{"label": "laptop", "expires_days": 30}`` → a new token for the caller (shown once)."""
    me, accounts = user_of(request), team(request).accounts
    data = _body(data or {})
    days = data.get("expires_days", DEFAULT_TOKEN_DAYS)
    if not isinstance(days, (int, float)) or isinstance(days, bool):
        fail(400, f"expires_days: expected a number of days (0: never), got {days!r}")
    try:
        token = accounts.issue_token(me.name, str(data.get("label") or "")[:200], actor=me.name, expires_days=days)
    except (KeyError, ValueError) as exc:
        fail(400, str(exc.args[0] if exc.args else exc))
    return JSON({"token": token, "id": token_id_of(token)})


@router.delete("/tokens/{token_id}")
def revoke_token(token_id: str, request: Request) -> Response:
    """Revoke a token (its owner or a server admin); refused from the next request on, in every process."""
    me, accounts = user_of(request), team(request).accounts
    owner = accounts.token_owner(token_id)
    if owner is None or (owner != me.name and not me.is_admin):
        fail(404, f"no token {token_id_of(token_id)!r}")
    return JSON({"revoked": accounts.revoke_token(token_id, actor=me.name)})
