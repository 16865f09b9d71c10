"""Real loopback servers for alert tests: a recording HTTP server with scripted failures, and SMTP."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class Recorder:
    """What the HTTP server received, and how it should answer (``script``: list of behaviours
    consumed one per request, then ``default``). Behaviours: ``ok``, ``500``, ``hang``, or a
    ``(status, body)`` tuple."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list = []
        self.default = "ok"
        self.hang_s = 3.0
        self.reply_body = b"ok"
        self.cv = threading.Condition()

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict]:
        end = time.monotonic() + timeout
        with self.cv:
            while len(self.requests) < n and time.monotonic() < end:
                self.cv.wait(0.05)
        return list(self.requests)

    def bodies(self) -> list[dict]:
        return [r["json"] for r in self.requests]


def _make_handler(rec: Recorder):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with rec.cv:
                behaviour = rec.script.pop(0) if rec.script else rec.default
            if behaviour == "hang":
                time.sleep(rec.hang_s)
            parsed = urllib.parse.urlsplit(self.path)
            entry = {"path": parsed.path, "query": urllib.parse.parse_qs(parsed.query), "raw_query": parsed.query,
                     "headers": dict(self.headers), "body": body, "behaviour": behaviour, "t": time.time()}
            try:
                entry["json"] = json.loads(body)
            except ValueError:
                entry["json"] = None
            if behaviour == "hang":
                return  # the client has timed out; the entry is not counted as delivered
            with rec.cv:
                rec.requests.append(entry)
                rec.cv.notify_all()
            if behaviour == "500":
                status, out = 500, b"internal error"
            elif isinstance(behaviour, tuple):
                status, out = behaviour
            else:
                status, out = 200, rec.reply_body
            self.send_response(status)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    return Handler


@pytest.fixture
def http_server():
    """(base_url, Recorder): a ThreadingHTTPServer on 127.0.0.1:<free port>."""
    rec = Recorder()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(rec))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", rec
    finally:
        server.shutdown()
        server.server_close()


class MailSink:
    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.cv = threading.Condition()

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd hook name
        with self.cv:
            self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos),
                                  "data": envelope.content.decode("utf-8", "replace")})
            self.cv.notify_all()
        return "250 OK"

    def wait_for(self, n: int, timeout: float = 10.0) -> list[dict]:
        end = time.monotonic() + timeout
        with self.cv:
            while len(self.messages) < n and time.monotonic() < end:
                self.cv.wait(0.05)
        return list(self.messages)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unused_port() -> int:
    return free_port()


@pytest.fixture
def smtp_server():
    """(host, port, MailSink): an aiosmtpd server on loopback."""
    from aiosmtpd.controller import Controller

    sink = MailSink()
    port = free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield "127.0.0.1", port, sink
    finally:
        controller.stop()
