"""Reading one key's full history (1M points) downsampled to ~2k points, extremes kept.

    python bench/store_read.py [--points 1000000] [--max-points 2000]

Target: ≤ 100 ms for the read + downsample, with a one-step spike still visible.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def read_benchmark(points: int = 1_000_000, max_points: int = 2000, repeats: int = 7) -> dict[str, Any]:
    from rlcockpit.store import open_store

    with tempfile.TemporaryDirectory(prefix="bench-read-") as tmp:
        store = open_store(tmp)
        store.create_run({"id": "r", "project": "bench", "name": "read"})
        rng = np.random.default_rng(0)
        vals = rng.normal(0.0, 1.0, points)
        spike = points * 7 // 9
        vals[spike] = 1e9
        steps = np.arange(points, dtype=np.int64)
        for lo in range(0, points, 100_000):  # written as a run would: many appends
            hi = min(points, lo + 100_000)
            store.append_points("r", {"loss": (steps[lo:hi], vals[lo:hi], np.full(hi - lo, 1.7e9))})
        fresh = open_store(tmp)  # a reader process's view: no writer caches
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            s, v, _ = fresh.series("r", "loss", max_points=max_points)
            times.append(time.perf_counter() - t0)
        full_t0 = time.perf_counter()
        fresh.series("r", "loss")
        full_s = time.perf_counter() - full_t0
    return {
        "read_points": points,
        "read_downsampled_to": int(len(s)),
        "read_downsampled_ms_p50": round(1000 * float(np.median(times)), 2),
        "read_downsampled_ms_max": round(1000 * float(np.max(times)), 2),
        "read_full_ms": round(1000 * full_s, 2),
        "read_spike_kept": bool(spike in s and float(v.max()) == 1e9),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--max-points", type=int, default=2000)
    args = p.parse_args()
    print(json.dumps(read_benchmark(args.points, args.max_points), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
