"""Dashboard latency: runs lists, the run page (cold and warm), a 1M-point series, live updates, and chart
frame times in Chromium. One command:

    python bench/ui_latency.py --markdown            # full scale (~1 min to generate, cached with --dir)
    python bench/ui_latency.py --markdown --quick    # small store, a smoke run
    python bench/ui_latency.py --markdown --quick --clients 50 200   # N concurrent clients (bench/ui_load.py)

Store (as before, plus the cold case): ``--runs`` 100 runs x ``--metrics`` 50 metrics x ``--steps`` 10k steps;
one run with 75 metrics of which one has ``--big-steps`` 1M points (the run page of 75 charts); ``--many``
1,000 runs with a verl-sized config (~150 keys), summary and packages metadata (the runs list).

Each request is timed by the server's own ``Server-Timing`` header (handler + JSON encoding) and end to end.
"Cold" means a freshly started server (a new SQLite connection: empty page cache) with the file in the OS
page cache (the issue's cold case); "cold_disk" also drops the database file from the OS page cache
(``posix_fadvise(DONTNEED)``, no root needed), so the read comes from disk. "server CPU" is this process's
CPU time per page (server and client share it; the client only waits): the figure that does not grow
with other jobs on a shared machine, unlike wall time.
The live update is the work of one tick of a run page's event stream (``LiveCursor.poll``) after every key of
a 75-key run got a new step, and the end-to-end delay from the write to the event in the browser's place.
Frame times: the compare page with 10 runs x 10k points (full resolution), scripted Shift-drag pans,
Ctrl-wheel zooms, resets and crosshair moves; every animation frame's duration is recorded in the page.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
BUDGETS_MS = {"runs_list_1000": 200, "runs_list_200": 200, "runs_list_100": 200, "run_page_cold": 100,
              "run_page_warm": 100, "series_1m_cold": 100, "series_1m_warm": 100, "live_update": 20}
METRIC_PREFIXES = ("actor", "critic", "response_length", "perf", "timing_s", "val-core", "system")
CHART_POINTS = 1000  # what the run page asks per chart, over steps: no timestamps (static/js/charts.js)
BIG_KEY = "actor/grad_norm"
SPIKE = 1e6
CHROMIUM = "/usr/bin/chromium"


def metric_names(n: int) -> list[str]:
    base = ["critic/score/mean", "actor/kl_loss", "actor/entropy", "actor/pg_loss", BIG_KEY, "response_length/mean"]
    names = base[: min(n, len(base))]
    i = 0
    while len(names) < n:
        names.append(f"{METRIC_PREFIXES[i % len(METRIC_PREFIXES)]}/m{i:03d}")
        i += 1
    return names


def verl_like_config(r: int) -> dict[str, Any]:
    """~150 leaves shaped like verl's ppo_trainer config, a few of them varying per run."""
    section = {f"opt{k}": k * 0.5 for k in range(20)}
    return {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6 * (1 + r % 7), "weight_decay": 0.01, **section},
                                            "ppo_mini_batch_size": 64 * (1 + r % 3), "clip_ratio": 0.2},
                                  "rollout": {"n": 4 + r % 5, "temperature": 1.0, **{f"r{k}": k for k in range(30)}},
                                  "model": {"path": f"/models/qwen-{r % 4}", **{f"m{k}": True for k in range(20)}}},
            "algorithm": {"adv_estimator": ["grpo", "gae", "rloo"][r % 3], "kl_ctrl": {"kl_coef": 0.001 * (r % 5)},
                          **{f"a{k}": k for k in range(20)}},
            "data": {"train_batch_size": 1024, **{f"d{k}": f"v{k}" for k in range(25)}},
            "trainer": {"total_training_steps": 500, **{f"t{k}": k for k in range(20)}}}


