"""Serving the dashboard: uvicorn with a real listen backlog and per-connection timeouts.

Why not uvicorn's defaults alone: uvicorn arms no timer while a connection sends its request, so a
client that opens a socket and trickles (or never sends) its headers holds it forever; and it has no
bound on how long a response may wait for a client that stops reading. :class:`TimedH11Protocol`
adds both: ``request_timeout_s`` from accepting a connection (or from the first byte of a
keep-alive request) until the whole request is in, and ``write_timeout_s`` while the client does not
drain what we send. Idle keep-alive connections close after ``keep_alive_s`` (uvicorn's own timer).
The socket is bound here (``make_server`` returns before serving, so callers know the port) and
listens with ``backlog`` (2048, like uvicorn; the stdlib server it replaced used 5, which made 200
parallel clients wait seconds for SYN retransmits).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

try:  # uvicorn's optional C parser (uvicorn[standard]); without it the pure-Python h11 protocol serves
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:
    HttpToolsProtocol = None

from rlcockpit.store import open_store
from rlcockpit.store.base import Store
from rlcockpit.ui.app import create_app, resolve_static  # noqa: F401 - resolve_static re-exported
from rlcockpit.ui.params import Cockpit
from rlcockpit.ui.security import Auth, TokenAuth, is_loopback
from rlcockpit.ui.workers import supervise

DEFAULT_PORT = 6007


@dataclass(frozen=True)
class Timeouts:
    """Per-connection limits (seconds)."""

    request_timeout_s: float = 10.0
    write_timeout_s: float = 30.0
    keep_alive_s: float = 5.0
    backlog: int = 2048
    graceful_shutdown_s: float = 2.0


class _Deadlines:
    """A request deadline and a write deadline for one of uvicorn's HTTP protocols (see the module doc);
    the protocol says when a whole request is in (:meth:`_request_in`)."""

    timeouts = Timeouts()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._request_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        self._arm_request_timer()

    def _request_in(self) -> bool:
        raise NotImplementedError

    def _arm_request_timer(self) -> None:
        if self._request_timer is None:
            self._request_timer = self.loop.call_later(self.timeouts.request_timeout_s, self._request_timed_out)

    def _cancel(self, name: str) -> None:
        timer = getattr(self, name, None)
        if timer is not None:
            timer.cancel()
            setattr(self, name, None)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._request_in():
            self._cancel("_request_timer")  # the whole request is in: the app's turn
        elif not self.transport.is_closing():
            self._arm_request_timer()  # a request is (still) arriving; the deadline is not moved

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if self.transport.is_closing() or self._request_in():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.abort()  # it never finished sending a request: nothing to answer

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._cancel("_request_timer")  # idle keep-alive now: uvicorn's keep-alive timer applies

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.timeouts.write_timeout_s, self._write_timed_out)

    def resume_writing(self) -> None:
        super().resume_writing()  # type: ignore[misc]
        self._cancel("_write_timer")

    def _write_timed_out(self) -> None:
        self._write_timer = None
        if not self.transport.is_closing():
            self.transport.abort()  # the client stopped reading: free the connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel("_request_timer")
        self._cancel("_write_timer")
        super().connection_lost(exc)  # type: ignore[misc]


class TimedH11Protocol(_Deadlines, H11Protocol):
    """uvicorn's h11 protocol (pure Python) with the deadlines: used when httptools is not installed."""

    def _request_in(self) -> bool:
        return self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


if HttpToolsProtocol is not None:
    class TimedHttpToolsProtocol(_Deadlines, HttpToolsProtocol):
        """uvicorn's httptools protocol (C parser: ~20 % less CPU per dashboard page than h11, see BENCHMARKS.md)
        with the deadlines."""

        _whole_request = False

        def _request_in(self) -> bool:
            return self._whole_request

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._whole_request = False

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._whole_request = True


def protocol_class(timeouts: Timeouts) -> type[_Deadlines]:
    """uvicorn's HTTP protocol (httptools when installed, else h11) enforcing ``timeouts``."""
    base = TimedHttpToolsProtocol if HttpToolsProtocol is not None else TimedH11Protocol  # noqa: F821
    return type(base.__name__, (base,), {"timeouts": timeouts})


