"""An MLflow tracking server that opens the run and then hangs on ``log-batch`` (a loopback stub of MLflow's REST
API): the training process still ends, ``finish()`` keeps its bound, every step is in our store, and the steps
MLflow never got are recorded as undelivered, not lost in a queue nobody reports on."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from faults_support import child_env

import rlcockpit

pytestmark = pytest.mark.faults

RUN_INFO = {"run_id": "r1", "run_uuid": "r1", "experiment_id": "1", "status": "RUNNING", "start_time": 0,
            "lifecycle_stage": "active", "artifact_uri": "file:///tmp/none", "user_id": "u"}
REPLIES = {
    "experiments/get-by-name": {"experiment": {"experiment_id": "1", "name": "hang", "lifecycle_stage": "active",
                                               "artifact_location": "file:///tmp/none"}},
    "runs/create": {"run": {"info": RUN_INFO, "data": {}}},
    "runs/update": {"run_info": {**RUN_INFO, "status": "FINISHED"}},
    "runs/search": {"runs": []},
}


class HangingMlflow(BaseHTTPRequestHandler):
    """Answers the calls that open a run; holds every metrics ``log-batch`` after the first one forever."""

    metric_batches = 0
    received: set[int] = set()  # steps of the metrics batches answered
    release = threading.Event()

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        path = self.path.split("?")[0].split("/mlflow/", 1)[-1]
        if path == "runs/log-batch" and body.get("metrics"):
            type(self).metric_batches += 1
            if type(self).metric_batches > 1:
                self.release.wait()  # the hung server: the connection stays open, nothing comes back
                return
            type(self).received |= {int(m["step"]) for m in body["metrics"]}
        data = json.dumps(REPLIES.get(path, {})).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _reply

    def log_message(self, *args: object) -> None:
        pass


CHILD = """
import sys, time, rlcockpit
run = rlcockpit.init(project="hang", id="hangrun", dir=sys.argv[1], system_interval=None, capture_meta=False,
                     health=False, loggers=["rlcockpit", "mlflow"],
                     logger_options={"mlflow": {"tracking_uri": sys.argv[2]}})
for s in range(300):
    run.log({"a": float(s)}, step=s)
    time.sleep(0.002)
t0 = time.monotonic()
run.finish(timeout=5)
print("finish took", round(time.monotonic() - t0, 1), flush=True)
"""


def test_a_server_hanging_mid_run_neither_keeps_the_process_alive_nor_loses_steps_silently(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), HangingMlflow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "store"),
                              f"http://127.0.0.1:{server.server_address[1]}"],
                             env=child_env(), capture_output=True, text=True, timeout=90)
        took = time.monotonic() - t0
    finally:
        HangingMlflow.release.set()
        server.shutdown()
    assert out.returncode == 0, out.stderr[-2000:]
    assert HangingMlflow.metric_batches >= 2, "the stub never hung: the test tested nothing"
    # before the fix MLflow's own async queue held the hung batch and its non-daemon workers kept the
    # process alive after finish() (killed by a 120 s timeout)
    assert took < 45, f"the process took {took:.0f}s to end after a 5 s finish"
    run = rlcockpit.Api(tmp_path / "store").run("hangrun")
    assert run.series("a")[0].tolist() == list(range(300))  # our store has every step
    lost = [e for e in run.events("data_lost") if "mlflow" in json.dumps(e, default=str)]
    assert lost, f"MLflow missed steps and nothing says so: {run.events('data_lost')}"
    # the first metrics batch is the only one MLflow answered: every other step is reported undelivered
    ranges = [r for e in lost for r in e["payload"]["ranges"]]
    undelivered = {s for lo, hi in ranges for s in range(int(lo), int(hi) + 1)}
    assert HangingMlflow.received and undelivered == set(range(300)) - HangingMlflow.received, ranges
