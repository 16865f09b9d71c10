"""The dashboard under many clients (issue 25, item 21): worker processes, ETags on static files and on the
series of ended runs (304 on revalidation), and a cache that a resumed run does not fool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from ui_helpers import http, running_server

import rlcockpit

SERIES = "/api/runs/{rid}/series?keys=critic/score/mean,actor/kl_loss&max_points=200&format=b64&ts=false"


def test_static_files_carry_an_etag_and_revalidate_to_304(server) -> None:
    for path in ("/", "/static/js/app.js", "/static/vendor/uplot/uPlot.iife.min.js"):
        status, headers, body = http(server, path)
        etag = headers["etag"]
        assert status == 200 and body and etag.startswith('"') and headers["cache-control"] == "no-cache"
        status, headers2, body2 = http(server, path, headers={"If-None-Match": etag})
        assert status == 304 and body2 == b"" and headers2["etag"] == etag
        status, _h, body3 = http(server, path, headers={"If-None-Match": '"stale"'})
        assert status == 200 and body3 == body
    # a second spelling of the same file is the same file, and escapes stay refused
    assert http(server, "/static/js//app.js")[1]["etag"] == http(server, "/static/js/app.js")[1]["etag"]
    assert http(server, "/static/js/%2e%2e/%2e%2e/app.py")[0] == 404


def test_series_of_an_ended_run_are_cached_with_an_etag(server, store_env) -> None:
    rid = store_env["ids"]["grpo-baseline"]
    status, headers, body = http(server, SERIES.format(rid=rid))
    assert status == 200 and headers["cache-control"] == "no-cache" and headers["etag"]
    assert set(json.loads(body)["series"]) == {"critic/score/mean", "actor/kl_loss"}
    status, headers2, body2 = http(server, SERIES.format(rid=rid))
    assert status == 200 and body2 == body and headers2["etag"] == headers["etag"]
    status, _h, empty = http(server, SERIES.format(rid=rid), headers={"If-None-Match": headers["etag"]})
    assert status == 304 and empty == b""


def test_a_running_run_is_not_cached_and_a_resumed_run_is_read_again(tmp_path: Path) -> None:
    run = rlcockpit.init(project="p", name="r", dir=tmp_path, system_interval=None, health=False,
                         capture_meta=False)
    for step in range(5):
        run.log({"critic/score/mean": float(step), "actor/kl_loss": 0.1}, step=step)
    with running_server(tmp_path) as srv:
        status, headers, body = http(srv, SERIES.format(rid=run.id).replace("b64", "json"))
        assert status == 200 and headers["cache-control"] == "no-store" and "etag" not in headers
        run.finish()
        status, headers, body = http(srv, SERIES.format(rid=run.id).replace("b64", "json"))
        assert headers["etag"] and json.loads(body)["series"]["critic/score/mean"]["steps"] == [0, 1, 2, 3, 4]
        resumed = rlcockpit.init(project="p", id=run.id, resume="must", dir=tmp_path, system_interval=None,
                                 health=False, capture_meta=False)
        resumed.log({"critic/score/mean": 5.0, "actor/kl_loss": 0.1}, step=5)
        resumed.finish()
        status, headers2, body = http(srv, SERIES.format(rid=run.id).replace("b64", "json"),
                                      headers={"If-None-Match": headers["etag"]})
        assert status == 200 and headers2["etag"] != headers["etag"]
        assert json.loads(body)["series"]["critic/score/mean"]["steps"] == [0, 1, 2, 3, 4, 5]


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _start(store_dir: Path, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "rlcockpit.cli", "ui", "--dir", str(store_dir), "--port", "0",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.strip().startswith("http://127.0.0.1:"):
            return proc, line.strip().rstrip("/")
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("rlcockpit ui printed no URL")


def _wait_children(pid: int, n: int, timeout: float = 30) -> list[int]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        kids = _children(pid)
        if len(kids) == n:
            return kids
        time.sleep(0.05)
    raise AssertionError(f"expected {n} workers, have {_children(pid)}")


@pytest.mark.slow
def test_workers_serve_in_parallel_are_replaced_and_stop_together(store_env) -> None:
    proc, base = _start(store_env["dir"], "--workers", "3")
    try:
        kids = _wait_children(proc.pid, 3)
        results: list[int] = []

        def fetch() -> None:
            with urllib.request.urlopen(base + "/api/runs?project=arith", timeout=60) as resp:
                results.append(len(json.loads(resp.read())["runs"]))

        threads = [threading.Thread(target=fetch) for _ in range(60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert results == [3] * 60
        busy = [k for k in kids if int(Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[11]) > 0]
        assert len(busy) >= 2, "the requests were not shared between the worker processes"
        os.kill(kids[0], signal.SIGKILL)  # a worker that dies is replaced; the server keeps answering
        time.sleep(0.5)
        new = _wait_children(proc.pid, 3)
        assert kids[0] not in new
        assert urllib.request.urlopen(base + "/api/health", timeout=30).status == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    for k in new:
        assert not Path(f"/proc/{k}").exists() or "Z" in Path(f"/proc/{k}/stat").read_text().split()[2]


@pytest.mark.slow
def test_a_stop_while_workers_start_stops_them_all(store_env) -> None:
    """SIGTERM right after the URL is printed (while workers are being forked) used to leave the workers
    forked after it running, and the server never exited."""
    for _ in range(4):
        proc, base = _start(store_env["dir"], "--workers", "4")
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        port = int(base.rsplit(":", 1)[1])
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5)


@pytest.mark.parametrize("parser", ["httptools", "h11"])
def test_both_http_parsers_drop_a_client_that_never_finishes(store_env, monkeypatch, parser) -> None:
    """httptools (C) serves when installed, h11 otherwise: both keep the request deadline."""
    import socket

    from rlcockpit.ui import server as server_mod

    if parser == "h11":
        monkeypatch.setattr(server_mod, "HttpToolsProtocol", None)
    timeouts = server_mod.Timeouts(request_timeout_s=1.0, write_timeout_s=1.0, keep_alive_s=1.0)
    with running_server(store_env["dir"], timeouts=timeouts) as srv:
        http_cls = srv._uvicorn.config.http
        assert http_cls.__mro__[1] is (server_mod.TimedH11Protocol if parser == "h11" else server_mod.TimedHttpToolsProtocol)
        partial = socket.create_connection(srv.server_address)
        partial.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never completed
        partial.settimeout(6.0)
        t0 = time.monotonic()
        try:
            assert partial.recv(100) == b""  # closed by the server, no answer
        except ConnectionResetError:
            pass
        assert time.monotonic() - t0 < 5.0
        partial.close()
        status, _h, body = http(srv, "/api/health", headers={"Connection": "keep-alive"})
        assert status == 200 and json.loads(body)["ok"]
