"""Dashboard security: read-only methods, token on non-loopback binds, CSP, Host check, path traversal."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from http.client import HTTPConnection

import pytest
from ui_helpers import base_url, http, running_server

from rlcockpit.ui import server as ui_server
from rlcockpit.ui.server import CockpitServer, make_server, resolve_static


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_write_methods_are_405(server, store_env, method: str) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    status, headers, body = http(server, f"/api/runs/{rid}", method=method, data=b"{}" if method != "OPTIONS" else None)
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    assert "read-only" in json.loads(body)["error"]
    assert http(server, f"/api/runs/{rid}")[0] == 200  # nothing was changed or deleted


def test_head_has_headers_and_no_body(server) -> None:
    status, headers, body = http(server, "/api/runs", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


def test_security_headers_on_pages_and_api(server) -> None:
    for path in ("/", "/static/js/app.js", "/api/runs"):
        status, headers, _ = http(server, path)
        assert status == 200, path
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert "unsafe-inline" not in headers["Content-Security-Policy"].split("script-src")[1].split(";")[0]
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert http(server, "/static/js/app.js")[1]["Content-Type"].startswith("text/javascript")


@pytest.mark.parametrize("path", [
    "/static/../server.py", "/static/%2e%2e/server.py", "/static/%2E%2E/%2E%2E/store/sqlite.py",
    "/static/..%2fserver.py", "/static/%252e%252e/server.py", "/static/js/../../server.py",
    "/static/%2e%2e%5cserver.py", "/static//etc/passwd", "/static/js%00.js", "/static/",
])
def test_static_routes_cannot_escape(server, path: str) -> None:
    conn = HTTPConnection(*server.server_address[:2], timeout=10)
    conn.request("GET", path)  # raw path, not normalised by a client library
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    assert resp.status == 404, (path, resp.status)
    assert b"import" not in body and b"root:" not in body


def test_resolve_static_unit() -> None:
    assert resolve_static("js/app.js") is not None
    assert resolve_static("index.html") is not None
    for bad in ("../server.py", "%2e%2e/server.py", "js/../../cli.py", "/etc/passwd", "..\\server.py", "a\x00b"):
        assert resolve_static(bad) is None, bad


def test_non_loopback_bind_requires_token(store_env) -> None:
    with pytest.raises(ValueError, match="token"):
        CockpitServer(store=None, host="0.0.0.0", port=0)  # type: ignore[arg-type]
    srv = make_server(str(store_env["dir"]), host="0.0.0.0", port=0)
    assert srv.token and len(srv.token) >= 20 and f"token={srv.token}" in srv.url
    srv.server_close()


def test_token_is_enforced_on_every_route(store_env) -> None:
    with running_server(store_env["dir"], token="s3cret-token") as srv:
        for path in ("/", "/static/js/app.js", "/static/vendor/uplot/uPlot.iife.min.js", "/static/i18n/zh.json",
                     "/api/runs", "/api/openapi.json", "/api/live/runs", "/api/runs/x/live", "/favicon.ico", "/nope"):
            status, headers, _ = http(srv, path)
            assert status == 401, path
            assert "default-src 'self'" in headers["Content-Security-Policy"]  # refusals carry the headers too
        assert http(srv, "/api/runs?token=wrong")[0] == 401
        assert http(srv, "/api/runs", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        status, headers, _ = http(srv, "/?token=s3cret-token")
        assert status == 200 and "rlcockpit_token=s3cret-token" in headers["Set-Cookie"]
        assert "HttpOnly" in headers["Set-Cookie"]
        assert http(srv, "/api/runs", headers={"Cookie": "rlcockpit_token=s3cret-token"})[0] == 200


def test_no_interactive_docs_pages(server) -> None:
    """FastAPI's Swagger/ReDoc pages load scripts from a CDN and inline code: they are not served."""
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert http(server, path)[0] == 404, path


def test_loopback_rejects_foreign_host_header(server) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the store."""
    assert http(server, "/api/runs", headers={"Host": "evil.example:6007"})[0] == 403
    assert http(server, "/api/runs", headers={"Host": f"localhost:{server.server_address[1]}"})[0] == 200


def test_report_is_sandboxed(server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    status, headers, body = http(server, f"/api/runs/{rid}/report.html")
    assert status == 200 and b"<html" in body.lower() and "sandbox" in headers["Content-Security-Policy"]
    assert "script-src" not in headers["Content-Security-Policy"]


def test_cli_serves_and_prints_url(store_env, tmp_path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "rlcockpit.cli", "ui", "--dir", str(store_env["dir"]), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        deadline = time.time() + 60
        while time.time() < deadline and url is None:
            line = proc.stdout.readline()
            if line.strip().startswith("http://127.0.0.1:"):
                url = line.strip()
        assert url, proc.stderr.read() if proc.poll() is not None else "no URL printed"
        import urllib.request

        with urllib.request.urlopen(url + "api/health", timeout=10) as resp:
            assert json.loads(resp.read())["ok"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()


def test_default_port_is_documented() -> None:
    from rlcockpit.ui import cli

    assert ui_server.DEFAULT_PORT == cli.DEFAULT_PORT == 6007
    assert base_url  # helper used by the browser tests
