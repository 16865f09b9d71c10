"""Fixtures for the integration tests: the .venv-verl interpreter and a loopback webhook receiver."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from integrations_support import VERL_PY

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")


@pytest.fixture
def verl_python() -> Path:
    if not VERL_PY.exists():
        pytest.skip(".venv-verl is absent: run scripts/setup_verl_env.sh to test against the real verl package")
    return VERL_PY


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            self.server.received.append(json.loads(body))  # type: ignore[attr-defined]
        except ValueError:
            self.server.received.append({"raw": body.decode("utf-8", "replace")})  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"ok": true}')

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def webhook():
    """A real HTTP server on 127.0.0.1 collecting POSTed JSON bodies in ``server.received``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received = []  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()
