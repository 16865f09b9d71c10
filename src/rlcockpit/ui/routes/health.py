"""Routes over the health engine and the metric guide: diagnosis, the sandboxed HTML report, the guide.

The health engine is imported directly: a broken or moved health function must fail loudly (a test
fails) instead of the dashboard quietly hiding the report. Only a diagnosis that *raises at run time*
(e.g. a stored run the replay cannot read) falls back to the stored findings, with the error shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from rlcockpit.health.diagnosis.diagnose import diagnose_run
from rlcockpit.health.diagnosis.report import render_html_report
from rlcockpit.metrics.guide import guide_as_dict
from rlcockpit.ui import analysis
from rlcockpit.ui.i18n import localize_diagnosis
from rlcockpit.ui.params import JSON, Cockpit, LangQ, cockpit
from rlcockpit.ui.routes.runs import visible_run
from rlcockpit.ui.security import REPORT_CSP

router = APIRouter(prefix="/api", tags=["health"])
Ctx = Annotated[Cockpit, Depends(cockpit)]


def _collect(obj: Any, key: str, out: list[str]) -> None:
    """Every string list found under ``key`` anywhere in ``obj`` (actions of findings and root cause)."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if k == key and isinstance(v, list):
                out.extend(str(x) for x in v if str(x) not in out)
            else:
                _collect(v, key, out)
    elif isinstance(obj, list):
        for v in obj:
            _collect(v, key, out)


def diagnose(ctx: Cockpit, run_id: str) -> tuple[dict[str, Any], str, str | None]:
    """``(diagnosis, source, engine_error)``: the health engine's, or the stored findings if it raised."""
    try:
        return dict(diagnose_run(ctx.store, run_id)), "engine", None
    except Exception as exc:  # noqa: BLE001 - show stored findings rather than a blank page
        error = f"{type(exc).__name__}: {exc}"
    run = ctx.store.get_run(run_id)
    return {"run": run_id, "run_name": run["name"], "findings": ctx.store.findings(run_id),
            "root_cause": None}, "stored", error


@router.get("/runs/{run}/diagnosis", summary="Diagnosis: root-cause chain, findings, overrides to copy")
def get_diagnosis(ctx: Ctx, request: Request, run: str, lang: LangQ = "en") -> JSON:
    r = visible_run(ctx, request, run)
    diag, source, error = diagnose(ctx, r["id"])
    diag = localize_diagnosis(analysis.clean_json(diag), lang)  # numbers, keys and overrides stay as they are
    overrides: list[str] = []
    verl: list[str] = []
    merged = diag.get("overrides")
    if isinstance(merged, dict):  # the engine's one merged set: one value per key, in the run's vocabulary
        overrides, verl = list(merged.get("apply") or []), list(merged.get("verl") or [])
    else:
        for part in (diag.get("root_cause"), diag.get("findings")):
            _collect(part, "overrides", overrides)
            _collect(part, "verl_overrides", verl)
    return JSON(analysis.clean_json({"run": r["id"], "source": source, "engine_error": error, "diagnosis": diag,
                                     "overrides": overrides, "verl_overrides": verl, "html_report": True}))


@router.get("/runs/{run}/report.html", summary="The health engine's HTML report (served sandboxed)",
            response_class=Response, responses={200: {"content": {"text/html": {}}}})
def get_report(ctx: Ctx, request: Request, run: str) -> Response:
    r = visible_run(ctx, request, run)
    diag, _source, _err = diagnose(ctx, r["id"])
    html = str(render_html_report(diag, ctx.store, r["id"]))
    return Response(html.encode("utf-8"), media_type="text/html; charset=utf-8",
                    headers={"content-security-policy": REPORT_CSP, "cache-control": "no-store"})


@router.get("/guide", summary="The metric guide (titles, meanings, healthy ranges) for tooltips, en or zh")
def get_guide(ctx: Ctx, lang: Annotated[Literal["en", "zh"], Query(description="en or zh")] = "en") -> JSON:
    if lang not in ctx.guide_cache:
        ctx.guide_cache[lang] = analysis.clean_json(guide_as_dict(lang))
    return JSON(ctx.guide_cache[lang], headers={"cache-control": "no-cache"})
