"""What every team-server request passes first: Host check, authentication, CSRF, size and rate limits.

Rules (tested in ``tests/server/test_server_security.py``):

* Every route needs a token — ``Authorization: Bearer rlc_...`` (API clients, the remote logger), or the
  ``rlcockpit_token`` cookie the browser gets from a first ``?token=`` visit. A token offered and not
  valid (unknown, revoked, expired) is refused, never ignored. Only a server started with
  ``--local-admin`` (loopback binds only) treats a request *without* a token as the local admin, like
  ``rlcockpit ui`` — and not when it carries a proxy's header (``X-Forwarded-For``, ``Forwarded``...): a
  same-host reverse proxy does not make the world local. On a loopback bind the ``Host`` header must
  name a loopback host (DNS rebinding).
* Browser writes (a cookie or the local admin, not a Bearer header) need the CSRF token: the
  ``X-CSRF-Token`` header must equal the ``rlcockpit_csrf`` cookie (double submit; the cookie is set on
  every page load, ``SameSite=Strict``), and an ``Origin`` header, when sent, must match ``Host``. The
  tokenless local admin's JSON writes (the remote logger's) pass without it: see :func:`_programmatic`.
* Ingestion is rate limited per token (requests and bytes per second, token buckets: 429 with
  ``Retry-After``) and bounded in size (413 before the body is read past the limit).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection

from rlcockpit.server.accounts import Accounts, User
from rlcockpit.store.base import StoreError
from rlcockpit.store.postgres.store import RUN_SCOPE
from rlcockpit.ui.security import CSP, TOKEN_COOKIE, Principal, host_is_loopback

logger = logging.getLogger("rlcockpit.server")
CSRF_COOKIE, CSRF_HEADER = "rlcockpit_csrf", "x-csrf-token"
UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
INGEST_PREFIX = "/api/v1/runs/"
LOCAL_ADMIN = User(id=0, name="local", is_admin=True)
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-real-ip")


@dataclass
class Limits:
    """Ingestion limits (per token, or per client address without one)."""

    max_body_bytes: int = 16 << 20
    requests_per_s: float = 100.0
    request_burst: float = 400.0
    bytes_per_s: float = 32 << 20
    byte_burst: float = 128 << 20


class Bucket:
    """A token bucket: ``take(n)`` is 0 when allowed, else the seconds to wait."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst, self.level, self.at = rate, burst, burst, time.monotonic()

    def take(self, n: float) -> float:
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.at) * self.rate)
        self.at = now
        if n <= self.level:
            self.level -= n
            return 0.0
        return (n - self.level) / self.rate


class RateLimiter:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._buckets: dict[str, tuple[Bucket, Bucket]] = {}
        self._lock = threading.Lock()

    def check(self, who: str, nbytes: int) -> float:
        """Seconds the caller must wait (0: go ahead)."""
        lim = self.limits
        with self._lock:
            pair = self._buckets.get(who)
            if pair is None:
                pair = self._buckets[who] = (Bucket(lim.requests_per_s, lim.request_burst),
                                             Bucket(lim.bytes_per_s, lim.byte_burst))
            wait = pair[0].take(1)
            if wait:
                return wait
            return pair[1].take(min(nbytes, lim.byte_burst))


def _run_scope(user: User, project: str | None) -> tuple[str, ...] | None:
    """The projects a request's run lookups (id, name, prefix) search: the caller's, narrowed to the one the
    request names with ``?project=`` (so a name means that project's run, not a namesake elsewhere)."""
    mine = user.projects()
    if not project:
        return mine
    return (project,) if mine is None or project in mine else ()


def _programmatic(headers: Headers) -> bool:
    """A write no web page can forge: a JSON body (a cross-site page cannot send one without a CORS preflight,
    which this server never grants) and no browser marking it cross-site. The tokenless remote logger of a
    ``--local-admin`` server sends exactly this."""
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    site = headers.get("sec-fetch-site", "same-origin").lower()
    origin = headers.get("origin")
    same = not origin or urllib.parse.urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
    return kind == "application/json" and site in ("same-origin", "none") and same


def _error(status: int, message: str, extra: list[tuple[bytes, bytes]] = ()) -> tuple[int, list, bytes]:
    return status, [(b"content-type", b"application/json; charset=utf-8"), *extra], json.dumps(
        {"error": message}).encode()


