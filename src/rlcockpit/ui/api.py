"""The dashboard's JSON API: read-only route handlers over a :class:`~rlcockpit.store.Store`.

Each handler takes the :class:`Cockpit` context, the path parameters and the parsed query, and
returns JSON-serialisable data (or raises :class:`ApiError`). The HTTP layer (``server.py``) owns
transport, security headers and timing; the OpenAPI document (``openapi.py``) describes these routes.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.store.base import Store
from rlcockpit.ui import analysis

DEFAULT_MAX_POINTS = 1500
MAX_MAX_POINTS = 20_000
MAX_KEYS_PER_REQUEST = 400
MAX_SAMPLES_PER_PAGE = 500
# Where the health engine's diagnosis may live (first importable module providing the function wins).
DIAGNOSIS_MODULES = ("rlcockpit.health", "rlcockpit.health.diagnosis", "rlcockpit.health.diagnose",
                     "rlcockpit.health.report")

Query = Mapping[str, list[str]]


class ApiError(Exception):
    """An HTTP error with a JSON body ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Cockpit:
    """What every handler needs: the store and a few caches."""

    store: Store
    guide_cache: dict[str, Any] = field(default_factory=dict)


# ---- query parsing ------------------------------------------------------------------------------


def q_str(query: Query, name: str, default: str | None = None) -> str | None:
    vals = query.get(name)
    return vals[-1] if vals else default


def q_int(query: Query, name: str, default: int | None = None, lo: int | None = None,
          hi: int | None = None) -> int | None:
    raw = q_str(query, name)
    if raw is None or raw == "":
        return default
    try:
        val = int(raw)
    except ValueError:
        raise ApiError(400, f"query parameter {name!r} must be an integer, got {raw!r}") from None
    if lo is not None and val < lo:
        raise ApiError(400, f"query parameter {name!r} must be >= {lo}, got {val}")
    return min(val, hi) if hi is not None else val


def q_list(query: Query, name: str) -> list[str]:
    """Comma-separated and/or repeated parameter (``keys=a,b&keys=c``)."""
    out: list[str] = []
    for raw in query.get(name, []):
        out.extend(p for p in raw.split(",") if p)
    return out


def _run(ctx: Cockpit, run_id: str) -> dict[str, Any]:
    try:
        return ctx.store.get_run(run_id)
    except KeyError as exc:
        raise ApiError(404, str(exc.args[0] if exc.args else exc)) from None


# ---- runs ---------------------------------------------------------------------------------------


def _finding_counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    counts = {"critical": 0, "warning": 0, "info": 0}
    for f in findings:
        if f.get("resolved") or f.get("status") == "resolved":
            continue
        sev = f.get("severity") if f.get("severity") in counts else "info"
        counts[sev] += 1
    return counts


def run_row(ctx: Cockpit, run: dict[str, Any]) -> dict[str, Any]:
    """A run as one line of the runs list (no config, no full summary)."""
    return analysis.clean_json({
        "id": run["id"], "name": run["name"], "project": run["project"], "group": run.get("group"),
        "tags": run.get("tags") or [], "status": run["status"], "created_at": run.get("created_at"),
        "updated_at": run.get("updated_at"), "heartbeat_at": run.get("heartbeat_at"),
        "finished_at": run.get("finished_at"), "last_step": run.get("last_step"),
        "exit_code": run.get("exit_code"), "metrics": analysis.key_metrics(run.get("summary") or {}),
        "findings": _finding_counts(ctx.store.findings(run["id"])),
    })


