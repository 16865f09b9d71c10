"""Query-parameter types, the request context and errors shared by the dashboard's routers.

Integer parameters are bounded to SQLite's 64-bit range *here*, at the edge, so that a client sending
``since=99999999999999999999`` gets a 400 naming the parameter instead of an ``OverflowError`` deep in
the store (500). FastAPI's validation errors are turned into the same ``{"error": ...}`` 400 shape as
every other bad parameter (see :func:`validation_message`).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from fastapi import Query, Request
from starlette.responses import Response

from rlcockpit.store.base import Store
from rlcockpit.ui import analysis

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DEFAULT_MAX_POINTS = 1500
MAX_MAX_POINTS = 20_000
MAX_KEYS_PER_REQUEST = 400

# Typed, bounded query parameters (documented in the generated OpenAPI document).
StepQ = Annotated[int | None, Query(ge=INT64_MIN, le=INT64_MAX)]
LangQ = Annotated[Literal["en", "zh"], Query(description="language of the diagnosis texts (rlcockpit.ui.i18n)")]
OffsetQ = Annotated[int, Query(ge=0, le=INT64_MAX, description="rows to skip")]
MaxPointsQ = Annotated[int, Query(ge=4, le=INT64_MAX, description=(
    f"downsample each series to at most this many points, keeping per-bucket min and max (capped at "
    f"{MAX_MAX_POINTS})"))]


class ApiError(Exception):
    """An HTTP error with a JSON body ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Cockpit:
    """What every route needs: the store and a few caches. One per app (no module-level state)."""

    store: Store
    guide_cache: dict[str, Any] = field(default_factory=dict)
    live_interval_s: float = 1.0  # how often a live stream reads the store
    stopping: asyncio.Event = field(default_factory=asyncio.Event)  # set on shutdown: streams end
    responses: Any = None  # rlcockpit.ui.respcache.ResponseCache: ended runs' rendered series (set by create_app)


def cockpit(request: Request) -> Cockpit:
    """FastAPI dependency: the app's :class:`Cockpit`."""
    return request.app.state.cockpit


class JSON(Response):
    """Strict JSON (NaN/Inf become ``null``), rendered in the route's worker thread; ``no-store``.

    Routes return this directly, which skips FastAPI's recursive ``jsonable_encoder`` (the dominant
    cost of a 75-series payload otherwise).
    """

    media_type = "application/json"

    def __init__(self, content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(content, status_code, {"cache-control": "no-store", **(headers or {})})

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, separators=(",", ":"), allow_nan=False)
        except ValueError:  # a NaN somewhere in stored JSON
            text = json.dumps(analysis.clean_json(content), separators=(",", ":"), allow_nan=False)
        return text.encode("ascii")  # ASCII escapes: the C encoder's fastest path (MBs of base64 per page)


def split_list(values: Sequence[str] | str | None) -> list[str]:
    """Comma-separated and/or repeated parameter (``keys=a,b&keys=c``) as one list."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for raw in values:
        out.extend(p for p in raw.split(",") if p)
    return out


def clamp_points(value: int) -> int:
    return min(int(value), MAX_MAX_POINTS)


def run_or_404(ctx: Cockpit, run_id: str) -> dict[str, Any]:
    try:
        return ctx.store.get_run(run_id)
    except KeyError as exc:
        raise ApiError(404, str(exc.args[0] if exc.args else exc)) from None


def validation_message(errors: Sequence[dict[str, Any]]) -> str:
    """One readable sentence per invalid parameter, e.g. ``query parameter 'since' must be <= 2**63-1``."""
    parts = []
    for err in errors:
        loc = [str(x) for x in err.get("loc", ())]
        where = f"{loc[0]} parameter {'.'.join(loc[1:])!r}" if len(loc) > 1 else "request"
        got = err.get("input")
        ctx = err.get("ctx") or {}
        kind = err.get("type", "")
        if kind in ("greater_than_equal", "less_than_equal"):
            bound = ctx.get("ge", ctx.get("le"))
            op = ">=" if kind == "greater_than_equal" else "<="
            shown = {INT64_MAX: "2**63-1", INT64_MIN: "-2**63"}.get(bound, bound)
            parts.append(f"{where} must be {op} {shown}, got {got!r}")
        elif kind.startswith("int"):
            parts.append(f"{where} must be an integer, got {got!r}")
        elif kind == "missing":
            parts.append(f"{where} is required")
        else:
            parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def finite_or_none(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