class TeamGuard:
    """ASGI middleware in front of the team routes and the mounted dashboard."""

    def __init__(self, app: Any, *, accounts: Accounts, loopback: bool, limits: Limits,
                 local_admin: bool = False) -> None:
        if local_admin and not loopback:
            raise ValueError("local-admin mode (tokenless requests act as the admin) needs a loopback bind")
        self.app, self.accounts, self.loopback, self.local_admin = app, accounts, loopback, local_admin
        self.limits = limits
        self.limiter = RateLimiter(limits)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cookies: list[str] = []
        refusal = await self._check(scope, cookies)
        if refusal is not None:
            status, headers, body = refusal
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        scoped = RUN_SCOPE.set(scope["state"]["run_scope"])
        try:
            await self.app(scope, self._limited(receive, scope), self._wrap(send, cookies))
        finally:
            RUN_SCOPE.reset(scoped)

    async def _check(self, scope: dict, cookies: list[str]) -> tuple[int, list, bytes] | None:
        headers = Headers(scope=scope)
        if self.loopback and not host_is_loopback(headers.get("host", "")):
            return _error(403, "Host header must name a loopback host")
        conn = HTTPConnection(scope)
        try:
            user, via, token = await self._authenticate(conn)
        except StoreError as exc:  # the database is down: retry later (never its address in the answer)
            logger.warning("authentication: %s", exc)
            return _error(503, "the team database is unavailable; retry later", [(b"retry-after", b"1")])
        if user is None:
            refusal = self._tokenless_refusal(via, token, headers)
            if refusal is not None:
                return refusal
            user, via = LOCAL_ADMIN, "local"
        if via == "query":
            cookies.append(f"{TOKEN_COOKIE}={urllib.parse.quote(token, safe='')}; Path=/; HttpOnly; SameSite=Strict")
        method = scope["method"]
        if method in UNSAFE and via != "header" and not (via == "local" and _programmatic(headers)):
            problem = self._csrf_problem(conn, headers)
            if problem:
                return _error(403, problem)
        if conn.cookies.get(CSRF_COOKIE) is None:
            cookies.append(f"{CSRF_COOKIE}={secrets.token_urlsafe(24)}; Path=/; SameSite=Strict")
        if method == "POST" and scope["path"].startswith(INGEST_PREFIX):
            size = int(headers.get("content-length") or 0)
            if size > self.limits.max_body_bytes:
                return _error(413, f"batch of {size} bytes is larger than the limit ({self.limits.max_body_bytes})")
            wait = self.limiter.check(user.token_id or user.name if via != "local" else
                                      (scope.get("client") or ("-",))[0], size)
            if wait:
                return _error(429, f"ingestion rate limit: retry in {wait:.2f}s",
                              [(b"retry-after", f"{max(wait, 0.05):.2f}".encode())])
        state = scope.setdefault("state", {})
        state["team_user"] = user
        state["run_scope"] = _run_scope(user, conn.query_params.get("project"))
        state["principal"] = Principal(name=user.name, projects=user.projects(), extra={"via": via})
        return None

    def _tokenless_refusal(self, via: str, why: str, headers: Headers) -> tuple[int, list, bytes] | None:
        """Why a request without a valid token is refused (``None``: it is the local admin of a server started
        with ``--local-admin``). A bad token is never ignored, and a request relayed by a proxy is never local."""
        bearer = [(b"www-authenticate", b"Bearer")]
        if via == "bad":
            return _error(401, f"the token is not valid ({why}): ask an admin for a new one "
                               "(rlcockpit server token USER)", bearer)
        if not self.local_admin:
            return _error(401, "a token is required: Authorization: Bearer rlc_... (or open the dashboard once with "
                               "?token=...)", bearer)
        proxied = [h for h in PROXY_HEADERS if h in headers]
        if proxied:
            return _error(401, f"a request relayed by a proxy ({proxied[0]} header) needs a token: local-admin mode "
                               "covers programs on this machine only", bearer)
        return None

    async def _authenticate(self, conn: HTTPConnection) -> tuple[User | None, str, str]:
        """``(user, via, token)`` for the first valid token offered; ``(None, "bad", why)`` when tokens were
        offered and none is valid; ``(None, "none", "")`` when none was offered."""
        offered: list[tuple[str, str]] = []
        auth = conn.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            offered.append(("header", auth[7:].strip()))
        cookie = conn.cookies.get(TOKEN_COOKIE)
        if cookie:
            offered.append(("cookie", urllib.parse.unquote(cookie)))
        offered.extend(("query", v) for v in conn.query_params.getlist("token"))
        first_why = ""
        for via, token in offered:
            user, why = await anyio.to_thread.run_sync(self.accounts.check, token)
            if user is not None:
                return user, via, token
            first_why = first_why or why
        return None, "bad" if offered else "none", first_why

    def _csrf_problem(self, conn: HTTPConnection, headers: Headers) -> str | None:
        origin = headers.get("origin")
        if origin and origin != "null":
            host = urllib.parse.urlsplit(origin).netloc
            if host.lower() != headers.get("host", "").lower():
                return f"cross-origin write refused (Origin {origin} is not this server)"
        expected = conn.cookies.get(CSRF_COOKIE)
        offered = headers.get(CSRF_HEADER)
        if not expected or not offered or not secrets.compare_digest(expected, offered):
            return "CSRF check failed: browser writes need the X-CSRF-Token header (the rlcockpit_csrf cookie)"
        return None

    def _limited(self, receive: Any, scope: dict) -> Any:
        """Refuse bodies that grow past the limit while streaming (a lying or missing Content-Length)."""
        limit, seen = self.limits.max_body_bytes, [0]

        async def wrapped() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:
                    scope.setdefault("state", {})["body_too_large"] = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        return wrapped

    def _wrap(self, send: Any, cookies: list[str]) -> Any:
        async def wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                for name, value in ((b"content-security-policy", CSP), (b"x-content-type-options", "nosniff"),
                                    (b"x-frame-options", "DENY"), (b"referrer-policy", "no-referrer"),
                                    (b"cache-control", "no-store")):
                    if name not in present:
                        headers.append((name, value.encode()))
                headers += [(b"set-cookie", c.encode()) for c in cookies]
                message = dict(message, headers=headers)
            await send(message)

        return wrapped
