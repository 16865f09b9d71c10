"""``rlcockpit demo`` step time by torch thread count, on a quiet machine and beside a busy core.

Each cell runs ``rlcockpit demo --steps N trainer.num_threads=T`` in a fresh process (the warmed-up tiny model
from the cache) and reads ``timing_s/step`` back from the run's store; step 1 is left out (first-call costs).
``--load busy`` keeps one core 100% busy with a pure-Python loop at the demo's own priority, not pinned, as
``stress-ng --cpu 1`` does (a loop pinned to one core slowed 2 threads far less: they moved off its core). The
cells are alternated round by round so a shared machine's load falls on all of them alike; the machine's
1-minute load average is recorded with each.

    python bench/demo_threads.py --threads 2,1,0 --load none,busy --rounds 2 --steps 12 [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

BUSY_LOOP = "while True:\n    pass\n"  # not pinned: it moves between cores as stress-ng does


def run_cell(threads: int, load: str, steps: int, timeout_s: float) -> dict[str, Any]:
    from rlcockpit.store import open_store

    busy = None
    if load == "busy":
        busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
        time.sleep(0.5)
    try:
        with tempfile.TemporaryDirectory() as store:
            t0, load_avg = time.perf_counter(), os.getloadavg()[0]
            cmd = [sys.executable, "-m", "rlcockpit", "demo", "--steps", str(steps), "--dir", store,
                   f"trainer.num_threads={threads}", "trainer.test_freq=0", "trainer.val_before_train=false"]
            timed_out = False
            try:
                subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            s = open_store(store)
            runs = s.list_runs()
            rid = runs[0]["id"] if runs else None
            events = s.events(rid, "config") if rid else []
            used = events[0]["payload"].get("cpu_threads") if events else None  # the torch threads the run used
            times = [float(v) for v in s.series(rid, "timing_s/step")[1][1:]] if rid else []
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return {"threads": threads, "used": used, "load": load,
            "steps_timed": len(times), "median_s": statistics.median(times) if times else None,
            "mean_s": statistics.mean(times) if times else None, "max_s": max(times) if times else None,
            "timed_out": timed_out, "loadavg_1m": load_avg, "wall_s": time.perf_counter() - t0}


def fmt(v: float | None) -> str:
    return f"{v:.2f}" if v is not None else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="2,1,0", help="trainer.num_threads values (0 = auto)")
    ap.add_argument("--load", default="none,busy", help="none and/or busy (one CPU kept busy)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds per cell (slow cells are cut, marked)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    cells = [(int(t), ld) for ld in args.load.split(",") for t in args.threads.split(",")]
    rows = []
    for r in range(args.rounds):
        for threads, load in (cells if r % 2 == 0 else cells[::-1]):
            rows.append({"round": r, **run_cell(threads, load, args.steps, args.timeout)})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if not args.markdown:
        print(json.dumps(rows, indent=1))
        return
    print("| load | trainer.num_threads | threads used | round | median s/step | mean | max | load avg |")
    print("|---|---|---|---|---|---|---|---|")
    for row in sorted(rows, key=lambda x: (x["load"], -x["threads"], x["round"])):
        cut = " (cut)" if row["timed_out"] else ""
        print(f"| {row['load']} | {row['threads'] or 'auto'} | {row['used']} | {row['round']} | "
              f"{fmt(row['median_s'])}{cut} | {fmt(row['mean_s'])} | {fmt(row['max_s'])} | {row['loadavg_1m']:.1f} |")


if __name__ == "__main__":
    main()
