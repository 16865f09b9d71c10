"""What a full log queue should do: drop at once (the old policy) or wait a little for the writer (backpressure,
as W&B and trackio do), then drop and record. A producer calls ``log()`` as fast as it can with ``--keys``
metrics per step into a local SQLite run whose queue bound is small (``--queue-kib``), so the writer cannot
keep up — the situation of a full-speed producer on a loaded machine. Per policy it reports the steps lost
(``run.dropped`` and the ``data_lost`` records), the caller's latency per ``log()`` call (p50/p99/max), the
producer's rate, and the time to ``finish()``.

    python bench/queue_policy.py                                    # drop at once vs wait up to 2 s
    python bench/queue_policy.py --steps 100000 --waits 0 2 5       # ... and the default (5 s)
    python bench/queue_policy.py --steps 100000 --queue-kib 65536 --waits 0 0.05 0.2 0.5 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np


def one(wait_s: float, steps: int, keys: int, queue_kib: int) -> dict:
    os.environ["RLCOCKPIT_QUEUE_WAIT_S"] = str(wait_s)
    import rlcockpit

    with tempfile.TemporaryDirectory() as d:
        run = rlcockpit.init(project="bench", dir=d, system_interval=None, capture_meta=False, health=False,
                             max_queue_bytes=queue_kib << 10)
        names = [f"actor/metric_{i}" for i in range(keys)]
        lat = np.empty(steps)
        t0 = time.perf_counter()
        for step in range(steps):
            metrics = {k: step * 0.001 for k in names}
            a = time.perf_counter()
            run.log(metrics, step=step)
            lat[step] = time.perf_counter() - a
        produce_s = time.perf_counter() - t0
        run.finish()
        total_s = time.perf_counter() - t0
        lost = [e["payload"] for e in run.store.events(run.id, "data_lost")]
        stored = len(run.store.series(run.id, names[0])[0])
    return {"wait_s": wait_s, "steps": steps, "stored": stored, "lost": int(run.dropped),
            "lost_pct": round(100.0 * run.dropped / steps, 2), "recorded_lost": sum(x["entries"] for x in lost),
            "p50_us": round(float(np.percentile(lat, 50)) * 1e6, 1),
            "p99_us": round(float(np.percentile(lat, 99)) * 1e6, 1), "max_ms": round(float(lat.max()) * 1e3, 1),
            "producer_steps_per_s": round(steps / produce_s), "total_s": round(total_s, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--queue-kib", type=int, default=65536, help="the queue bound (max_queue_bytes, in KiB)")
    ap.add_argument("--waits", type=float, nargs="+", default=[0.0, 2.0],
                    help="policies ($RLCOCKPIT_QUEUE_WAIT_S): 0 = drop at once")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [one(w, args.steps, args.keys, args.queue_kib) for w in args.waits]
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'wait_s':>7} {'lost':>7} {'lost%':>6} {'recorded':>8} {'p50 µs':>8} {'p99 µs':>8} {'max ms':>7} "
          f"{'steps/s':>8} {'total s':>7}")
    for r in rows:
        print(f"{r['wait_s']:>7} {r['lost']:>7} {r['lost_pct']:>6} {r['recorded_lost']:>8} {r['p50_us']:>8} "
              f"{r['p99_us']:>8} {r['max_ms']:>7} {r['producer_steps_per_s']:>8} {r['total_s']:>7}")


if __name__ == "__main__":
    main()
