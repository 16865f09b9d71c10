"""A live job that stops making progress while its process lives (issue 29): a real subprocess writes verl
console lines, then hangs; ``rlcockpit watch`` (``VerlWatcher``) follows its log, sees no new step for k x the
median step time, stores a ``run_stalled`` finding and sends it to a real alert channel (a webhook served on
loopback) while the process is still alive."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rlcockpit.health.stall import STALL, StallWatch
from rlcockpit.integrations.watch import VerlWatcher
from rlcockpit.store import open_store

JOB = """
import sys, time
with open(sys.argv[1], "a", buffering=1) as log:
    for s in range(1, 13):
        log.write(f"(TaskRunner pid=1) step:{s} - critic/score/mean:{0.3 + 0.01 * s} - actor/pg_loss:0.01\\n")
        time.sleep(0.2)
    print("hanging", flush=True)
    time.sleep(120)  # a hung rollout: alive, silent
"""


class Hook:
    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.cv = threading.Condition()

    def wait(self, pred, timeout: float) -> list[dict]:
        end = time.monotonic() + timeout
        with self.cv:
            while not any(pred(b) for b in self.bodies) and time.monotonic() < end:
                self.cv.wait(0.05)
            return list(self.bodies)


def serve(hook: Hook) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with hook.cv:
                hook.bodies.append(json.loads(body))
                hook.cv.notify_all()
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_hung_live_job_is_a_stall_finding_and_an_alert_while_it_still_runs(tmp_path):
    hook = Hook()
    server = serve(hook)
    log = tmp_path / "job.out"
    log.touch()
    job = subprocess.Popen([sys.executable, "-c", JOB, str(log)], stdout=subprocess.PIPE, text=True)
    alerts = {"channels": [{"type": "webhook", "url": f"http://127.0.0.1:{server.server_address[1]}/hook"}],
              "on_finish": False, "stall_timeout_s": 0, "cooldown_s": 0}
    watcher = VerlWatcher(console_log=log, dir=tmp_path / "s", project="p", name="hung", alerts=alerts)
    watcher.stall = StallWatch(factor=5, critical_factor=1000, min_gap_s=1.0)
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run_until, args=(stop,), kwargs={"poll_s": 0.05})
    thread.start()
    try:
        assert job.stdout.readline().strip() == "hanging"  # every step written; the job now hangs
        bodies = hook.wait(lambda b: "No new step" in json.dumps(b), timeout=15.0)
        assert job.poll() is None  # the process is alive: only the wall clock can tell it stalled
    finally:
        stop.set()
        thread.join()
        job.kill()
        job.wait()
        server.shutdown()
        server.server_close()
    watcher.close()
    sent = [b for b in bodies if "No new step" in json.dumps(b)]
    assert len(sent) == 1 and "after step 12" in json.dumps(sent[0]), bodies
    found = [f for f in open_store(tmp_path / "s").findings(watcher.run.id) if f["detector"] == STALL]
    assert [(f["severity"], f["step"]) for f in found] == [("warning", 12)]