def generate(dir: Path, runs: int, metrics: int, steps: int, big_steps: int, many: int) -> dict[str, Any]:
    """Fill ``dir`` with the benchmark store; returns ids and the spike step of the big series."""
    from rlcockpit.health import Action, Finding
    from rlcockpit.store import open_store

    store = open_store(dir)
    rng = np.random.default_rng(0)
    names = metric_names(metrics)
    t0 = time.time() - steps
    step_arr = np.arange(steps, dtype=np.int64)
    ts_arr = t0 + step_arr.astype(np.float64)
    ids = []
    for r in range(runs):
        rid = f"bench{r:04d}"
        store.create_run({"id": rid, "project": "bench", "name": f"run-{r:03d}", "group": f"g{r % 5}", "tags": ["bench"],
                          "status": "running", "config": verl_like_config(r)})
        points = {name: (step_arr, np.cumsum(rng.standard_normal(steps)) * 0.01 + k, ts_arr) for k, name in enumerate(names)}
        store.append_points(rid, points)
        store.update_run(rid, summary={n: float(p[1][-1]) for n, p in points.items()}, status="finished",
                         finished_at=time.time(), exit_code=0)
        if r % 10 == 0:
            store.add_finding(rid, Finding(detector="kl_spike", severity="warning", step=steps // 2, title="KL spike",
                                           actions=[Action("lower lr", ["actor.optim.lr=5e-7"])]))
        ids.append(rid)
    big_id = "bench-big"
    store.create_run({"id": big_id, "project": "bench", "name": "big", "status": "running", "config": verl_like_config(0)})
    big = np.arange(big_steps, dtype=np.int64)
    vals = np.sin(big / 5000.0) + rng.standard_normal(big_steps) * 0.01
    spike_step = int(big_steps * 0.6180339) | 1
    vals[spike_step] = SPIKE
    big_ts = time.time() - big_steps + big.astype(np.float64)
    for lo in range(0, big_steps, 100_000):  # written as a long run would be: many appends
        store.append_points(big_id, {BIG_KEY: (big[lo:lo + 100_000], vals[lo:lo + 100_000], big_ts[lo:lo + 100_000])})
    page_keys = [n for n in metric_names(75) if n != BIG_KEY]
    store.append_points(big_id, {n: (step_arr, rng.standard_normal(steps), ts_arr) for n in page_keys})
    packages = {f"package-{k}": f"{k}.0.{k % 7}" for k in range(150)}
    for r in range(many):
        store.create_run({"id": f"many{r:05d}", "project": "many", "name": f"sweep-trial-{r:04d}", "group": f"sweep{r % 20}",
                          "tags": ["sweep", f"lr{r % 7}"], "status": "finished", "config": verl_like_config(r),
                          "summary": {n: float(rng.standard_normal()) for n in names},
                          "meta": {"command": ["python", "-m", "verl.trainer.main_ppo"], "packages": packages}})
    store.close()
    return {"ids": ids, "big_id": big_id, "spike_step": spike_step, "page_keys": [BIG_KEY, *page_keys]}


