"""The remote client against a loopback HTTP server that answers 500 to one op every time: the op is isolated,
dropped after a few tries and recorded as lost, and everything around it is delivered (never retried forever)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import SERVER_ERROR_TRIES, RemoteStore


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.applied: list[dict] = []
        self.answers: list[int] = []


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["content-length"]))
        ops = json.loads(body)["ops"]
        keys = [k for op in ops for k in (op.get("batch") or {}).get("points", {}).get("keys", [])]
        code = 500 if "poison" in keys else 200  # a value this server always fails on
        self.server.answers.append(code)
        out = b'{"error": "internal"}'
        if code == 200:
            self.server.applied.extend(ops)
            out = json.dumps({"applied_through": ops[-1]["seq"], "applied": len(ops), "duplicates": 0}).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_a_deterministic_500_is_isolated_dropped_and_recorded(tmp_path, capfd) -> None:
    srv = _Server()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    remote = RemoteStore(f"http://127.0.0.1:{srv.server_address[1]}", "t", spool_dir=tmp_path, start=False)
    try:
        remote.create_run({"id": "r", "project": "p", "name": "r"})
        pts = lambda lo: (np.arange(lo, lo + 3), np.ones(3), np.zeros(3))  # noqa: E731
        remote.write_batch("r", WriteBatch(points={"x": pts(0)}))
        remote.write_batch("r", WriteBatch(points={"poison": pts(3)}))
        remote.write_batch("r", WriteBatch(points={"x": pts(6)}))
        for _ in range(4 * SERVER_ERROR_TRIES):
            remote.uploader._next_try = 0.0
            if remote.uploader.flush():
                break
        assert remote.spool.stats()["ops"] == 0
        assert srv.answers.count(500) == 1 + SERVER_ERROR_TRIES  # the whole request once, then the op alone
        sent = [op.get("batch", {}) for op in srv.applied]
        assert not any("poison" in b.get("points", {}).get("keys", []) for b in sent)
        [loss] = [b["losses"][0] for b in sent if "losses" in b]
        assert loss["ranges"] == [[3, 5]] and loss["points"] == 3 and loss["reason"] == "rejected_by_store"
        assert sum(1 for b in sent if "points" in b) == 2
        assert "rejected a batch of run r" in capfd.readouterr().err
    finally:
        remote.close()
        srv.shutdown()
