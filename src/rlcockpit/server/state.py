"""What every team route needs: the store, accounts, KPI engine, limits and ingest figures (one per app)."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np
from fastapi import Request

from rlcockpit.server.accounts import Accounts, User
from rlcockpit.server.guard import Limits
from rlcockpit.store.postgres.store import PostgresStore
from rlcockpit.ui.params import ApiError


class IngestMetrics:
    """Latency and volume of recent ingest requests (``GET /api/v1/health``; the load bench reads it)."""

    def __init__(self, keep: int = 100_000) -> None:
        self._lat: deque[tuple[float, float, float]] = deque(maxlen=keep)  # (total, waiting for a thread, database)
        self._lock = threading.Lock()
        self.requests = 0
        self.ops = 0

    def observe(self, seconds: float, ops: int, queued_s: float = 0.0, db_s: float = 0.0) -> None:
        with self._lock:
            self._lat.append((seconds, queued_s, db_s))
            self.requests += 1
            self.ops += ops

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            lat = np.array(self._lat) if self._lat else np.zeros((1, 3))
        out: dict[str, Any] = {"requests": self.requests, "ops": self.ops}
        for i, name in enumerate(("", "queue_", "db_")):
            out[f"{name}p50_ms"] = float(np.percentile(lat[:, i], 50) * 1000)
            out[f"{name}p99_ms"] = float(np.percentile(lat[:, i], 99) * 1000)
        out["max_ms"] = float(lat[:, 0].max() * 1000)
        return out


@dataclass
class TeamState:
    store: PostgresStore
    accounts: Accounts
    kpis: Any  # rlcockpit.server.kpi.Kpis
    limits: Limits = field(default_factory=Limits)
    metrics: IngestMetrics = field(default_factory=IngestMetrics)
    dashboard_url: str | None = None
    ingest_threads: int = 12
    _limiter: Any = None

    def ingest_limiter(self) -> Any:
        """Ingest's own worker threads (and so at most this many database connections): dashboard reads use
        the default pool and never queue behind an ingest backlog."""
        if self._limiter is None:
            import anyio

            self._limiter = anyio.CapacityLimiter(self.ingest_threads)
        return self._limiter


def team(request: Request) -> TeamState:
    return request.app.state.team


def user_of(request: Request) -> User:
    """The caller :class:`~rlcockpit.server.guard.TeamGuard` authenticated (fails closed: 401 without one)."""
    user = getattr(request.state, "team_user", None)
    if user is None:
        fail(401, "not authenticated")
    return user


def fail(status: int, message: str) -> NoReturn:
    raise ApiError(status, message)


def require(user: User, project: str, role: str, *, missing: str = "such thing") -> None:
    """403 unless ``user`` has at least ``role`` in ``project``; 404 ``no {missing}`` when they may not even read
    it. ``missing`` names what the caller asked for (``project 'rl'`` when they named the project, ``view
    'x'`` for a view): never the project a resource belongs to, which a caller without a role must not learn."""
    if user.can(project, role):
        return
    if not user.can(project, "viewer"):
        fail(404, f"no {missing}")
    fail(403, f"user {user.name!r} needs the {role} role in project {project!r}")
