"""Dashboard latency benchmark: runs list, run page, 1M-point downsampled series, live update.

Generates a store of ``--runs`` runs x ``--metrics`` metrics x ``--steps`` steps plus one run with a
``--big-steps``-point metric (written with ``store.append_points`` in big numpy arrays), serves it with
the real dashboard server on a loopback port, and times each request twice: server time (the
handler's own ``Server-Timing`` header, JSON encoding included) and end-to-end HTTP time.

The target scale is 100 runs x 50 metrics x 100k steps (+ a 1M-step metric) = 500M points, ~12 GB:
too much to generate on a small CI machine, so the default is 10k steps per metric; the scale used is
part of the output. Usage::

    python bench/ui_latency.py --json            # default scale
    python bench/ui_latency.py --markdown --runs 20 --steps 2000 --big-steps 200000   # quick
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

BUDGETS_MS = {"runs_list": 200, "run_page_initial": 300, "series_1m_downsampled": 100, "live_update": 20}
METRIC_PREFIXES = ("actor", "critic", "response_length", "perf", "timing_s", "val-core", "system")
CHART_POINTS = 1000  # what the run page asks per chart (static/js/pages.js)
BIG_KEY = "actor/grad_norm"
SPIKE = 1e6


def metric_names(n: int) -> list[str]:
    base = ["critic/score/mean", "actor/kl_loss", "actor/entropy", "actor/pg_loss", "actor/grad_norm",
            "response_length/mean"]
    names = base[: min(n, len(base))]
    i = 0
    while len(names) < n:
        names.append(f"{METRIC_PREFIXES[i % len(METRIC_PREFIXES)]}/m{i:03d}")
        i += 1
    return names


def generate(dir: Path, runs: int, metrics: int, steps: int, big_steps: int) -> dict[str, Any]:
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
        store.create_run({"id": rid, "project": "bench", "name": f"run-{r:03d}", "group": f"g{r % 5}",
                          "tags": ["bench"], "status": "running",
                          "config": {"actor": {"optim": {"lr": 1e-6 * (1 + r % 4)}}, "rollout": {"n": 8}}})
        points = {}
        summary = {}
        for k, name in enumerate(names):
            vals = np.cumsum(rng.standard_normal(steps)) * 0.01 + k
            points[name] = (step_arr, vals, ts_arr)
            summary[name] = float(vals[-1])
        store.append_points(rid, points)
        store.update_run(rid, summary=summary, status="finished", finished_at=time.time(), exit_code=0)
        if r % 10 == 0:
            store.add_finding(rid, Finding(detector="kl_spike", severity="warning", step=steps // 2,
                                           title="KL spike", actions=[Action("lower lr", ["actor.optim.lr=5e-7"])]))
        ids.append(rid)
    big_id = "bench-big"
    store.create_run({"id": big_id, "project": "bench", "name": "big", "status": "running"})
    big = np.arange(big_steps, dtype=np.int64)
    vals = np.sin(big / 5000.0) + rng.standard_normal(big_steps) * 0.01
    spike_step = int(big_steps * 0.6180339) | 1
    vals[spike_step] = SPIKE
    store.append_points(big_id, {BIG_KEY: (big, vals, time.time() - big_steps + big.astype(np.float64))})
    store.append_points(big_id, {name: (step_arr, np.zeros(steps), ts_arr) for name in names if name != BIG_KEY})
    store.close()
    return {"ids": ids, "big_id": big_id, "spike_step": spike_step, "names": names}


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
            "max": round(xs[-1], 2)}


def measure(base: str, info: dict[str, Any], repeat: int) -> dict[str, Any]:
    from urllib.parse import quote

    names = info["names"]
    run_id = info["ids"][len(info["ids"]) // 2]
    keys = quote(",".join(names), safe=",")
    out: dict[str, Any] = {}

    def bench(name: str, urls: list[str], check=None) -> None:
        srv, e2e = [], []
        for _ in range(repeat):
            s_total = e_total = 0.0
            for u in urls:
                s, e, body = timed_get(base + u)
                s_total += s
                e_total += e
                if check:
                    check(json.loads(body))
            srv.append(s_total)
            e2e.append(e_total)
        med = statistics.median(srv)
        out[name] = {"requests": urls, "first_server_ms": round(srv[0], 2), "server_ms": stats(srv), "e2e_ms": stats(e2e),
                     "budget_ms": BUDGETS_MS[name], "pass": med <= BUDGETS_MS[name]}

    bench("runs_list", ["/api/runs?project=bench"], lambda d: len(d["runs"]) == len(info["ids"]) + 1 or
          (_ for _ in ()).throw(AssertionError("runs list incomplete")))
    bench("run_page_initial", [f"/api/runs/{run_id}", f"/api/runs/{run_id}/series?keys={keys}&max_points={CHART_POINTS}&format=b64"])

    def spike_visible(d: dict[str, Any]) -> None:
        s = d["series"][BIG_KEY]
        steps = np.frombuffer(base64.b64decode(s["steps_b64"]), "<f8")
        values = np.frombuffer(base64.b64decode(s["values_b64"]), "<f8")
        if values.max() != SPIKE or steps[values.argmax()] != info["spike_step"] or len(steps) > 2000:
            raise AssertionError("downsampled 1M series lost the one-step spike")

    bench("series_1m_downsampled", [f"/api/runs/{info['big_id']}/series?keys={quote(BIG_KEY, safe='')}&max_points=2000&format=b64"],
          spike_visible)
    # live: a running run's page polls every key with since=<last step it has>; a few new points exist
    last = int(json.loads(timed_get(base + f"/api/runs/{run_id}")[2])["run"]["last_step"])
    bench("live_update", [f"/api/runs/{run_id}/series?keys={keys}&since={last - 3}&max_points=5000&format=b64"],
          lambda d: all(v["n"] == 3 for v in d["series"].values()) or
          (_ for _ in ()).throw(AssertionError("live update returned the wrong points")))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--metrics", type=int, default=50)
    p.add_argument("--steps", type=int, default=10_000, help="steps per metric (target scale: 100000)")
    p.add_argument("--big-steps", type=int, default=1_000_000, help="points of the one long metric")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--dir", help="store directory to (re)use; default: a temporary one, deleted afterwards")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from rlcockpit.ui.server import make_server, serve_in_thread

    tmp = None
    store_dir = Path(args.dir) if args.dir else Path(tmp := tempfile.mkdtemp(prefix="rlc-ui-bench-"))
    marker = store_dir / "bench-info.json"
    scale = {"runs": args.runs, "metrics": args.metrics, "steps": args.steps, "big_steps": args.big_steps}
    try:
        t0 = time.time()
        if marker.exists() and json.loads(marker.read_text())["scale"] == scale:
            info = json.loads(marker.read_text())
        else:
            if store_dir.exists() and args.dir:
                shutil.rmtree(store_dir)
            store_dir.mkdir(parents=True, exist_ok=True)
            info = generate(store_dir, **{k: v for k, v in scale.items()})
            info["scale"] = scale
            marker.write_text(json.dumps(info))
        gen_s = time.time() - t0
        server = make_server(str(store_dir), port=0)
        serve_in_thread(server)
        try:
            base = f"http://127.0.0.1:{server.server_address[1]}"
            timed_get(base + "/api/runs?project=bench")  # warm the page cache like a second visit
            results = measure(base, info, args.repeat)
        finally:
            server.shutdown()
            server.server_close()
        total_points = args.runs * args.metrics * args.steps + args.big_steps + (args.metrics - 1) * args.steps
        report = {
            "scale": {**scale, "total_points": total_points,
                      "db_bytes": sum(f.stat().st_size for f in store_dir.glob("rlcockpit.db*")),
                      "target": {"runs": 100, "metrics": 50, "steps": 100_000, "big_steps": 1_000_000},
                      "note": "target scale is 500M points (~12 GB); this run used the scale above"},
            "generate_s": round(gen_s, 1), "repeat": args.repeat, "cpu_count": os.cpu_count(), "results": results,
            "all_pass": all(r["pass"] for r in results.values()),
        }
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.markdown:
        print(f"scale: {args.runs} runs x {args.metrics} metrics x {args.steps} steps + {args.big_steps}-point metric "
              f"({report['scale']['total_points']:,} points, {report['scale']['db_bytes'] / 1e9:.2f} GB)\n")
        print("| measurement | server median ms | server p95 ms | first request server ms | e2e median ms | budget ms | pass |")
        print("|---|---:|---:|---:|---:|---:|:---:|")
        for name, r in results.items():
            print(f"| {name} | {r['server_ms']['median']} | {r['server_ms']['p95']} | {r['first_server_ms']} | "
                  f"{r['e2e_ms']['median']} | "
                  f"{r['budget_ms']} | {'yes' if r['pass'] else 'NO'} |")
    if args.json or not args.markdown:
        print(json.dumps(report, indent=2))
    return 0 if report["all_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