def drop_os_cache(dir: Path) -> bool:
    ok = True
    for f in dir.glob("rlcockpit.db*"):
        try:
            fd = os.open(f, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        except (OSError, AttributeError):
            ok = False
    return ok


def warm_os_cache(dir: Path) -> None:
    """Read the database file once, so a "cold" server finds it in the OS page cache (the issue's cold case:
    a server that just started, SQLite's own cache empty)."""
    for f in dir.glob("rlcockpit.db*"):
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def timed_get(url: str) -> tuple[float, float, bytes]:
    """(server_ms from Server-Timing, end-to-end ms, body) of one GET."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as resp:
        body = resp.read()
        server_ms = float(resp.headers["Server-Timing"].split("dur=")[1])
    return server_ms, (time.perf_counter() - t0) * 1000, body


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 2), "p95": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 2),
            "max": round(xs[-1], 2), "n": len(xs)}


class Served:
    """A dashboard server over the store, in a thread of this process (what ``rlcockpit ui`` runs)."""

    def __init__(self, dir: Path, **kw: Any) -> None:
        from rlcockpit.ui.server import make_server, serve_in_thread

        self.server = make_server(str(dir), port=0, **kw)
        serve_in_thread(self.server)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_page_urls(info: dict[str, Any]) -> list[str]:
    keys = info["page_keys"]
    rid = info["big_id"]
    out = [f"/api/runs/{rid}"]
    for i in range(0, len(keys), 50):  # the page asks in batches of 50 keys
        out.append(f"/api/runs/{rid}/series?keys={quote(','.join(keys[i:i + 50]), safe=',')}&max_points={CHART_POINTS}&format=b64&ts=false")
    return out


def page_time(base: str, urls: list[str]) -> tuple[float, float, float]:
    """(server ms, end-to-end ms, CPU ms of this process) of the page's requests, one after another. The
    server runs in this process and the client only waits, so the CPU time is the server's work: on a
    shared machine it is the figure that does not grow with other people's load."""
    srv = e2e = 0.0
    c0 = time.process_time()
    for u in urls:
        s, e, _ = timed_get(base + u)
        srv += s
        e2e += e
    return srv, e2e, (time.process_time() - c0) * 1000


def measure_http(dir: Path, info: dict[str, Any], repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    page = run_page_urls(info)
    big = f"/api/runs/{info['big_id']}/series?keys={quote(BIG_KEY, safe='')}&max_points=2000&format=b64"
    cold: dict[str, list[list[float]]] = {}
    dropped = True
    cases = (("run_page_cold", page, False), ("run_page_cold_disk", page, True),
             ("series_1m_cold", [big], False), ("series_1m_cold_disk", [big], True))
    for _ in range(max(3, repeat // 3)):
        for name, urls, from_disk in cases:
            if from_disk:
                dropped &= drop_os_cache(dir)
            else:
                warm_os_cache(dir)
            served = Served(dir)  # a new server: a new SQLite connection with an empty page cache
            try:
                timed_get(served.base + "/api/health")  # the server's own first request (threads, routes): not data
                for i, v in enumerate(page_time(served.base, urls)):
                    cold.setdefault(name, [[], [], []])[i].append(v)
            finally:
                served.close()
    for name, (srv, e2e, cpu) in cold.items():
        out[name] = {"server_ms": stats(srv), "e2e_ms": stats(e2e), "cpu_ms": stats(cpu)}
        if name.endswith("_disk"):
            out[name]["os_cache_dropped"] = dropped
    served = Served(dir)
    try:
        timed_get(served.base + "/api/runs?project=bench")
        for name, urls in ((f"runs_list_{info['scale']['many']}", ["/api/runs?project=many"]), ("runs_list_100", ["/api/runs?project=bench"]),
                           ("run_page_warm", page), ("series_1m_warm", [big])):
            srv, e2e, cpu = [], [], []
            for _ in range(repeat):
                s, e, c = page_time(served.base, urls)
                srv.append(s)
                e2e.append(e)
                cpu.append(c)
            out[name] = {"server_ms": stats(srv), "e2e_ms": stats(e2e), "cpu_ms": stats(cpu)}
        body = json.loads(timed_get(served.base + big)[2])["series"][BIG_KEY]
        import base64

        steps = np.frombuffer(base64.b64decode(body["steps_b64"]), "<f8")
        values = np.frombuffer(base64.b64decode(body["values_b64"]), "<f8")
        if values.max() != SPIKE or steps[values.argmax()] != info["spike_step"]:
            raise AssertionError("the downsampled 1M series lost its one-step spike")
        rows = json.loads(timed_get(served.base + "/api/runs?project=many")[2])["runs"]
        if len(rows) != info["scale"]["many"]:
            raise AssertionError(f"runs list incomplete: {len(rows)}")
    finally:
        served.close()
    return out


def measure_live(dir: Path, repeat: int) -> dict[str, Any]:
    """Server work of one live tick (75 keys, one new step each), and write-to-event delay over SSE."""
    from rlcockpit.store import open_store
    from rlcockpit.ui.live import LiveCursor

    writer = open_store(dir)
    names = metric_names(75)
    rid = f"bench-live-{os.getpid()}-{int(time.time())}"
    writer.create_run({"id": rid, "project": "live", "name": "live", "status": "running"})
    base = np.arange(1000, dtype=np.int64)
    writer.append_points(rid, {n: (base, np.zeros(1000), time.time() + base * 0.0) for n in names})
    reader = open_store(dir)
    reader.tune_for_reads()
    cursor = LiveCursor(reader, rid, since=999, t=time.time())
    cursor.poll()
    ticks: list[float] = []
    tick_cpu: list[float] = []
    for i in range(repeat):
        step = 1000 + i
        writer.append_points(rid, {n: (np.array([step]), np.array([1.0]), np.array([time.time()])) for n in names})
        writer.update_run(rid, heartbeat_at=time.time())
        t0, c0 = time.perf_counter(), time.process_time()
        events = cursor.poll()
        ticks.append((time.perf_counter() - t0) * 1000)
        tick_cpu.append((time.process_time() - c0) * 1000)
        pts = next(d for name, d in events if name == "points")
        if len(pts["series"]) != 75 or any(s["n"] != 1 for s in pts["series"].values()):
            raise AssertionError("live tick returned the wrong points")
    served = Served(dir, live_interval_s=0.1)
    delays = []
    try:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", served.server.server_address[1], timeout=30)
        last = 1000 + repeat - 1
        conn.request("GET", f"/api/runs/{rid}/live?since={last}&t={time.time()}")
        resp = conn.getresponse()
        got = threading.Event()
        stamp: list[float] = []

        def read() -> None:
            buf = b""
            while not got.is_set():
                line = resp.fp.readline()
                if not line:
                    return
                buf += line
                if line.startswith(b"event: points"):
                    stamp.append(time.perf_counter())
                    got.set()

        for i in range(min(repeat, 10)):
            got.clear()
            stamp.clear()
            th = threading.Thread(target=read, daemon=True)
            th.start()
            t0 = time.perf_counter()
            step = last + 1 + i
            writer.append_points(rid, {n: (np.array([step]), np.array([2.0]), np.array([time.time()])) for n in names})
            writer.update_run(rid, heartbeat_at=time.time())
            got.wait(10)
            th.join(5)
            if stamp:
                delays.append((stamp[0] - t0) * 1000)
        conn.close()
    finally:
        served.close()
        writer.delete_run(rid)  # the store stays reusable with --dir
        writer.close()
    return {"live_update": {"server_ms": stats(ticks), "cpu_ms": stats(tick_cpu), "keys": 75},
            "live_sse_delivery": {"e2e_ms": stats(delays) if delays else None, "interval_s": 0.1}}


def measure_frames(dir: Path, info: dict[str, Any]) -> dict[str, Any] | None:
    if not os.path.exists(CHROMIUM):
        return None
    from playwright.sync_api import sync_playwright

    served = Served(dir)
    args = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            runs = ",".join(info["ids"][:10])
            page.goto(f"{served.base}/#/compare?runs={runs}&keys=critic/score/mean&points=20000")
            page.wait_for_selector("#compare-charts[data-loaded]", timeout=60_000)
            sel = ".chart-card[data-key='critic/score/mean'] .u-over"
            points = page.get_attribute(".chart-card[data-key='critic/score/mean'] .chart-box", "data-points")
            page.evaluate("""() => { window.__frames = []; let last = performance.now();
                const tick = (t) => { window.__frames.push(t - last); last = t; if (!window.__stop) requestAnimationFrame(tick); };
                requestAnimationFrame(tick); }""")
            box = page.locator(sel).bounding_box()
            cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            page.mouse.move(cx, cy)
            for _ in range(3):
                page.keyboard.down("Control")
                for _ in range(6):
                    page.mouse.wheel(0, -100)
                    page.wait_for_timeout(30)
                page.keyboard.up("Control")
                page.keyboard.down("Shift")
                page.mouse.move(cx + 200, cy)
                page.mouse.down()
                page.mouse.move(cx - 200, cy, steps=40)
                page.mouse.up()
                page.keyboard.up("Shift")
                for i in range(40):
                    page.mouse.move(box["x"] + box["width"] * (0.1 + 0.02 * i), cy)
                page.dblclick(sel)
                page.wait_for_timeout(50)
            frames = page.evaluate("() => { window.__stop = true; return window.__frames.slice(1); }")
            browser.close()
    finally:
        served.close()
    return {"frames": {"frame_ms": stats(frames), "over_33ms": sum(f > 33.4 for f in frames), "runs": 10,
                       "points_on_chart": int(points or 0)}}


def _cli_server(src: Path, dir: Path) -> tuple[Any, str]:
    """``rlcockpit ui --port 0`` from the source tree ``src`` as a subprocess: (process, base URL)."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen([sys.executable, "-m", "rlcockpit.cli", "ui", "--dir", str(dir), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.strip().startswith("http://"):
            return proc, line.strip().rstrip("/")
    proc.kill()
    raise RuntimeError(f"no URL from the server in {src}")


def measure_against(baseline: Path, dir: Path, info: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The same requests against this tree's server and a baseline tree's (e.g. ``git worktree add /tmp/base
    main``: ``--baseline /tmp/base/src``), both as ``rlcockpit ui`` subprocesses, interleaved, so a shared
    machine's load hits both alike. Cold = a server process that just started (after one /api/health)."""
    page = run_page_urls(info)
    big = f"/api/runs/{info['big_id']}/series?keys={quote(BIG_KEY, safe='')}&max_points=2000&format=b64"
    res: dict[str, dict[str, list[float]]] = {}
    for _ in range(max(3, repeat // 2)):
        for label, src in (("new", ROOT / "src"), ("baseline", baseline)):
            for name, urls in (("run_page", page), ("series_1m", [big])):
                proc, base = _cli_server(src, dir)
                try:
                    timed_get(base + "/api/health")
                    c0 = _proc_cpu_ms(proc.pid)
                    cold = page_time(base, urls)[0]
                    c1 = _proc_cpu_ms(proc.pid)
                    warm = [page_time(base, urls)[0] for _ in range(3)]
                    c2 = _proc_cpu_ms(proc.pid)
                finally:
                    proc.terminate()
                    proc.wait(10)
                    proc.stdout.close()
                res.setdefault(f"{name}_cold", {}).setdefault(label, []).append(cold)
                res.setdefault(f"{name}_warm", {}).setdefault(label, []).extend(warm)
                res.setdefault(f"{name}_cold", {}).setdefault(label + "_cpu", []).append(c1 - c0)
                res.setdefault(f"{name}_warm", {}).setdefault(label + "_cpu", []).append((c2 - c1) / 3)
    out = {}
    for name, d in res.items():
        new, old = statistics.median(d["new"]), statistics.median(d["baseline"])
        cpu_new, cpu_old = statistics.mean(d["new_cpu"]), statistics.mean(d["baseline_cpu"])
        out[name] = {"new_ms": round(new, 1), "baseline_ms": round(old, 1), "ratio": round(new / old, 2),
                     "new_cpu_ms": round(cpu_new, 1), "baseline_cpu_ms": round(cpu_old, 1),
                     "cpu_ratio": round(cpu_new / cpu_old, 2) if cpu_old else None}
    return out


def _proc_cpu_ms(pid: int) -> float:
    """User + system CPU of a server so far, its worker processes included (``rlcockpit ui --workers``)."""
    from ui_load import proc_tree_cpu_s

    return proc_tree_cpu_s(pid) * 1000


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--metrics", type=int, default=50)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--big-steps", type=int, default=1_000_000)
    p.add_argument("--many", type=int, default=1000, help="runs of the runs-list measurement")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="small store (20 runs x 2k steps, 200k-point series)")
    p.add_argument("--no-browser", action="store_true", help="skip the Chromium frame-time measurement")
    p.add_argument("--dir", help="store directory to (re)use; default: a temporary one, deleted afterwards")
    p.add_argument("--baseline", help="src/ folder of another checkout (e.g. main): compare its server, side by side")
    p.add_argument("--only-baseline", action="store_true", help="with --baseline: only the side-by-side comparison")
    p.add_argument("--clients", type=int, nargs="+", help="instead of the above: N concurrent clients opening run "
                   "pages in a closed loop against `rlcockpit ui` (bench/ui_load.py), one load per N")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of each --clients load")
    p.add_argument("--workers", type=int, help="--clients: `rlcockpit ui --workers N` (default: the server's)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.steps, args.big_steps, args.many, args.repeat = 20, 2000, 200_000, 200, 5
    tmp = None
    store_dir = Path(args.dir) if args.dir else Path(tmp := tempfile.mkdtemp(prefix="rlc-ui-bench-"))
    marker = store_dir / "bench-info.json"
    scale = {"runs": args.runs, "metrics": args.metrics, "steps": args.steps, "big_steps": args.big_steps, "many": args.many}
    try:
        t0 = time.time()
        if marker.exists() and json.loads(marker.read_text())["scale"] == scale:
            info = json.loads(marker.read_text())
        else:
            if store_dir.exists() and args.dir:
                shutil.rmtree(store_dir)
            store_dir.mkdir(parents=True, exist_ok=True)
            info = {**generate(store_dir, **scale), "scale": scale}
            marker.write_text(json.dumps(info))
        gen_s = time.time() - t0
        if args.clients:
            return _clients_mode(args, store_dir, info)
        quick = bool(args.baseline and args.only_baseline)
        results = {} if quick else measure_http(store_dir, info, args.repeat)
        if not quick:
            results.update(measure_live(store_dir, args.repeat))
        frames = None if args.no_browser or quick else measure_frames(store_dir, info)
        if frames:
            results.update(frames)
        against = measure_against(Path(args.baseline), store_dir, info, args.repeat) if args.baseline else None
        for name, r in results.items():
            if name in BUDGETS_MS:
                r["budget_ms"] = BUDGETS_MS[name]
                r["pass"] = r["server_ms"]["median"] <= BUDGETS_MS[name]
        load = os.getloadavg()
        report = {"scale": {**scale, "db_bytes": sum(f.stat().st_size for f in store_dir.glob("rlcockpit.db*"))},
                  "generate_s": round(gen_s, 1), "repeat": args.repeat, "cpu_count": os.cpu_count(),
                  "load_avg": [round(x, 1) for x in load], "results": results, "against_baseline": against,
                  "all_pass": all(r.get("pass", True) for r in results.values())}
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.markdown:
        print_markdown(report)
    if args.json or not args.markdown:
        print(json.dumps(report, indent=2))
    return 0 if report["all_pass"] else 1


def _clients_mode(args: argparse.Namespace, store_dir: Path, info: dict[str, Any]) -> int:
    from ui_load import measure_clients, print_clients_markdown

    rows = []
    for n in args.clients:
        rows.append(measure_clients(store_dir, info, n, args.duration, args.workers))
        if args.baseline:
            rows.append({**measure_clients(store_dir, info, n, args.duration, None, Path(args.baseline)),
                         "workers": "baseline"})
    if args.markdown:
        print_clients_markdown(rows)
    if args.json or not args.markdown:
        print(json.dumps(rows, indent=2))
    return 0


def print_markdown(report: dict[str, Any]) -> None:
    sc = report["scale"]
    print(f"scale: {sc['runs']} runs x {sc['metrics']} metrics x {sc['steps']} steps; a 75-metric run with a "
          f"{sc['big_steps']:,}-point series; {sc['many']} runs for the list ({sc['db_bytes'] / 1e9:.2f} GB); "
          f"load average {report['load_avg']} on {report['cpu_count']} CPUs\n")
    print("| measurement | server median ms | server p95 ms | server CPU median ms | e2e median ms | budget ms | pass |")
    print("|---|---:|---:|---:|---:|---:|:---:|")
    for name, r in report["results"].items():
        if "server_ms" not in r:
            continue
        e2e = r.get("e2e_ms") or {}
        cpu = r.get("cpu_ms") or {}
        print(f"| {name} | {r['server_ms']['median']} | {r['server_ms']['p95']} | {cpu.get('median', '–')} | "
              f"{e2e.get('median', '–')} | {r.get('budget_ms', '–')} | {'yes' if r.get('pass', True) else 'NO'} |")
    sse = report["results"].get("live_sse_delivery", {}).get("e2e_ms")
    if sse:
        print(f"\nlive: write -> `points` event over SSE (0.1 s tick): median {sse['median']} ms, p95 {sse['p95']} ms")
    if report.get("against_baseline"):
        print("\n| side by side (subprocess servers, interleaved) | this tree ms | baseline ms | ratio | this tree CPU ms "
              "| baseline CPU ms | CPU ratio |\n|---|---:|---:|---:|---:|---:|---:|")
        for name, r in report["against_baseline"].items():
            print(f"| {name} | {r['new_ms']} | {r['baseline_ms']} | {r['ratio']} | {r['new_cpu_ms']} | {r['baseline_cpu_ms']} "
                  f"| {r['cpu_ratio']} |")
    fr = report["results"].get("frames")
    if fr:
        f = fr["frame_ms"]
        print(f"frames (10 runs x {fr['points_on_chart']:,} joined x-values, pan/zoom/hover): median {f['median']} ms, "
              f"p95 {f['p95']} ms, max {f['max']} ms, {fr['over_33ms']} of {f['n']} frames over 33 ms")


if __name__ == "__main__":
    sys.exit(main())
