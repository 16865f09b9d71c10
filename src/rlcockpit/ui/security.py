"""Everything a request passes before it reaches a route: methods, Host check, authentication, headers.

Why these rules (each is tested in ``tests/ui/test_ui_security.py``):

* Only GET and HEAD exist (405 otherwise): the dashboard never writes to the store.
* The server binds ``127.0.0.1`` by default. Binding any other address needs an :class:`Auth`
  (a :class:`TokenAuth` unless the caller brings its own, e.g. the team server's): every request,
  static files included, must pass it, otherwise 401.
* Without an ``Auth`` on loopback, the ``Host`` header must name a loopback host, so a web page on
  another origin cannot reach the store through DNS rebinding.
* Model outputs are untrusted: the CSP (``default-src 'self'``, no inline script) backs up the
  front-end's text-only rendering; the health engine's HTML report is served sandboxed.
* Request lines are logged (``--verbose``) with secret query values masked: a ``?token=`` link
  must not end up in a log file.

The guard is a plain ASGI middleware (not Starlette's ``BaseHTTPMiddleware``) so that server-sent
event streams pass through it unbuffered.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_COOKIE = "rlcockpit_token"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "[::1]"}
ALLOWED_METHODS = ("GET", "HEAD")
SECRET_QUERY_NAMES = ("token", "access_token", "api_key", "apikey", "key", "password", "secret", "auth")
access_log = logging.getLogger("rlcockpit.ui.access")
error_log = logging.getLogger("rlcockpit.ui")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (the only binds allowed without auth)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class Principal:
    """Who is asking. The local dashboard knows one anonymous user; a team server's ``Auth`` returns
    named users with their projects, which routes read from ``request.state.principal``."""

    name: str = "local"
    projects: tuple[str, ...] | None = None  # None: every project
    set_cookie: str | None = None  # token to remember in a cookie (first ``?token=`` visit)
    extra: dict[str, Any] = field(default_factory=dict)


class Auth(Protocol):
    """Decides who a request comes from; ``None`` means refused (401)."""

    def authenticate(self, conn: HTTPConnection) -> Principal | None: ...


class TokenAuth:
    """One shared token: ``Authorization: Bearer``, the ``rlcockpit_token`` cookie, or ``?token=``."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("TokenAuth needs a non-empty token")
        self.token = token

    def authenticate(self, conn: HTTPConnection) -> Principal | None:
        offered: list[tuple[str, str]] = []
        auth = conn.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            offered.append(("header", auth[7:].strip()))
        cookie = conn.cookies.get(TOKEN_COOKIE)
        if cookie is not None:
            offered.append(("cookie", urllib.parse.unquote(cookie)))
        offered.extend(("query", v) for v in conn.query_params.getlist("token"))
        for source, value in offered:
            if hmac.compare_digest(value.encode(), self.token.encode()):
                return Principal(set_cookie=value if source == "query" else None)
        return None


def redact_target(path: str, query: str) -> str:
    """``path?query`` with the values of secret-looking parameters replaced by ``***`` (for logs)."""
    if not query:
        return path
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    shown = [(k, "***" if k.lower() in SECRET_QUERY_NAMES else v) for k, v in pairs]
    return path + "?" + urllib.parse.urlencode(shown, safe="/,:*")


def host_is_loopback(host_header: str) -> bool:
    """Whether a ``Host`` header (``name[:port]`` or ``[v6]:port``) names a loopback host."""
    host = host_header.strip()
    if not host:
        return True  # HTTP/1.0 clients send none; the socket is loopback-only anyway
    name = host.split("]")[0] + "]" if host.startswith("[") else host.rsplit(":", 1)[0]
    return name.lower() in LOOPBACK_NAMES


def _json_error(status: int, message: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    import json

    body = json.dumps({"error": message}).encode()
    return status, [(b"content-type", b"application/json; charset=utf-8")], body


class Guard:
    """ASGI middleware enforcing the rules in the module docstring on every HTTP request."""

    def __init__(self, app: ASGIApp, *, auth: Auth | None, check_host: bool) -> None:
        self.app = app
        self.auth = auth
        self.check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status_box = [0]
        method = scope["method"]
        refusal = self._refusal(scope)
        head = method == "HEAD"
        principal = None if refusal else scope.get("state", {}).get("principal")
        wrapped = self._wrap_send(send, t0, head, principal, status_box)
        try:
            if refusal:
                status, headers, body = refusal
                await wrapped({"type": "http.response.start", "status": status, "headers": headers})
                await wrapped({"type": "http.response.body", "body": body})
            else:
                if head:
                    scope = dict(scope, method="GET")
                await self.app(scope, receive, wrapped)
        except Exception as exc:  # one bad request must not kill the server nor answer in HTML
            error_log.exception("error serving %s %s", method, scope.get("path"))
            if status_box[0]:
                raise
            status, headers, body = _json_error(500, f"{type(exc).__name__}: {exc}")
            await wrapped({"type": "http.response.start", "status": status, "headers": headers})
            await wrapped({"type": "http.response.body", "body": body})
        finally:
            if access_log.isEnabledFor(logging.INFO):
                client = scope.get("client") or ("-", 0)
                target = redact_target(scope.get("path", ""), scope.get("query_string", b"").decode("latin-1"))
                access_log.info('%s:%s "%s %s HTTP/%s" %s %.1fms', client[0], client[1], method, target,
                                scope.get("http_version", "1.1"), status_box[0], (time.perf_counter() - t0) * 1000)

    def _refusal(self, scope: Scope) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """A ready error response, or ``None`` when the request may proceed (principal set in scope)."""
        if scope["method"] not in ALLOWED_METHODS:
            status, headers, body = _json_error(405, f"{scope['method']} not allowed: the API is read-only")
            return status, [*headers, (b"allow", b"GET, HEAD")], body
        headers = Headers(scope=scope)
        if self.check_host and not host_is_loopback(headers.get("host", "")):
            return _json_error(403, "Host header must name a loopback host")
        principal = Principal()
        if self.auth is not None:
            found = self.auth.authenticate(HTTPConnection(scope))
            if found is None:
                status, hdrs, body = _json_error(401, "a valid token is required (?token=... or "
                                                      "Authorization: Bearer ...)")
                return status, [*hdrs, (b"www-authenticate", b"Bearer")], body
            principal = found
        scope.setdefault("state", {})["principal"] = principal
        return None

    def _wrap_send(self, send: Send, t0: float, head: bool, principal: Principal | None,
                   status_box: list[int]) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"server"]
                present = {k.lower() for k, _ in headers}
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", CSP.encode()))
                headers += [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                            (b"referrer-policy", b"no-referrer"), (b"cross-origin-resource-policy", b"same-origin"),
                            (b"server-timing", f"app;dur={(time.perf_counter() - t0) * 1000:.2f}".encode())]
                if principal is not None and principal.set_cookie:
                    value = urllib.parse.quote(principal.set_cookie, safe="")
                    headers.append((b"set-cookie", f"{TOKEN_COOKIE}={value}; Path=/; HttpOnly; "
                                                   "SameSite=Strict".encode()))
                message = dict(message, headers=headers)
            elif head and message["type"] == "http.response.body":
                message = dict(message, body=b"", more_body=False) if not message.get("more_body") else None
                if message is None:
                    return
            await send(message)

        return wrapped
