"""The team server: the dashboard (the same pages, :func:`rlcockpit.ui.app.create_app`) for every project a
user may read, plus the ingestion API and the team routes, behind :class:`~rlcockpit.server.guard.TeamGuard`.

Composition: the team routes live on an outer FastAPI app; the dashboard app is mounted under it at
``/`` (so every dashboard route keeps its path) with an ``Auth`` that hands it the principal the guard
already established — one authentication per request, one set of rules. The dashboard's own pages
are served unchanged, with the team front-end (KPI target lines, leaderboard, saved views, sample
ratings: ``server/static/team.js``) added to ``index.html`` by one script tag.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.requests import HTTPConnection
from starlette.responses import Response

from rlcockpit.server import routes_ingest, routes_team
from rlcockpit.server import schema as _schema  # noqa: F401 - registers the team tables
from rlcockpit.server.accounts import Accounts
from rlcockpit.server.guard import Limits, TeamGuard
from rlcockpit.server.kpi import TEAM_USER_META, Kpis
from rlcockpit.server.state import TeamState
from rlcockpit.store.postgres.store import PostgresStore
from rlcockpit.ui.app import STATIC_DIR, create_app
from rlcockpit.ui.params import JSON, ApiError
from rlcockpit.ui.security import Principal, is_loopback
from rlcockpit.ui.server import Timeouts, bind_socket, protocol_class
from rlcockpit.version import __version__

logger = logging.getLogger("rlcockpit.server")
TEAM_STATIC = Path(__file__).resolve().parent / "static"


class ScopeAuth:
    """The dashboard's ``Auth``: the principal :class:`TeamGuard` put in the request scope."""

    def authenticate(self, conn: HTTPConnection) -> Principal | None:
        return conn.scope.get("state", {}).get("principal")


class ProjectAlerts:
    """Alert managers per project, built from the project's channels (``PUT /api/team/projects/P/alerts``)
    or the server's ``--alerts`` file for projects without their own."""

    def __init__(self, store: PostgresStore, default: Any = None, dashboard_url: str | None = None) -> None:
        self.store, self.default, self.dashboard_url = store, default, dashboard_url
        self._managers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def forget(self, project: str) -> None:
        with self._lock:
            mgr = self._managers.pop(project, None)
        if mgr is not None:
            mgr.close(0.5)

    def _manager(self, project: str) -> Any:
        from rlcockpit.alerts.config import load_alerts_config
        from rlcockpit.alerts.manager import AlertManager

        with self._lock:
            if project in self._managers:
                return self._managers[project]
            rows = self.store._query("SELECT config FROM project_alerts WHERE project = %s", (project,))
            section = json.loads(rows[0][0]) if rows else self.default
            mgr = None
            if section:
                config = load_alerts_config(section, env={})
                if self.dashboard_url and not config.dashboard_url:
                    config.dashboard_url = self.dashboard_url
                mgr = AlertManager(config, store=self.store, project=project).start()
            self._managers[project] = mgr
            return mgr

    def __call__(self, project: str, title: str, text: str, level: str, run_id: str, step: int) -> None:
        from rlcockpit.alerts.message import AlertMessage

        mgr = self._manager(project)
        if mgr is None:
            return
        mgr.run_id = run_id
        mgr.notify(AlertMessage(title=title, text=text, level=level, kind="kpi", project=project, run_id=run_id,
                                step=step, key=f"kpi:{run_id}:{title}"))


def _index() -> bytes:
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    tags = ('<link rel="stylesheet" href="/team-static/team.css">\n'
            '<script type="module" src="/team-static/team.js"></script>\n')
    return html.replace("</head>", tags + "</head>", 1).encode()


