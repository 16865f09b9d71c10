"""Tracking under faults: steps lost per SIGKILL at a given logging rate, and recovery after a full disk.

    python bench/tracking_faults.py --json        # one JSON object
    python bench/tracking_faults.py --markdown    # tables for BENCHMARKS.md

``kill``: a child process logs 50-key steps at ``--rates`` (default 100 and 30000 steps/s; the achieved
rate is reported) into its own store and publishes its current step in a shared memory word; the parent
SIGKILLs it at a random moment after a warm-up and counts the steps logged but neither stored nor recorded
as lost (stored steps plus recorded ``data_lost`` ranges are checked to form a prefix, never overlapping).
``--kills`` repetitions per rate.

``disk_full`` (needs root: a real 8 MiB tmpfs; skipped otherwise): a run logs 20-key steps at 200
steps/s, the disk is filled for ``--full-s`` seconds, then freed; reported: steps held in memory and
written afterwards, steps recorded as lost, and the seconds from freeing the disk until every held step
was in the store.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "faults"))  # SmallDisk: the fault suite's real tmpfs

CHILD = r"""
import mmap, sys, time
import rlcockpit
store, rate, shm = sys.argv[1], float(sys.argv[2]), sys.argv[3]
f = open(shm, "r+b"); word = mmap.mmap(f.fileno(), 8)
run = rlcockpit.init(project="bench", name="victim", dir=store, system_interval=None, capture_meta=False,
                     health=False)
keys = [f"actor/metric_{i}" for i in range(50)]
rows = [{k: float(s % 97) + i for i, k in enumerate(keys)} for s in range(97)]
print("ready", flush=True)
t0 = time.perf_counter()
step = 0
while True:
    run.log(rows[step % 97], step=step)
    word[:8] = step.to_bytes(8, "little")
    step += 1
    ahead = step / rate - (time.perf_counter() - t0)
    if ahead > 0.002:
        time.sleep(ahead)
"""


def kill_once(rate: float, delay: float) -> dict[str, Any]:
    import rlcockpit

    with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp:
        shm = Path(tmp) / "step.bin"
        shm.write_bytes(b"\0" * 8)
        env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(Path(tmp) / "store"), str(rate), str(shm)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        with open(shm, "rb") as f:
            word = mmap.mmap(f.fileno(), 8, access=mmap.ACCESS_READ)
            t_start = time.perf_counter()
            time.sleep(delay)
            logged = int.from_bytes(word[:8], "little") + 1
            os.kill(proc.pid, signal.SIGKILL)
            elapsed = time.perf_counter() - t_start
        proc.wait(10)
        run = rlcockpit.Api(Path(tmp) / "store").runs("bench")[0]
        steps = set(run.series("actor/metric_0")[0].tolist())
        recorded = {s for e in run.events("data_lost") for lo, hi in e["payload"]["ranges"]
                    for s in range(lo, hi + 1)}
        assert not steps & recorded, "a step is both stored and recorded as lost"
        end = max(steps | recorded | {-1}) + 1
        assert steps | recorded == set(range(end)), "stored + recorded-lost steps are not a prefix"
        lost = logged - end  # what the kill took: logged, neither stored nor recorded
        achieved = logged / elapsed
        return {"logged": logged, "stored": len(steps), "recorded_lost": len(recorded), "lost_steps": int(lost),
                "lost_s": round(lost / achieved, 3) if achieved else None, "achieved_rate": round(achieved)}


def kill_bench(rates: list[float], kills: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    out = {}
    for rate in rates:
        trials = [kill_once(rate, rng.uniform(2.0, 4.0)) for _ in range(kills)]
        lost = [t["lost_steps"] for t in trials]
        out[str(int(rate))] = {
            "kills": kills, "achieved_rate_median": round(statistics.median(t["achieved_rate"] for t in trials)),
            "lost_steps_median": statistics.median(lost), "lost_steps_max": max(lost),
            "recorded_lost_median": statistics.median(t["recorded_lost"] for t in trials),
            "lost_s_median": statistics.median(t["lost_s"] for t in trials),
            "lost_s_max": max(t["lost_s"] for t in trials), "trials": trials,
        }
    return out


def disk_full_bench(full_s: float) -> dict[str, Any]:
    from faults_support import SmallDisk

    import rlcockpit

    disk = SmallDisk(size_mb=8)
    if disk.kind != "tmpfs":
        disk.close()
        return {"skipped": f"cannot mount a tmpfs here ({disk.mount_error})"}
    try:
        store = disk.path / "store"
        run = rlcockpit.init(project="bench", dir=store, system_interval=None, capture_meta=False, health=False)
        keys = [f"k{i}" for i in range(20)]
        step = 0

        def log_for(seconds: float) -> None:
            nonlocal step
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                run.log({k: float(step) for k in keys}, step=step)
                step += 1
                time.sleep(1 / 200)

        log_for(1.0)
        run.flush()
        disk.fill()
        t_full = step
        log_for(full_s)
        held_until = step - 1
        disk.free()
        t_free = time.monotonic()
        reader = rlcockpit.Api(store)
        while (reader.run(run.id).last_step or -1) < held_until and time.monotonic() - t_free < 60:
            time.sleep(0.02)
            log_for(0.0)
        recovery_s = time.monotonic() - t_free
        log_for(0.5)
        run.finish()
        stored = reader.run(run.id)
        got = stored.series("k0")[0]
        lost = sum(e["payload"]["entries"] for e in stored.events("data_lost"))
        return {"full_s": full_s, "steps_while_full": held_until - t_full + 1,
                "held_and_written": int(((got >= t_full) & (got <= held_until)).sum()), "recorded_lost": lost,
                "recovery_s": round(recovery_s, 3), "status": stored.status, "disk": "tmpfs 8 MiB"}
    finally:
        disk.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--rates", type=float, nargs="*", default=[100.0, 30000.0])
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--full-s", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    results = {"kill": kill_bench(args.rates, args.kills, args.seed), "disk_full": disk_full_bench(args.full_s),
               "_machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                            "load_avg": os.getloadavg()}}
    if args.markdown:
        print("| target steps/s | achieved (median) | steps lost per kill (median / max) | seconds lost (median / max) "
              "| recorded data_lost before the kill (median) |")
        print("|---:|---:|---:|---:|---:|")
        for rate, r in results["kill"].items():
            print(f"| {int(float(rate)):,} | {r['achieved_rate_median']:,} | {r['lost_steps_median']} / "
                  f"{r['lost_steps_max']} | {r['lost_s_median']} / {r['lost_s_max']} | {r['recorded_lost_median']} |")
        d = results["disk_full"]
        print("\n" + (f"disk full: skipped ({d['skipped']})" if "skipped" in d else
                      f"disk full for {d['full_s']} s at 200 steps/s: {d['steps_while_full']} steps logged while full, "
                      f"{d['held_and_written']} held and written after, {d['recorded_lost']} recorded lost, "
                      f"all held steps stored {d['recovery_s']} s after space returned; status {d['status']}"))
    if args.json or not args.markdown:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
