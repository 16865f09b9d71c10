"""OpenAPI 3.0 description of the dashboard's read-only JSON API (served at ``/api/openapi.json``).

Written by hand next to the handlers in ``api.py``; ``tests/ui`` validates it with
``openapi-spec-validator`` and checks that every route in :data:`rlcockpit.ui.api.ROUTES` is described.
"""

from __future__ import annotations

from typing import Any

_OBJ = {"type": "object", "additionalProperties": True}
_RUN_PARAM = {"name": "run", "in": "path", "required": True, "description": "run id, id prefix or unique name",
              "schema": {"type": "string"}}


def _q(name: str, desc: str, typ: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": desc, "schema": {"type": typ}}


def _op(summary: str, params: list[dict[str, Any]] | None = None, schema: dict[str, Any] | None = None,
        ctype: str = "application/json", errors: tuple[int, ...] = (400, 404)) -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {"description": "OK", "content": {ctype: {"schema": schema or {"$ref": "#/components/schemas/Object"}}}}
    }
    for code in errors:
        responses[str(code)] = {"description": {400: "bad query parameter", 404: "unknown run or route"}[code],
                                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    responses["401"] = {"description": "token required (non-loopback bind)"}
    return {"get": {"summary": summary, "parameters": params or [], "responses": responses}}


def _run_path(summary: str, extra: list[dict[str, Any]] | None = None, **kw: Any) -> dict[str, Any]:
    return _op(summary, [_RUN_PARAM, *(extra or [])], **kw)


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.0.3 document (a fresh dict each call)."""
    series = {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "items": {"type": "integer"}},
            "values": {"type": "array", "items": {"type": "number", "nullable": True}},
            "ts": {"type": "array", "items": {"type": "number"}},
            "n": {"type": "integer", "description": "point count (format=b64)"},
            "steps_b64": {"type": "string", "format": "byte"}, "values_b64": {"type": "string", "format": "byte"},
            "ts_b64": {"type": "string", "format": "byte"},
            "nonfinite": {"type": "array", "items": {"type": "array", "items": {}},
                          "description": "[step, 'nan'|'inf'|'-inf'] for points whose value is null"},
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "rlcockpit dashboard API",
            "version": "1",
            "description": "Read-only JSON API over an rlcockpit store. Only GET and HEAD are allowed (405 "
                           "otherwise). When the server binds a non-loopback address every request needs "
                           "the token (Authorization: Bearer, the rlcockpit_token cookie, or ?token=).",
        },
        "servers": [{"url": "/"}],
        "paths": {
            "/api/health": _op("Server liveness and version", errors=()),
            "/api/projects": _op("Projects in the store with run counts", errors=()),
            "/api/runs": _op("Runs list (newest first) with key summary metrics and finding counts", [
                _q("project", "only runs of this project"), _q("q", "substring of id, name, group or tags"),
                _q("status", "running, finished, failed or crashed"), _q("group", "only runs of this group"),
            ], errors=()),
            "/api/runs/{run}": _run_path("Run detail: config, meta, summary, metric keys by panel, findings, "
                                         "events, sample steps"),
            "/api/runs/{run}/series": _run_path("Metric points of several keys", [
                _q("keys", "comma-separated metric keys (required)"),
                _q("max_points", "downsample each series to at most this many points, keeping per-bucket "
                                 "min and max (default 1500)", "integer"),
                _q("since", "live updates: only points with step > since", "integer"),
                _q("start", "first step", "integer"), _q("end", "last step", "integer"),
                _q("format", "json (lists; default) or b64 (steps_b64/values_b64/ts_b64: base64 little-endian "
                             "float64 arrays, compact for charts)"),
            ], schema={"type": "object", "properties": {
                "series": {"type": "object", "additionalProperties": series},
                "status": {"type": "string"}, "last_step": {"type": "integer", "nullable": True}}}),
            "/api/runs/{run}/findings": _run_path("Stored findings of the run"),
            "/api/runs/{run}/events": _run_path("Events (guardrail interventions, alerts...)",
                                                [_q("kind", "only events of this kind, e.g. guardrail")]),
            "/api/runs/{run}/samples": _run_path("Logged rollout samples with repeated spans marked", [
                _q("step", "sample step (default: latest; 'all' for every step)"),
                _q("q", "text search in prompt, response and extra columns"),
                _q("limit", "rows per page (max 500)", "integer"), _q("offset", "rows to skip", "integer"),
            ]),
            "/api/runs/{run}/samples/compare": _run_path("The same prompts' responses at two steps", [
                _q("a", "first step (required)", "integer"), _q("b", "second step (required)", "integer"),
                _q("limit", "max prompts", "integer"),
            ]),
            "/api/runs/{run}/diagnosis": _run_path("Diagnosis: root-cause chain, findings, overrides to copy"),
            "/api/runs/{run}/report.html": _run_path("The health engine's HTML report (sandboxed)",
                                                     schema={"type": "string"}, ctype="text/html"),
            "/api/compare": _op("Compare runs: overlaid series, reward-vs-KL paths, config diff", [
                _q("runs", "comma-separated run ids (required, max 20)"),
                _q("keys", "comma-separated metric keys to overlay"),
                _q("max_points", "points per series", "integer"), _q("format", "json or b64 (as for series)"),
            ]),
            "/api/guide": _op("The metric guide (titles, meanings, healthy ranges) for tooltips",
                              [_q("lang", "en or zh")], errors=(400,)),
            "/api/openapi.json": _op("This document", errors=()),
        },
        "components": {
            "schemas": {
                "Object": _OBJ,
                "Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]},
            }
        },
    }