def create_team_app(store: PostgresStore, *, loopback: bool, limits: Limits | None = None,
                    alerts: Any = None, dashboard_url: str | None = None, local_admin: bool = False) -> FastAPI:
    """The team server's ASGI app over ``store`` (see the module doc). ``local_admin``: requests without a
    token act as the server admin (loopback binds only; ``rlcockpit server --local-admin``)."""
    accounts = Accounts(store)
    store.server_meta = (*store.server_meta, TEAM_USER_META)  # set from the token at creation, never by a client
    project_alerts = ProjectAlerts(store, alerts, dashboard_url)
    app = FastAPI(title="rlcockpit team server", version=__version__, openapi_url="/api/team/openapi.json",
                  docs_url=None, redoc_url=None, default_response_class=JSON)
    app.state.team = TeamState(store=store, accounts=accounts, kpis=Kpis(store, project_alerts),
                               limits=limits or Limits(), dashboard_url=dashboard_url)
    app.state.team_alerts = project_alerts

    @app.exception_handler(ApiError)
    async def api_error(request: Any, exc: ApiError) -> Response:
        return JSON({"error": exc.message}, status_code=exc.status)

    app.include_router(routes_ingest.router)
    app.include_router(routes_team.router)

    @app.get("/", include_in_schema=False)
    @app.get("/index.html", include_in_schema=False)
    def index() -> Response:
        return Response(_index(), media_type="text/html; charset=utf-8")

    @app.get("/api/health", include_in_schema=False)
    def health() -> Response:
        """The dashboard's health answer without the store's location: on a team server that is the database's
        address (host, port, user, database), which no caller needs."""
        return JSON({"ok": True, "version": __version__, "store": "postgresql"})

    @app.get("/team-static/{name}", include_in_schema=False)
    def team_static(name: str) -> Response:
        target = TEAM_STATIC / name
        if "/" in name or name.startswith(".") or not target.is_file():
            return JSON({"error": "no such file"}, status_code=404)
        kind = "text/javascript" if name.endswith(".js") else "text/css"
        return Response(target.read_bytes(), media_type=f"{kind}; charset=utf-8")

    dashboard = create_app(store, auth=ScopeAuth(), check_host=False)
    app.mount("/", dashboard)
    app.add_middleware(TeamGuard, accounts=accounts, loopback=loopback, limits=app.state.team.limits,
                       local_admin=local_admin)
    return app


class TeamServer:
    """A bound team server (``url``); ``serve_forever()`` or :meth:`serve_in_thread`, then ``shutdown()``."""

    def __init__(self, db: str, host: str = "127.0.0.1", port: int = 6008, *, pool_size: int = 32,
                 limits: Limits | None = None, alerts: Any = None, dashboard_url: str | None = None,
                 timeouts: Timeouts | None = None, local_admin: bool = False) -> None:
        if local_admin and not is_loopback(host):
            raise ValueError(f"--local-admin needs a loopback --host (got {host!r}): off loopback every request "
                             "needs a token")
        self.store = PostgresStore(db, pool_size=pool_size, compaction="background")
        self._stopping = threading.Event()
        self._compactor = threading.Thread(target=self._compact_loop, name="rlcockpit-compactor", daemon=True)
        self._compactor.start()
        self.loopback = is_loopback(host)
        self.local_admin = local_admin
        self.app = create_team_app(self.store, loopback=self.loopback, limits=limits, alerts=alerts,
                                   dashboard_url=dashboard_url, local_admin=local_admin)
        t = timeouts or Timeouts()
        self.socket = bind_socket(host, port, t.backlog)
        self.server_address = self.socket.getsockname()[:2]
        config = uvicorn.Config(self.app, http=protocol_class(t), lifespan="off", access_log=False,
                                log_level="warning", timeout_keep_alive=t.keep_alive_s, backlog=t.backlog,
                                timeout_graceful_shutdown=t.graceful_shutdown_s, server_header=False,
                                date_header=False)
        self._uvicorn = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def _compact_loop(self) -> None:
        """Merge small chunks off the ingest path (see :meth:`PostgresStore.compact_due`)."""
        while not self._stopping.wait(1.0):
            try:
                self.store.compact_due()
            except Exception as exc:  # noqa: BLE001 - the database may be down; try again later
                logger.debug("compaction skipped: %s", exc)

    @property
    def url(self) -> str:
        host, port = self.server_address
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{f'[{shown}]' if ':' in str(shown) else shown}:{port}"

    @property
    def team(self) -> TeamState:
        return self.app.state.team

    def serve_forever(self) -> None:
        asyncio.run(self._uvicorn.serve(sockets=[self.socket]))

    def serve_in_thread(self, timeout: float = 20.0) -> TeamServer:
        self._thread = threading.Thread(target=self.serve_forever, name="rlcockpit-team", daemon=True)
        self._thread.start()
        ev = threading.Event()
        for _ in range(int(timeout / 0.01)):
            if self._uvicorn.started:
                return self
            ev.wait(0.01)
        raise RuntimeError(f"the team server did not start within {timeout} s")

    def shutdown(self) -> None:
        self._stopping.set()
        self._uvicorn.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)
        self.socket.close()
        self.store.close()
