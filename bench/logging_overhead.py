"""Logging overhead of rlcockpit vs. the trackers people use, plus embedded-store ingest and read.

    python bench/logging_overhead.py --json        # one JSON object keyed by tool
    python bench/logging_overhead.py --markdown    # a table for BENCHMARKS.md

Per tool, in its own child process with one run (so one tool's background threads never slow
another's), for one step of ``--keys`` (50) float metrics:

- ``p50_us`` / ``p99_us``: the caller-thread cost of one log call (perf_counter_ns around the
  call only; the metrics dict is built beforehand), over up to ``--steps`` steps after a warm-up;
- ``points_per_s``: points / (time from the first timed log call until finish()/flush() returned,
  i.e. until the data is on disk). Slow tools get a time budget (``--budget-s``): ``steps`` says
  how many steps were actually logged.

``store`` section: raw ``append_points`` of big arrays, ingest through ``run.log`` with a large
``max_queue_bytes``, the writer alone draining a pre-filled queue into the store (wall and thread CPU
time), and reading one key's 1M-point history downsampled to ~2k points (see ``bench/store_read.py``).
``rlcockpit_health`` is the ``rlcockpit`` row with the health detectors on. Timings depend on the machine: note its core count when quoting them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
TOOLS = ("rlcockpit", "rlcockpit_health", "wandb", "mlflow", "trackio", "tensorboard", "swanlab", "rlwatch")
Logger = tuple[Callable[[int, dict[str, float]], Any], Callable[[], Any], str]  # log, finish, note


# ---- per-tool setups: each returns (log(step, metrics), finish(), note) -----------------------------

def setup_rlcockpit(tmp: Path, keys: list[str]) -> Logger:
    import rlcockpit

    run = rlcockpit.init(project="bench", dir=tmp, system_interval=None, health=False, capture_meta=False)
    return (lambda step, m: run.log(m, step=step)), run.finish, "embedded SQLite store (WAL), background writer thread; health off, system sampler off"


def setup_rlcockpit_health(tmp: Path, keys: list[str]) -> Logger:
    import rlcockpit

    run = rlcockpit.init(project="bench", dir=tmp, system_interval=None, health=True, capture_meta=False)
    return ((lambda step, m: run.log(m, step=step)), run.finish,
            "as above with the health detectors on (they run on the observer thread, never in log())")


def setup_wandb(tmp: Path, keys: list[str]) -> Logger:
    os.environ["WANDB_SILENT"] = "true"
    import wandb

    run = wandb.init(project="bench", mode="offline", dir=str(tmp),
                     settings=wandb.Settings(console="off", x_disable_stats=True))
    return (lambda step, m: run.log(m, step=step)), run.finish, f"wandb {wandb.__version__} offline"


def setup_mlflow(tmp: Path, keys: list[str]) -> Logger:
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
    mlflow.config.enable_async_logging(True)
    exp = mlflow.create_experiment("bench", artifact_location=(tmp / "artifacts").as_uri())
    mlflow.start_run(experiment_id=exp)

    def finish() -> None:
        mlflow.end_run()  # flushes the async queue
        mlflow.flush_async_logging()

    return (lambda step, m: mlflow.log_metrics(m, step=step)), finish, f"mlflow {mlflow.__version__} sqlite, async logging on"


def setup_trackio(tmp: Path, keys: list[str]) -> Logger:
    os.environ["TRACKIO_DIR"] = str(tmp)
    os.environ["HF_HUB_OFFLINE"] = "1"
    import trackio

    trackio.init(project="bench", embed=False, auto_log_gpu=False, auto_log_cpu=False)
    return (lambda step, m: trackio.log(m, step=step)), trackio.finish, f"trackio {trackio.__version__} local (TRACKIO_DIR)"


def setup_tensorboard(tmp: Path, keys: list[str]) -> Logger:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp))

    def log(step: int, m: dict[str, float]) -> None:
        for k, v in m.items():
            writer.add_scalar(k, v, step)

    return log, writer.close, "torch.utils.tensorboard SummaryWriter, add_scalar per key"


def setup_swanlab(tmp: Path, keys: list[str]) -> Logger:
    import swanlab

    run = swanlab.init(project="bench", mode="offline", log_dir=str(tmp))
    return (lambda step, m: run.log(m, step=step)), run.finish, f"swanlab {swanlab.__version__} offline"


def setup_rlwatch(tmp: Path, keys: list[str]) -> Logger:
    os.environ["RLWATCH_LOG_DIR"] = str(tmp)
    import rlwatch

    monitor = rlwatch.attach(framework="manual")
    return ((lambda step, m: monitor.log_step(step, **m)), monitor.stop,
            f"rlwatch {rlwatch.__version__}: log_step(step, **metrics), SQLite commit per step + detectors")


def wandb_written_at(tmp: Path, settle_s: float = 2.0, timeout_s: float = 120.0) -> float:
    """wandb 0.31's ``finish()`` returns before wandb-core has written the transaction log: wait
    until the ``.wandb`` file stops growing and return its last modification time (wall clock)."""
    deadline = time.time() + timeout_s
    last = (-1, 0.0)
    stable_since = time.time()
    while time.time() < deadline:
        files = list(tmp.glob("wandb/offline-run-*/run-*.wandb"))
        st = files[0].stat() if files else None
        now = (st.st_size, st.st_mtime) if st else (-1, 0.0)
        if now != last:
            last, stable_since = now, time.time()
        elif now[0] > 7 and time.time() - stable_since >= settle_s:
            return now[1]
        time.sleep(0.1)
    return time.time()


SETUPS = {name: globals()[f"setup_{name}"] for name in TOOLS}
# when finish() returns before the data is on disk: how to find out when it got there (wall clock)
WRITTEN_AT: dict[str, Callable[[Path], float]] = {"wandb": wandb_written_at}
# MLflow's async queue drains into SQLite at ~2k points/s here: 1000 steps already take ~30 s to finish
STEP_CAPS = {"mlflow": 1000}


def metric_keys(n: int) -> list[str]:
    groups = ("actor", "critic", "response_length", "timing_s", "perf")
    return [f"{groups[i % len(groups)]}/metric_{i}" for i in range(n)]


def run_tool(tool: str, steps: int, n_keys: int, warmup: int, budget_s: float) -> dict[str, Any]:
    """Measure one tool in this process (called in a child process by ``main``)."""
    keys = metric_keys(n_keys)
    rng = np.random.default_rng(0)
    base = rng.random(n_keys)
    with tempfile.TemporaryDirectory(prefix=f"bench-{tool}-") as tmp:
        log, finish, note = SETUPS[tool](Path(tmp), keys)
        for step in range(warmup):
            log(step, dict(zip(keys, (base * step).tolist())))
        rows = [dict(zip(keys, (base + 1e-3 * i).tolist())) for i in range(steps)]
        times = np.empty(steps, dtype=np.int64)
        pc = time.perf_counter_ns
        t_start, wall_start = time.perf_counter(), time.time()
        deadline = t_start + budget_s
        n = 0
        for i in range(steps):
            m = rows[i]
            t0 = pc()
            log(warmup + i, m)
            times[i] = pc() - t0
            n = i + 1
            if (i & 63) == 0 and time.perf_counter() > deadline:
                break
        t_logged = time.perf_counter()
        finish()
        t_done = time.perf_counter()
        if tool in WRITTEN_AT:
            t_done = max(t_done, t_start + WRITTEN_AT[tool](Path(tmp)) - wall_start)
    us = times[:n] / 1000.0
    return {
        "p50_us": round(float(np.percentile(us, 50)), 2),
        "p99_us": round(float(np.percentile(us, 99)), 2),
        "points_per_s": round(n * n_keys / (t_done - t_start)),
        "steps": n,
        "keys_per_step": n_keys,
        "log_loop_s": round(t_logged - t_start, 3),
        "finish_s": round(t_done - t_logged, 3),
        "note": note,
    }


# ---- the embedded store on its own ---------------------------------------------------------------

def store_ingest(points: int, n_keys: int) -> dict[str, Any]:
    import rlcockpit
    from rlcockpit.store import open_store

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        store = open_store(tmp)
        store.create_run({"id": "raw", "project": "bench", "name": "raw"})
        per_key = points // n_keys
        steps = np.arange(per_key, dtype=np.int64)
        ts = np.full(per_key, time.time())
        batch = {f"k{j}": (steps, np.random.default_rng(j).random(per_key), ts) for j in range(n_keys)}
        t0 = time.perf_counter()
        store.append_points("raw", batch)
        out["raw_append_points_per_s"] = round(per_key * n_keys / (time.perf_counter() - t0))
        out["raw_append_points"] = per_key * n_keys

        # through the public API: run.log of 50-key steps with a queue big enough to never drop
        keys = metric_keys(n_keys)
        n_steps = per_key
        base = np.random.default_rng(1).random(n_keys)
        rows = [dict(zip(keys, (base + 1e-3 * i).tolist())) for i in range(n_steps)]
        run = rlcockpit.init(project="bench", dir=tmp, system_interval=None, health=False, capture_meta=False,
                             max_queue_bytes=2**40)
        t0 = time.perf_counter()
        for i, m in enumerate(rows):
            run.log(m, step=i)
        run.finish()
        elapsed = time.perf_counter() - t0
        stored = len(store.series(run.id, keys[0])[0])
        out["run_log_points_per_s"] = round(n_steps * n_keys / elapsed)
        out["run_log_points"] = n_steps * n_keys
        out["run_log_dropped"] = run.dropped
        assert stored == n_steps, f"stored {stored} of {n_steps} steps"
        out["store_ingest_points_per_s"] = min(out["raw_append_points_per_s"], out["run_log_points_per_s"])
    return out


# ---- driver --------------------------------------------------------------------------------------

def writer_throughput(n_steps: int, n_keys: int) -> dict[str, Any]:
    """The writer alone: points per second it moves from a pre-filled queue into the store (one
    transaction per drain), wall clock and thread CPU time (CPU time is what an idle core would give)."""
    from collections import deque

    import rlcockpit

    keys = metric_keys(n_keys)
    base = np.random.default_rng(2).random(n_keys)
    rows = [dict(zip(keys, (base + 1e-3 * i).tolist())) for i in range(n_steps)]
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmp:
        run = rlcockpit.init(project="bench", dir=tmp, system_interval=None, health=False, capture_meta=False,
                             max_queue_bytes=2**40)
        w = run._writer
        mine: deque = deque((i, time.time(), r) for i, r in enumerate(rows))  # Metrics entries
        w.queue = mine  # the writer thread keeps polling the run's (empty) queue; this thread drains ours
        t0, c0 = time.perf_counter(), time.thread_time()
        while mine:
            w._write(w._drain())
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        w.queue = run._queue
        run.finish()
        stored = len(rlcockpit.Api(tmp).run(run.id).series(keys[0])[0])
    assert stored == n_steps, f"stored {stored} of {n_steps}"
    points = n_steps * n_keys
    return {"writer_points_per_s_wall": round(points / wall), "writer_points_per_s_cpu": round(points / cpu),
            "writer_points": points}


def child(tool: str, args: argparse.Namespace) -> dict[str, Any]:
    steps = min(args.steps, STEP_CAPS.get(tool, args.steps))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", tool, "--steps", str(steps),
           "--keys", str(args.keys), "--warmup", str(args.warmup), "--budget-s", str(args.budget_s)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "SWANLAB_MODE": "offline",
           "PYTHONPATH": str(HERE.parent / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {args.timeout_s:.0f}s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return {"error": f"exit code {proc.returncode}: " + " | ".join(tail)}


def worker(tool: str, args: argparse.Namespace) -> None:
    try:
        __import__({"tensorboard": "torch.utils.tensorboard", "rlcockpit_health": "rlcockpit"}.get(tool, tool))
    except ImportError as exc:
        print(json.dumps({"error": f"not installed here: {exc}"}))
        return
    print(json.dumps(run_tool(tool, args.steps, args.keys, args.warmup, args.budget_s)), flush=True)
    os._exit(0)  # some trackers keep non-daemon threads around after finishing


def markdown(results: dict[str, Any]) -> str:
    lines = ["| tool | p50 µs/step | p99 µs/step | points/s until durable | steps | notes |", "|---|---:|---:|---:|---:|---|"]
    for tool, r in results.items():
        if tool == "store" or tool.startswith("_") or not isinstance(r, dict):
            continue
        if "error" in r:
            lines.append(f"| {tool} | – | – | – | – | {r['error']} |")
        else:
            lines.append(f"| {tool} | {r['p50_us']:.2f} | {r['p99_us']:.2f} | {r['points_per_s']:,} | {r['steps']:,} | {r['note']} |")
    s = results.get("store")
    if s:
        lines += ["", "| embedded store | value |", "|---|---:|"]
        lines += [f"| {k} | {v:,} |" if isinstance(v, (int, float)) and not isinstance(v, bool) else f"| {k} | {v} |"
                  for k, v in s.items()]
    m = results.get("_machine") or {}
    lines.append(f"\n{m.get('cpus')} CPUs, Python {m.get('python')}; {m.get('note', '')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print one JSON object keyed by tool")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--tools", nargs="*", default=list(TOOLS), choices=TOOLS)
    p.add_argument("--steps", type=int, default=20_000, help="timed steps per tool (upper bound)")
    p.add_argument("--keys", type=int, default=50, help="metrics per step")
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--budget-s", type=float, default=20.0, help="max seconds of timed logging per tool")
    p.add_argument("--timeout-s", type=float, default=240.0, help="max seconds per tool, setup and finish included")
    p.add_argument("--store-points", type=int, default=1_000_000)
    p.add_argument("--no-store", action="store_true", help="skip the store ingest/read section")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args)
        return 0
    results: dict[str, Any] = {}
    for tool in args.tools:
        results[tool] = child(tool, args)
        if not args.json:
            print(f"{tool}: {results[tool]}", file=sys.stderr, flush=True)
    if not args.no_store:
        sys.path.insert(0, str(HERE))
        from store_read import read_benchmark

        results["store"] = {**store_ingest(args.store_points, args.keys),
                            **writer_throughput(args.store_points // args.keys, args.keys),
                            **read_benchmark(args.store_points)}
    ok = [t for t in results if t != "store" and "p50_us" in results[t]]
    if "rlcockpit" in ok:
        results["rlcockpit"]["lowest_p50"] = min(ok, key=lambda t: results[t]["p50_us"]) == "rlcockpit"
    results["_machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                           "note": "timings depend on the machine; shared CPUs add noise to p99"}
    if args.markdown:
        print(markdown(results))
    if args.json or not args.markdown:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
