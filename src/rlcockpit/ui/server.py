"""The dashboard's HTTP server: standard library only, read-only, locked down.

Why these rules:

* It binds ``127.0.0.1`` by default. Binding any other address needs a token (``--token`` or a
  generated one): every request must carry it (``Authorization: Bearer``, the ``rlcockpit_token``
  cookie set after a first ``?token=`` visit, or ``?token=``), otherwise 401.
* On loopback the ``Host`` header must name a loopback host, so a web page on another origin cannot
  reach the store through DNS rebinding.
* Only GET and HEAD exist (405 otherwise): the dashboard never writes to the store.
* Model outputs are untrusted: the CSP (``default-src 'self'``, no inline script) backs up the
  front-end's textContent-only rendering; the health engine's HTML report is served sandboxed.
* Static files are resolved inside ``static/`` only (percent-decoded ``..`` is refused).
"""

from __future__ import annotations

import hmac
import http.server
import ipaddress
import json
import secrets
import threading
import time
import urllib.parse
from http import HTTPStatus
from pathlib import Path
from typing import Any

from rlcockpit.store import open_store
from rlcockpit.store.base import Store
from rlcockpit.ui import api
from rlcockpit.ui.openapi import openapi_document

DEFAULT_PORT = 6007
STATIC_DIR = Path(__file__).resolve().parent / "static"
TOKEN_COOKIE = "rlcockpit_token"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png",
    ".ico": "image/x-icon", ".json": "application/json", ".txt": "text/plain; charset=utf-8",
}
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (the only binds allowed without a token)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class CockpitHandler(http.server.BaseHTTPRequestHandler):
    server: CockpitServer
    server_version = "rlcockpit-ui"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    # ---- methods --------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)

    def _method_not_allowed(self) -> None:
        self._send_json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"{self.command} not allowed: the API is read-only"},
                        extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _method_not_allowed  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)

    # ---- plumbing -------------------------------------------------------------------------------
    def _serve(self, head: bool) -> None:
        self._head = head
        self._t0 = time.perf_counter()
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        if not self._host_allowed():
            self._send_json(HTTPStatus.FORBIDDEN, {"error": "Host header must name a loopback host"})
            return
        set_cookie = self._check_token(query)
        if set_cookie is None:
            return
        path = split.path
        try:
            if path.startswith("/api/"):
                self._serve_api(path, query)
            elif path in ("/", "/index.html"):
                self._serve_static("index.html", set_cookie)
            elif path.startswith("/static/"):
                self._serve_static(path[len("/static/"):], set_cookie)
            elif path == "/favicon.ico":
                self._serve_static("favicon.svg", set_cookie)
            else:
                self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no route {path}"})
        except api.ApiError as exc:
            self._send_json(exc.status, {"error": exc.message})
        except BrokenPipeError:
            pass
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the server
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}"})

    def _host_allowed(self) -> bool:
        if self.server.token or not is_loopback(self.server.bind_host):
            return True  # the token protects non-loopback binds
        host = (self.headers.get("Host") or "").strip()
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        return not host or name.lower() in LOOPBACK_NAMES

    def _check_token(self, query: dict[str, list[str]]) -> str | bool | None:
        """``False``: no token needed / cookie already right; a string: token to set as a cookie;
        ``None``: refused (401 already sent)."""
        token = self.server.token
        if not token:
            return False
        offered = []
        auth = self.headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            offered.append(("header", auth[7:].strip()))
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE:
                offered.append(("cookie", value))
        for value in query.get("token", []):
            offered.append(("query", value))
        for source, value in offered:
            if hmac.compare_digest(value.encode(), token.encode()):
                return value if source == "query" else False
        self._send_json(HTTPStatus.UNAUTHORIZED, {"error": "a valid token is required (?token=... or "
                                                           "Authorization: Bearer ...)"},
                        extra={"WWW-Authenticate": "Bearer"})
        return None

    def _serve_api(self, path: str, query: dict[str, list[str]]) -> None:
        ctx = self.server.cockpit
        if path == "/api/openapi.json":
            self._send_json(HTTPStatus.OK, openapi_document())
            return
        m = api.REPORT_ROUTE.match(path)
        if m:
            html = api.report_html(ctx, urllib.parse.unquote(m.group("run")))
            self._send_bytes(HTTPStatus.OK, html.encode("utf-8"), "text/html; charset=utf-8",
                             extra={"Content-Security-Policy": REPORT_CSP})
            return
        found = api.resolve(path)
        if found is None:
            raise api.ApiError(404, f"no API route {path}")
        handler, params = found
        params = {k: urllib.parse.unquote(v) for k, v in params.items()}
        payload = handler(ctx, params, query)
        self._send_json(HTTPStatus.OK, payload)

    def _serve_static(self, rel: str, set_cookie: str | bool) -> None:
        target = resolve_static(rel)
        if target is None:
            self._send_json(HTTPStatus.NOT_FOUND, {"error": "no such file"})
            return
        extra = {"Cache-Control": "no-cache"}
        if isinstance(set_cookie, str) and set_cookie:
            extra["Set-Cookie"] = f"{TOKEN_COOKIE}={set_cookie}; Path=/; HttpOnly; SameSite=Strict"
        ctype = CONTENT_TYPES.get(target.suffix, "application/octet-stream")
        self._send_bytes(HTTPStatus.OK, target.read_bytes(), ctype, extra=extra)

    def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
        self._send_bytes(status, body, "application/json; charset=utf-8", extra=extra)

    def _send_bytes(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        elapsed_ms = (time.perf_counter() - getattr(self, "_t0", time.perf_counter())) * 1000
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        extra = dict(extra or {})
        self.send_header("Content-Security-Policy", extra.pop("Content-Security-Policy", CSP))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        if ctype.startswith("application/json"):
            self.send_header("Cache-Control", "no-store")
        self.send_header("Server-Timing", f"app;dur={elapsed_ms:.2f}")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        if not getattr(self, "_head", False):
            self.wfile.write(body)


def resolve_static(rel: str) -> Path | None:
    """The file ``rel`` names inside :data:`STATIC_DIR`, or ``None`` (missing, or escaping the folder).

    ``rel`` is percent-decoded here (repeatedly, so ``%252e`` does not survive as a second chance);
    any ``..`` segment, backslash, NUL or absolute path is refused before touching the file system.
    """
    for _ in range(3):
        decoded = urllib.parse.unquote(rel)
        if decoded == rel:
            break
        rel = decoded
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/"):
        return None
    if any(part in ("..", ".") for part in rel.split("/")):
        return None
    root = STATIC_DIR.resolve()
    target = (root / rel).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return None
    return target


class CockpitServer(http.server.ThreadingHTTPServer):
    """A ThreadingHTTPServer that carries the store context and the access token."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, store: Store, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 token: str | None = None, verbose: bool = False) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(f"binding the dashboard to {host!r} (not loopback) requires a token")
        self.bind_host = host
        self.token = token
        self.verbose = verbose
        self.cockpit = api.Cockpit(store=store)
        super().__init__((host, port), CockpitHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        if ":" in str(shown):
            shown = f"[{shown}]"
        url = f"http://{shown}:{port}/"
        return url + (f"?token={urllib.parse.quote(self.token)}" if self.token else "")


def make_server(dir: str | None = None, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                token: str | None = None, verbose: bool = False) -> CockpitServer:
    """A ready (bound, not yet serving) dashboard server for the store at ``dir``.

    A non-loopback ``host`` without ``token`` gets a generated one (read it from ``server.token``).
    """
    if not is_loopback(host) and not token:
        token = secrets.token_urlsafe(24)
    store = open_store(dir)
    tune = getattr(store, "tune_for_reads", None)
    if callable(tune):
        tune()
    return CockpitServer(store, host=host, port=port, token=token, verbose=verbose)


def serve_in_thread(server: CockpitServer) -> threading.Thread:
    """Serve ``server`` from a daemon thread (tests, notebooks); stop with ``server.shutdown()``."""
    thread = threading.Thread(target=server.serve_forever, name="rlcockpit-ui", daemon=True)
    thread.start()
    return thread
