"""Defect 7: channels named by environment variables do not turn alerts on by themselves; once alerts
are enabled (``init(alerts=True)`` or an ``alerts`` section), those channels are used."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture
def hook():
    received: list = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            received.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/h", received
    server.shutdown()
    server.server_close()


def test_env_channels_alone_send_nothing(start, hook, monkeypatch) -> None:
    url, received = hook
    monkeypatch.setenv("RLCOCKPIT_WEBHOOK_URL", url)
    run = start()
    run.alert("manual", "should not be sent")
    run.finish(1)
    time.sleep(0.5)
    assert received == []


def test_env_channels_are_used_once_alerts_are_enabled(start, hook, monkeypatch) -> None:
    url, received = hook
    monkeypatch.setenv("RLCOCKPIT_WEBHOOK_URL", url)
    run = start(alerts=True)
    run.alert("manual", "sent through the env channel")
    run.finish()
    deadline = time.monotonic() + 10
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(r.get("title") == "manual" for r in received), received