class CockpitServer:
    """A bound dashboard server: ``url``, ``token``, ``server_address``; ``serve_forever()`` or
    :func:`serve_in_thread`, then ``shutdown()`` and ``server_close()``."""

    def __init__(self, store: Store, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 token: str | None = None, verbose: bool = False, *, auth: Auth | None = None,
                 timeouts: Timeouts | None = None, live_interval_s: float = 1.0, workers: int = 1,
                 store_factory: Callable[[], Store] | None = None) -> None:
        if auth is None and token:
            auth = TokenAuth(token)
        if not is_loopback(host) and auth is None:
            raise ValueError(f"binding the dashboard to {host!r} (not loopback) requires a token")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if workers > 1 and store_factory is None:
            raise ValueError("several workers need store_factory (each worker opens its own store)")
        self.bind_host = host
        self.token = token
        self.verbose = verbose
        self.timeouts = timeouts or Timeouts()
        self.workers = workers
        self._store_factory = store_factory
        self._app_args = {"auth": auth, "check_host": is_loopback(host), "live_interval_s": live_interval_s}
        self._set_app(store)
        self.socket = bind_socket(host, port, self.timeouts.backlog)
        self.server_address = self.socket.getsockname()[:2]
        self._loop: asyncio.AbstractEventLoop | None = None
        if verbose:
            _log_requests()

    @property
    def url(self) -> str:
        host, port = self.server_address
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
        if ":" in str(shown):
            shown = f"[{shown}]"
        url = f"http://{shown}:{port}/"
        return url + (f"?token={urllib.parse.quote(self.token)}" if self.token else "")

    def _set_app(self, store: Store) -> None:
        self.app = create_app(store, **self._app_args)
        self.cockpit: Cockpit = self.app.state.cockpit
        t = self.timeouts
        config = uvicorn.Config(self.app, http=protocol_class(t), lifespan="off", access_log=False,
                                log_level="warning", timeout_keep_alive=t.keep_alive_s, backlog=t.backlog,
                                timeout_graceful_shutdown=t.graceful_shutdown_s, server_header=False,
                                date_header=False)
        self._uvicorn = uvicorn.Server(config)

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (or Ctrl+C / SIGTERM when called from the main thread); with
        ``workers > 1``, from that many forked processes (see :mod:`rlcockpit.ui.workers`)."""
        if self.workers == 1:
            asyncio.run(self._serve())
            return
        self.cockpit.store.close()  # no SQLite connection may cross the fork: each worker opens its own
        supervise(self.workers, self._serve_worker)

    def _serve_worker(self) -> None:
        assert self._store_factory is not None
        self._set_app(self._store_factory())
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._uvicorn.serve(sockets=[self.socket])

    def shutdown(self) -> None:
        """Stop serving: live streams end at once, other requests get ``graceful_shutdown_s``."""
        loop = self._loop
        if loop is not None and loop.is_running():
            loop.call_soon_threadsafe(self.cockpit.stopping.set)
        self._uvicorn.should_exit = True
        thread = getattr(self, "_thread", None)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def server_close(self) -> None:
        self.socket.close()

    @property
    def started(self) -> bool:
        return bool(self._uvicorn.started)


def bind_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (the dashboard's and the team server's HTTP servers)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, addr = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _log_requests() -> None:
    """``--verbose``: request lines (secrets masked, see :func:`rlcockpit.ui.security.redact_target`) to stderr."""
    logger = logging.getLogger("rlcockpit.ui.access")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def make_server(dir: str | None = None, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                token: str | None = None, verbose: bool = False, **kw: Any) -> CockpitServer:
    """A ready (bound, not yet serving) dashboard server for the store at ``dir``.

    A non-loopback ``host`` without ``token`` gets a generated one (read it from ``server.token``).
    Keyword arguments go to :class:`CockpitServer` (``timeouts``, ``auth``, ``live_interval_s``, ``workers``:
    processes for :meth:`~CockpitServer.serve_forever`, each with its own connection to the store).
    """
    if not is_loopback(host) and not token and kw.get("auth") is None:
        token = secrets.token_urlsafe(24)

    def open_for_reads() -> Store:
        store = open_store(dir)
        tune = getattr(store, "tune_for_reads", None)
        if callable(tune):
            tune()
        return store

    return CockpitServer(open_for_reads(), host=host, port=port, token=token, verbose=verbose,
                         store_factory=open_for_reads, **kw)


def serve_in_thread(server: CockpitServer, timeout: float = 10.0) -> threading.Thread:
    """Serve ``server`` from a daemon thread (tests, notebooks) and wait until it accepts; stop with
    ``server.shutdown()``."""
    thread = threading.Thread(target=lambda: asyncio.run(server._serve()), name="rlcockpit-ui", daemon=True)
    server._thread = thread  # type: ignore[attr-defined]
    thread.start()
    deadline = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if server.started:
            break
        deadline.wait(0.01)
    else:
        raise RuntimeError(f"the dashboard server did not start within {timeout} s")
    return thread
