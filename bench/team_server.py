"""Load and faults for the team server, loopback only, bounded in time (one command).

    python bench/team_server.py                      # 200 clients x 50 metrics x 10 steps/s for 60 s
    python bench/team_server.py --faults             # + SIGKILL the server mid-load, + PostgreSQL down 30 s
    python bench/team_server.py --find-max           # ramp the client count: highest rate with p99 <= 100 ms
    python bench/team_server.py --clients 8 --duration 20 --faults --pg-outage 5 --json   # the test's size

A throwaway PostgreSQL cluster (``rlcockpit.server.pgcluster``, durable settings unless ``--fast-pg``) and a
``rlcockpit server`` subprocess; clients are real remote stores (spool + uploader, exactly what
``RLCOCKPIT_SERVER`` gives a run) driven by threads in ``--procs`` processes: every 0.2 s (the tracking
writer's cadence) each client writes the steps due at ``--rate`` steps/s, ``--metrics`` keys each.

Reported: points produced / stored / lost / duplicated (every key of every run is read back and compared
with the steps its client produced), client-observed ingest latency (p50/p99 per request), server-side
latency, dashboard queries during the load (runs list, one run's 50 series) against the dashboard's budgets,
and CPU seconds of the server, PostgreSQL and the clients (where the time goes = the bottleneck).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rlcockpit.server import schema as _schema  # noqa: E402,F401 - team tables
from rlcockpit.server.accounts import Accounts  # noqa: E402
from rlcockpit.server.pgcluster import PgCluster, free_port  # noqa: E402
from rlcockpit.store.batch import WriteBatch  # noqa: E402
from rlcockpit.store.postgres.store import PostgresStore  # noqa: E402

PROJECT = "bench"
BUDGET_MS = {"runs_list": 200, "run_series": 100}  # the dashboard's budgets (BENCHMARKS.md, dashboard latency)


def client_proc(server: str, tokens: list[tuple[str, str]], spool_root: str, metrics: int, rate: float,
                duration: float, out: mp.Queue) -> None:
    """One process of clients: each (run id, token) gets a RemoteStore and a producer thread."""
    from rlcockpit.store.remote.client import RemoteStore

    keys = [f"bench/metric_{i:03d}" for i in range(metrics)]
    stores, produced, threads = {}, {}, []
    t_start = time.time()

    def produce(run_id: str, store: RemoteStore) -> None:
        step, next_at = 0, time.monotonic()
        end = t_start + duration
        while time.time() < end:
            next_at += 0.2
            due = int((time.time() - t_start) * rate) + 1
            if due > step:
                steps = np.arange(step, due, dtype=np.int64)
                ts = np.full(len(steps), time.time())
                pts = {k: (steps, np.sin(steps * 0.01 + i), ts) for i, k in enumerate(keys)}
                store.write_batch(run_id, WriteBatch(points=pts, run_fields={"heartbeat_at": time.time()}))
                step = due
            time.sleep(max(0.0, next_at - time.monotonic()))
        produced[run_id] = step

    for run_id, token in tokens:
        s = RemoteStore(server, token, spool_dir=Path(spool_root) / run_id, upload_interval_s=1.0, timeout_s=30)
        s.create_run({"id": run_id, "project": PROJECT, "name": run_id})
        stores[run_id] = s
        th = threading.Thread(target=produce, args=(run_id, s), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    deadline = time.monotonic() + 300
    for s in stores.values():
        s.uploader.wake_now()
    while time.monotonic() < deadline and any(s.spool.stats()["ops"] for s in stores.values()):
        time.sleep(0.2)
    lat = [x for s in stores.values() for x in s.uploader.latencies]
    left = sum(s.spool.stats()["ops"] for s in stores.values())
    requests = sum(s.uploader.requests for s in stores.values())
    outages = sum(1 for s in stores.values() if s.uploader.had_outage)
    for s in stores.values():
        s.uploader.stop()
    out.put({"produced": produced, "latencies": lat, "left_ops": left, "requests": requests, "outages": outages,
             "cpu_s": sum(psutil.Process().cpu_times()[:2])})


class ServerProc:
    def __init__(self, db: str, port: int, rate: float, log: Path) -> None:
        self.log = log
        self.cmd = [sys.executable, "-m", "rlcockpit.cli", "server", "--db", db, "--port", str(port), "--rate",
                    str(rate)]
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None
        self.cpu_s = 0.0

    def start(self, token: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        with open(self.log, "ab") as log:  # a file, not a pipe nobody reads: a full pipe would block the server
            self.proc = subprocess.Popen(self.cmd, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/api/v1/health", headers={"authorization": f"Bearer {token}"}).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("team server did not start: " + self.log.read_text(errors="replace")[-2000:])

    def cpu(self) -> float:
        try:
            return self.cpu_s + sum(psutil.Process(self.proc.pid).cpu_times()[:2])
        except (psutil.Error, AttributeError):
            return self.cpu_s

    def kill(self) -> None:
        self.cpu_s = self.cpu()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.cpu_s = self.cpu()
            self.proc.terminate()
            self.proc.wait(20)


def pg_cpu(cluster: PgCluster) -> float:
    total = 0.0
    for p in psutil.process_iter(["cmdline"]):
        try:
            if str(cluster.data) in " ".join(p.info["cmdline"] or []) or (p.parent() and str(cluster.data) in
                                                                           " ".join(p.parent().cmdline())):
                total += sum(p.cpu_times()[:2])
        except psutil.Error:
            continue
    return total


def dashboard_probe(url: str, token: str, run_id: str, keys: list[str], stop: threading.Event, out: dict) -> None:
    """Every 2 s: the runs list and one run's series, as the dashboard asks for them."""
    h = {"authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=h, timeout=30) as c:
        while not stop.wait(2.0):
            for name, path, params in (("runs_list", "/api/runs", {"project": PROJECT}),
                                       ("run_series", f"/api/runs/{run_id}/series", {"keys": ",".join(keys),
                                                                                    "ts": "false"})):
                t0 = time.perf_counter()
                try:
                    ok = c.get(path, params=params).status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    out.setdefault(name, []).append((time.perf_counter() - t0) * 1000)


def verify(db: str, produced: dict[str, int], metrics: int) -> dict[str, int]:
    """Read every key of every run back: points missing, duplicated, out of order."""
    store = PostgresStore(db, pool_size=2)
    missing = dup = disorder = stored = 0
    for run_id, n in produced.items():
        rows = store._query("SELECT k.name, c.steps FROM keys k JOIN chunks c ON c.key_id = k.id WHERE k.run_id = %s "
                            "ORDER BY k.name, c.id", (run_id,), binary=True)
        per_key: dict[str, list[bytes]] = {}
        for name, blob in rows:
            per_key.setdefault(name, []).append(blob)
        for i in range(metrics):
            blobs = per_key.get(f"bench/metric_{i:03d}", [])
            steps = np.frombuffer(b"".join(blobs), "<i8") if blobs else np.empty(0, np.int64)
            stored += len(steps)
            u = np.unique(steps)
            dup += len(steps) - len(u)
            disorder += int(np.sum(np.diff(steps) < 0))
            missing += n - len(np.intersect1d(u, np.arange(n)))
    store.close()
    return {"stored": stored, "missing": missing, "duplicated": dup, "out_of_order": disorder}


def pct(xs: list[float], q: float) -> float | None:
    return float(np.percentile(xs, q)) if xs else None


def run_load(clients: int, metrics: int, rate: float, duration: float, procs: int, faults: bool,
             pg_outage: float, fast_pg: bool, kill_wait: float = 3.0) -> dict:
    work = Path(tempfile.mkdtemp(prefix="rlcockpit-bench-"))
    cluster = PgCluster(fast=fast_pg, max_connections=200).start()
    server = None
    try:
        db = cluster.url
        store = PostgresStore(db, pool_size=2)
        acc = Accounts(store)
        acc.create_user("bench", actor="bench")
        acc.grant("bench", PROJECT, "member", actor="bench")
        tokens = [(f"run{i:04d}", acc.issue_token("bench", f"client {i}", actor="bench")) for i in range(clients)]
        store.close()
        server = ServerProc(db, free_port(), rate=max(100.0, 4 * rate), log=work / "server.log")
        server.start(tokens[0][1])
        ctx = mp.get_context("spawn")
        q: mp.Queue = ctx.Queue()
        groups = [tokens[i::procs] for i in range(procs) if tokens[i::procs]]
        workers = [ctx.Process(target=client_proc, args=(server.url, g, str(work / "spool"), metrics, rate, duration, q))
                   for g in groups]
        t0 = time.time()
        for w in workers:
            w.start()
        probes: dict[str, list[float]] = {}
        stop = threading.Event()
        probe = threading.Thread(target=dashboard_probe, args=(server.url, tokens[0][1], tokens[0][0],
                                                               [f"bench/metric_{i:03d}" for i in range(metrics)], stop,
                                                               probes), daemon=True)
        probe.start()
        events = []
        if faults:
            time.sleep(max(0.0, duration * 0.25 - (time.time() - t0)))
            server.kill()
            events.append(f"server SIGKILLed at {time.time() - t0:.1f}s")
            time.sleep(kill_wait)
            server.start(tokens[0][1])
            events.append(f"server restarted at {time.time() - t0:.1f}s")
            time.sleep(max(0.0, duration * 0.5 - (time.time() - t0)))
            cluster.stop()
            events.append(f"PostgreSQL stopped at {time.time() - t0:.1f}s for {pg_outage:.0f}s")
            time.sleep(pg_outage)
            cluster.start()
            events.append(f"PostgreSQL back at {time.time() - t0:.1f}s")
        results = [q.get(timeout=duration + 600) for _ in workers]
        stop.set()
        for w in workers:
            w.join(30)
        wall = time.time() - t0
        produced = {k: v for r in results for k, v in r["produced"].items()}
        lat = [x * 1000 for r in results for x in r["latencies"]]
        health = httpx.get(server.url + "/api/v1/health", headers={"authorization": f"Bearer {tokens[0][1]}"}).json()
        server_cpu, postgres_cpu = server.cpu(), pg_cpu(cluster)
        check = verify(db, produced, metrics)
        expected = sum(produced.values()) * metrics
        return {
            "clients": clients, "metrics": metrics, "rate_steps_s": rate, "duration_s": duration, "faults": events,
            "target_points_s": clients * metrics * rate, "points_expected": expected,
            "achieved_points_s": round(expected / duration), **check,
            "left_in_spools": sum(r["left_ops"] for r in results), "requests": sum(r["requests"] for r in results),
            "clients_with_outage": sum(r["outages"] for r in results),
            "ingest_ms": {"p50": pct(lat, 50), "p99": pct(lat, 99), "max": max(lat) if lat else None},
            "server_ingest_ms": {"p50": health["ingest"]["p50_ms"], "p99": health["ingest"]["p99_ms"],
                                 "thread_wait_p50": health["ingest"]["queue_p50_ms"],
                                 "thread_wait_p99": health["ingest"]["queue_p99_ms"],
                                 "db_p50": health["ingest"]["db_p50_ms"], "db_p99": health["ingest"]["db_p99_ms"]},
            "dashboard_ms": {k: {"median": pct(v, 50), "p95": pct(v, 95), "n": len(v), "budget": BUDGET_MS[k]}
                             for k, v in probes.items()},
            "cpu_s": {"server": round(server_cpu, 1), "postgres": round(postgres_cpu, 1),
                      "clients": round(sum(r["cpu_s"] for r in results), 1)},
            "wall_s": round(wall, 1), "fast_pg": fast_pg,
            "server_log_tail": (work / "server.log").read_text(errors="replace")[-1500:],
        }
    finally:
        if server is not None:
            server.stop()
        cluster.destroy()
        shutil.rmtree(work, ignore_errors=True)


def markdown(r: dict) -> str:
    ok = r["missing"] == 0 and r["duplicated"] == 0 and r["left_in_spools"] == 0
    lines = [f"| clients x metrics x steps/s | {r['clients']} x {r['metrics']} x {r['rate_steps_s']:g} "
             f"({r['target_points_s']:,.0f} points/s target) |",
             f"| points produced / stored / missing / duplicated | {r['points_expected']:,} / {r['stored']:,} / "
             f"{r['missing']} / {r['duplicated']} ({'complete' if ok else 'NOT complete'}) |",
             f"| ingest latency per request (client) p50 / p99 / max ms | {r['ingest_ms']['p50']:.1f} / "
             f"{r['ingest_ms']['p99']:.1f} / {r['ingest_ms']['max']:.0f} |",
             f"| server-side ingest p50 / p99 ms (of which waiting for a worker thread; in the database) | "
             f"{r['server_ingest_ms']['p50']:.1f} / {r['server_ingest_ms']['p99']:.1f} "
             f"({r['server_ingest_ms']['thread_wait_p50']:.1f} / {r['server_ingest_ms']['thread_wait_p99']:.1f}; "
             f"{r['server_ingest_ms']['db_p50']:.1f} / {r['server_ingest_ms']['db_p99']:.1f}) |"]
    for k, v in r["dashboard_ms"].items():
        lines.append(f"| dashboard {k} during load median / p95 ms (budget) | {v['median']:.0f} / {v['p95']:.0f} "
                     f"({v['budget']}) |")
    lines.append(f"| CPU s: server / PostgreSQL / clients (wall {r['wall_s']} s) | {r['cpu_s']['server']} / "
                 f"{r['cpu_s']['postgres']} / {r['cpu_s']['clients']} |")
    if r["faults"]:
        lines.append(f"| faults | {'; '.join(r['faults'])}; clients that saw an outage: {r['clients_with_outage']} |")
    return "\n".join(["| measurement | result |", "|---|---|", *lines])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--metrics", type=int, default=50)
    p.add_argument("--rate", type=float, default=10.0, help="steps per second per client")
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--procs", type=int, default=4, help="client processes (threads share them)")
    p.add_argument("--faults", action="store_true", help="SIGKILL the server at 25 %% and stop PostgreSQL at 50 %%")
    p.add_argument("--pg-outage", type=float, default=30.0, help="seconds PostgreSQL stays down (--faults)")
    p.add_argument("--fast-pg", action="store_true", help="fsync off (not durable: for a quick look only)")
    p.add_argument("--find-max", action="store_true", help="ramp clients 25, 50, 100, 200, 400 (20 s each)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.find_max:
        rows = []
        for n in (25, 50, 100, 200, 400):
            r = run_load(n, a.metrics, a.rate, 20.0, a.procs, False, 0, a.fast_pg)
            rows.append(r)
            print(f"{n} clients: {r['achieved_points_s']:,} points/s, p99 {r['ingest_ms']['p99']:.0f} ms, missing "
                  f"{r['missing']}, cpu {r['cpu_s']}", flush=True)
            if r["ingest_ms"]["p99"] > 100 or r["missing"]:
                break
        print(json.dumps(rows, indent=2) if a.json else "")
        return 0
    r = run_load(a.clients, a.metrics, a.rate, a.duration, a.procs, a.faults, a.pg_outage, a.fast_pg)
    print(json.dumps(r, indent=2) if a.json else markdown(r))
    return 0 if r["missing"] == 0 and r["duplicated"] == 0 and r["left_in_spools"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