def list_runs(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    project = q_str(query, "project") or None
    text = (q_str(query, "q") or "").strip().lower()
    status = q_str(query, "status") or None
    group = q_str(query, "group") or None
    runs = ctx.store.list_runs(project)
    rows = []
    for r in runs:
        if status and r["status"] != status:
            continue
        if group and r.get("group") != group:
            continue
        if text:
            hay = " ".join([r["id"], r["name"], r.get("group") or "", *(r.get("tags") or [])]).lower()
            if text not in hay:
                continue
        rows.append(run_row(ctx, r))
    return {"runs": rows, "metric_columns": list(analysis.KEY_METRICS), "now": time.time()}


def list_projects(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in ctx.store.list_runs():
        counts[r["project"]] = counts.get(r["project"], 0) + 1
    return {"projects": [{"name": k, "runs": v} for k, v in sorted(counts.items())]}


def get_run(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """Everything the run page needs except metric points: run row, keys by panel, markers."""
    run = _run(ctx, params["run"])
    rid = run["id"]
    keys = ctx.store.keys(rid)
    findings = ctx.store.findings(rid)
    events = ctx.store.events(rid)
    return analysis.clean_json({
        "run": {k: run.get(k) for k in (
            "id", "name", "project", "group", "tags", "status", "stored_status", "config", "summary", "meta",
            "notes", "created_at", "updated_at", "heartbeat_at", "finished_at", "exit_code", "last_step")},
        "groups": analysis.group_keys(keys),
        "findings": findings,
        "finding_counts": _finding_counts(findings),
        "events": events,
        "sample_steps": ctx.store.sample_steps(rid),
        "reward_key": analysis.find_key(keys, analysis.REWARD_KEYS),
        "kl_key": analysis.find_key(keys, analysis.KL_KEYS),
        "now": time.time(),
    })


def get_series(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """Points of several keys. ``since=S`` returns only points with step > S (live updates);
    otherwise ``start``/``end`` bound the step range and ``max_points`` downsamples (extremes kept)."""
    run = _run(ctx, params["run"])
    rid = run["id"]
    keys = q_list(query, "keys")
    if not keys:
        raise ApiError(400, "query parameter 'keys' is required (comma-separated metric keys)")
    if len(keys) > MAX_KEYS_PER_REQUEST:
        raise ApiError(400, f"at most {MAX_KEYS_PER_REQUEST} keys per request, got {len(keys)}")
    max_points = q_int(query, "max_points", DEFAULT_MAX_POINTS, lo=4, hi=MAX_MAX_POINTS)
    since = q_int(query, "since")
    start = q_int(query, "start")
    end = q_int(query, "end")
    fmt = q_str(query, "format", "json")
    if fmt not in ("json", "b64"):
        raise ApiError(400, f"query parameter 'format' must be 'json' or 'b64', got {fmt!r}")
    if since is not None:
        start = since + 1 if start is None else max(start, since + 1)
    out: dict[str, Any] = {}
    for key in keys:
        steps, vals, ts = ctx.store.series(rid, key, start_step=start, end_step=end, max_points=max_points)
        out[key] = analysis.series_payload(steps, vals, ts, binary=fmt == "b64")
    return {"run": rid, "status": run["status"], "last_step": run.get("last_step"), "since": since,
            "series": out, "finding_count": None if since is None else len(ctx.store.findings(rid)),
            "event_count": None if since is None else len(ctx.store.events(rid))}


def get_findings(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    run = _run(ctx, params["run"])
    return analysis.clean_json({"findings": ctx.store.findings(run["id"])})


def get_events(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    run = _run(ctx, params["run"])
    return analysis.clean_json({"events": ctx.store.events(run["id"], q_str(query, "kind") or None)})


# ---- samples ------------------------------------------------------------------------------------


def get_samples(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """One page of samples (default: the latest step with samples), with repeated spans marked."""
    run = _run(ctx, params["run"])
    rid = run["id"]
    steps = ctx.store.sample_steps(rid)
    text = (q_str(query, "q") or "").strip() or None
    all_steps = q_str(query, "step") == "all"
    step = None if all_steps else q_int(query, "step")
    if step is None and not all_steps and not text and steps:
        step = steps[-1]
    limit = q_int(query, "limit", 100, lo=1, hi=MAX_SAMPLES_PER_PAGE)
    offset = q_int(query, "offset", 0, lo=0)
    rows = ctx.store.samples(rid, step, limit=limit + 1, offset=offset, query=text)
    more = len(rows) > limit
    rows = analysis.annotate_samples(rows[:limit])
    return {"run": rid, "steps": steps, "step": step, "query": text, "offset": offset, "more": more,
            "columns": analysis.sample_columns(rows), "rows": rows}


def compare_samples(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """The same prompts' responses at steps ``a`` and ``b``."""
    run = _run(ctx, params["run"])
    a, b = q_int(query, "a"), q_int(query, "b")
    if a is None or b is None:
        raise ApiError(400, "query parameters 'a' and 'b' (two sample steps) are required")
    limit = q_int(query, "limit", 50, lo=1, hi=MAX_SAMPLES_PER_PAGE)
    rows_a = analysis.annotate_samples(ctx.store.samples(run["id"], a, limit=2000))
    rows_b = analysis.annotate_samples(ctx.store.samples(run["id"], b, limit=2000))
    pairs = analysis.pair_by_prompt(rows_a, rows_b)
    return {"run": run["id"], "a": a, "b": b, "pairs": pairs[:limit], "total": len(pairs)}


# ---- diagnosis ----------------------------------------------------------------------------------


def _health_fn(name: str) -> Callable[..., Any] | None:
    for mod_name in DIAGNOSIS_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except Exception:  # noqa: BLE001 - the health engine is optional here
            continue
        fn = getattr(mod, name, None)
        if callable(fn):
            return fn
    return None


def _collect_overrides(obj: Any, key: str, out: list[str]) -> None:
    """Every string list found under ``key`` anywhere in ``obj`` (actions of findings and root cause)."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if k == key and isinstance(v, list):
                out.extend(str(x) for x in v if str(x) not in out)
            else:
                _collect_overrides(v, key, out)
    elif isinstance(obj, list):
        for v in obj:
            _collect_overrides(v, key, out)


def diagnose(ctx: Cockpit, run_id: str) -> tuple[dict[str, Any], str, str | None]:
    """``(diagnosis, source, engine_error)``: the health engine's when importable, else stored findings."""
    fn = _health_fn("diagnose_run")
    error = None
    if fn is not None:
        try:
            return dict(fn(ctx.store, run_id)), "engine", None
        except Exception as exc:  # noqa: BLE001 - show stored findings rather than a blank page
            error = f"{type(exc).__name__}: {exc}"
    run = ctx.store.get_run(run_id)
    return {"run": run_id, "run_name": run["name"], "findings": ctx.store.findings(run_id),
            "root_cause": None}, "stored", error


def get_diagnosis(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    run = _run(ctx, params["run"])
    diag, source, error = diagnose(ctx, run["id"])
    overrides: list[str] = []
    verl: list[str] = []
    merged = diag.get("overrides")
    if isinstance(merged, dict):  # the health engine's one merged set: one value per key
        overrides, verl = list(merged.get("apply") or []), list(merged.get("verl") or [])
    else:
        _collect_overrides(diag.get("root_cause"), "overrides", overrides)
        _collect_overrides(diag.get("findings"), "overrides", overrides)
        _collect_overrides(diag.get("root_cause"), "verl_overrides", verl)
        _collect_overrides(diag.get("findings"), "verl_overrides", verl)
    return analysis.clean_json({"run": run["id"], "source": source, "engine_error": error, "diagnosis": diag,
                                "overrides": overrides, "verl_overrides": verl,
                                "html_report": _health_fn("render_html_report") is not None})


def report_html(ctx: Cockpit, run_id: str) -> str:
    """The health engine's HTML report (served sandboxed by the server); 404 if the engine lacks one."""
    run = _run(ctx, run_id)
    fn = _health_fn("render_html_report")
    if fn is None:
        raise ApiError(404, "the health engine's HTML report is not available in this install")
    diag, _source, _err = diagnose(ctx, run["id"])
    return str(fn(diag, ctx.store, run["id"]))


# ---- compare, guide -----------------------------------------------------------------------------


def compare(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """Selected runs side by side: their keys, overlaid series of ``keys``, reward-vs-KL paths, config diff."""
    ids = q_list(query, "runs")
    if not ids:
        raise ApiError(400, "query parameter 'runs' is required (comma-separated run ids)")
    if len(ids) > 20:
        raise ApiError(400, f"at most 20 runs can be compared, got {len(ids)}")
    runs = [_run(ctx, r) for r in ids]
    keys = q_list(query, "keys")
    max_points = q_int(query, "max_points", 800, lo=4, hi=MAX_MAX_POINTS)
    out_runs = []
    for run in runs:
        rid = run["id"]
        run_keys = ctx.store.keys(rid)
        series = {}
        for key in keys:
            if key in run_keys:
                series[key] = analysis.series_payload(*ctx.store.series(rid, key, max_points=max_points),
                                                      binary=q_str(query, "format") == "b64")
        kl_key = analysis.find_key(run_keys, analysis.KL_KEYS)
        reward_key = analysis.find_key(run_keys, analysis.REWARD_KEYS)
        path = None
        if kl_key and reward_key:
            kx = ctx.store.series(rid, kl_key)
            ry = ctx.store.series(rid, reward_key)
            path = {"x_key": kl_key, "y_key": reward_key, **analysis.xy_path(kx[:2], ry[:2])}
        out_runs.append({"id": rid, "name": run["name"], "status": run["status"], "group": run.get("group"),
                         "keys": [k for k in run_keys if not k.startswith("system/")] if not keys else None,
                         "series": series, "path": path})
    union = sorted({k for r in out_runs for k in (r["keys"] or [])})
    return analysis.clean_json({"runs": out_runs, "keys": union,
                                "config_diff": analysis.config_diff([r.get("config") or {} for r in runs])})


def get_guide(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    """The metric guide (``guide_as_dict``), or an empty guide while it is unavailable."""
    lang = q_str(query, "lang", "en") or "en"
    if lang not in ("en", "zh"):
        raise ApiError(400, f"query parameter 'lang' must be 'en' or 'zh', got {lang!r}")
    if lang not in ctx.guide_cache:
        try:
            from rlcockpit.metrics.guide import guide_as_dict

            ctx.guide_cache[lang] = analysis.clean_json(guide_as_dict(lang))
        except Exception as exc:  # noqa: BLE001 - the dashboard works without tooltips
            return {"version": 1, "lang": lang, "entries": {}, "aliases": {}, "patterns": [],
                    "unavailable": f"{type(exc).__name__}: {exc}"}
    return ctx.guide_cache[lang]


def get_health(ctx: Cockpit, params: dict[str, str], query: Query) -> dict[str, Any]:
    from rlcockpit import __version__

    return {"ok": True, "version": __version__, "store": str(getattr(ctx.store, "dir", ""))}


# ---- routing ------------------------------------------------------------------------------------

Handler = Callable[[Cockpit, dict[str, str], Query], Any]
_RUN = r"(?P<run>[^/]+)"
ROUTES: list[tuple[re.Pattern[str], Handler]] = [
    (re.compile(p), h) for p, h in [
        (r"^/api/health$", get_health),
        (r"^/api/projects$", list_projects),
        (r"^/api/runs$", list_runs),
        (rf"^/api/runs/{_RUN}$", get_run),
        (rf"^/api/runs/{_RUN}/series$", get_series),
        (rf"^/api/runs/{_RUN}/findings$", get_findings),
        (rf"^/api/runs/{_RUN}/events$", get_events),
        (rf"^/api/runs/{_RUN}/samples$", get_samples),
        (rf"^/api/runs/{_RUN}/samples/compare$", compare_samples),
        (rf"^/api/runs/{_RUN}/diagnosis$", get_diagnosis),
        (r"^/api/compare$", compare),
        (r"^/api/guide$", get_guide),
    ]
]
REPORT_ROUTE = re.compile(rf"^/api/runs/{_RUN}/report\.html$")


def resolve(path: str) -> tuple[Handler, dict[str, str]] | None:
    """The handler and path parameters for ``path`` (already percent-decoded per segment)."""
    for rx, handler in ROUTES:
        m = rx.match(path)
        if m:
            return handler, m.groupdict()
    return None
