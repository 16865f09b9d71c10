"""Dashboard under many concurrent clients: ``python bench/ui_latency.py --clients 200`` (or this file directly).

Starts ``rlcockpit ui --port 0 [--workers N]`` on the store as a subprocess (loopback only), then ``clients``
virtual users, each on its own keep-alive connection, open pages one after another with no think time
(a closed loop: the harshest reading of "N concurrent clients") for ``duration_s`` seconds, and stop.
A page is what a browser asks when it opens a run page: ``/``, the scripts, styles and translations (with
its cache: ``If-None-Match`` once it has an ETag, as Chromium does), the run list of the project, the detail of
one of its finished runs and that run's chart series in batches of 50 keys. Reported: requests/s, latency p50/p99/max over every
request, errors and connection resets, pages/s, and the server's CPU seconds per page (user + system of
the server process and its workers, from ``/proc``: the figure that does not grow with other jobs on a
shared machine, unlike latency). The client runs in this process (aiohttp) and needs CPU too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
STATIC = ("/static/vendor/uplot/uPlot.min.css", "/static/css/cockpit.css", "/static/vendor/uplot/uPlot.iife.min.js",
          "/static/js/app.js", "/static/js/core.js", "/static/js/i18n.js", "/static/js/state.js",
          "/static/js/runs.js", "/static/js/run.js", "/static/js/charts.js", "/static/js/chart.js",
          "/static/js/chartkit.js", "/static/js/smooth.js", "/static/i18n/en.json", "/static/favicon.svg")


def page_urls(info: dict[str, Any], client: int = 0, points: int = 1000) -> list[str]:
    """The requests of one run-page visit (static files first, as the browser parses the page). Client ``i``
    views the finished run ``ids[i % len]`` of the store (50 metrics), so the load spreads over runs."""
    from ui_latency import metric_names

    rid = info["ids"][client % len(info["ids"])]
    keys = metric_names(info["scale"]["metrics"])
    out = ["/", *STATIC, "/api/projects", "/api/guide?lang=en", f"/api/runs/{rid}", "/api/runs?project=bench"]
    for i in range(0, len(keys), 50):  # the page asks in batches of 50 keys
        out.append(f"/api/runs/{rid}/series?keys={quote(','.join(keys[i:i + 50]), safe=',')}"
                   f"&max_points={points}&format=b64&ts=false")
    return out


def proc_tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live children, plus what its reaped children used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for i, p in enumerate(pids):
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += (int(f[11]) + int(f[12])) / tick
        if i == 0:
            total += (int(f[13]) + int(f[14])) / tick  # cutime + cstime: workers that exited
    return total


def start_server(store_dir: Path, workers: int | None, src: Path = ROOT / "src") -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "rlcockpit.cli", "ui", "--dir", str(store_dir), "--port", "0"]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(src)})
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.strip().startswith("http://"):
            return proc, line.strip().rstrip("/")
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("the dashboard server printed no URL")


async def _client(session: Any, base: str, urls: list[str], stop_at: float, lat: list[float],
                  counts: dict[str, int]) -> None:
    import aiohttp

    etags: dict[str, str] = {}
    while time.monotonic() < stop_at:
        for u in urls:
            if time.monotonic() >= stop_at:
                return
            headers = {"If-None-Match": etags[u]} if u in etags else {}
            t0 = time.monotonic()
            try:
                async with session.get(base + u, headers=headers) as resp:
                    await resp.read()
                    if resp.status >= 400:
                        counts["errors"] += 1
                    elif "ETag" in resp.headers:
                        etags[u] = resp.headers["ETag"]
                    counts["not_modified"] += resp.status == 304
            except (aiohttp.ServerDisconnectedError, ConnectionResetError, aiohttp.ClientOSError):
                counts["resets"] += 1
                continue
            except (aiohttp.ClientError, asyncio.TimeoutError):
                counts["errors"] += 1
                continue
            lat.append(time.monotonic() - t0)
        counts["pages"] += 1


async def _load(base: str, info: dict[str, Any], clients: int, duration_s: float) -> tuple[list[float], dict[str, int]]:
    import aiohttp

    lat: list[float] = []
    counts = {"errors": 0, "resets": 0, "pages": 0, "not_modified": 0}
    conn = aiohttp.TCPConnector(limit=clients, force_close=False)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:
        stop_at = time.monotonic() + duration_s
        await asyncio.gather(*(_client(session, base, page_urls(info, i), stop_at, lat, counts)
                               for i in range(clients)))
    return lat, counts


def measure_clients(store_dir: Path, info: dict[str, Any], clients: int, duration_s: float,
                    workers: int | None, src: Path = ROOT / "src") -> dict[str, Any]:
    """One closed-loop load of ``clients`` users for ``duration_s`` against a fresh server."""
    import statistics
    import urllib.request

    proc, base = start_server(store_dir, workers, src)
    try:
        for _ in range(3):  # every worker warm (routes, imports) before the clock starts
            urllib.request.urlopen(base + "/api/health", timeout=30).read()
        cpu0, t0 = proc_tree_cpu_s(proc.pid), time.monotonic()
        lat, counts = asyncio.run(_load(base, info, clients, duration_s))
        wall, cpu = time.monotonic() - t0, proc_tree_cpu_s(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(15)
        proc.stdout.close()
    lat.sort()
    q = (lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1)) if lat else (lambda p: None)
    return {"clients": clients, "duration_s": round(wall, 1), "workers": workers, "requests": len(lat),
            "req_per_s": round(len(lat) / wall, 1), "p50_ms": q(0.50), "p99_ms": q(0.99),
            "max_ms": round(lat[-1] * 1000, 1) if lat else None,
            "mean_ms": round(statistics.mean(lat) * 1000, 1) if lat else None, **counts,
            "pages_per_s": round(len(lat) / len(page_urls(info)) / wall, 2), "requests_per_page": len(page_urls(info)),
            "server_cpu_s": round(cpu, 2),
            "server_cpu_s_per_page": round(cpu * len(page_urls(info)) / len(lat), 4) if lat else None,
            "load_avg": [round(x, 1) for x in os.getloadavg()], "cpu_count": os.cpu_count()}


def print_clients_markdown(rows: list[dict[str, Any]]) -> None:
    print("| clients | workers | req/s | p50 ms | p99 ms | max ms | errors | resets | pages/s | server CPU s/page | load avg |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['workers'] or 'default'} | {r['req_per_s']} | {r['p50_ms']} | {r['p99_ms']} | "
              f"{r['max_ms']} | {r['errors']} | {r['resets']} | {r['pages_per_s']} | {r['server_cpu_s_per_page']} | "
              f"{r['load_avg']} |")
