"""Our trainer's CPU cost per step under different glibc allocator settings (issue 18), A/B alternated.

The realistic shape of ``bench/trainer_vs_trl.py`` (13M-parameter Qwen2, BPE 8k, 8 prompts x n=4, 64-token
responses, fp32), our trainer only, 1 thread by default. Each run is a fresh subprocess whose environment carries
the setting as glibc's own ``MALLOC_*_`` variables (so the trainer's ``host_memory`` leaves it alone), or none
(``default``: the trainer's own setting). Runs alternate setting by setting, the order reversed every round.
Per step (the first, warm-up step dropped): process CPU seconds, kernel (system) seconds and minor page
faults from ``resource.getrusage``; per run: peak RSS. On a shared machine compare CPU seconds and faults,
not wall time.

    python bench/allocator_ab.py --settings default mmap=32M,trim=256M,pad=64M --rounds 3 --steps 6 --json

A setting is ``default``, ``glibc`` (glibc's own adaptive threshold) or ``key=size`` pairs with keys
``mmap`` (MALLOC_MMAP_THRESHOLD_), ``trim`` (MALLOC_TRIM_THRESHOLD_), ``pad`` (MALLOC_TOP_PAD_) and
``arenas`` (MALLOC_ARENA_MAX); sizes take K/M suffixes.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_vs_trl  # noqa: E402 - the bench folder's own helper module
from trainer_vs_trl import REALISTIC  # noqa: E402

ENV_KEYS = {"mmap": "MALLOC_MMAP_THRESHOLD_", "trim": "MALLOC_TRIM_THRESHOLD_", "pad": "MALLOC_TOP_PAD_",
            "arenas": "MALLOC_ARENA_MAX"}


def _size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def setting_env(setting: str) -> dict[str, str]:
    """The ``MALLOC_*_`` variables of a setting name (``default``: none; ``glibc``: threshold left adaptive)."""
    if setting in ("default", "glibc"):
        return {}
    out = {}
    for part in setting.split(","):
        key, _, value = part.partition("=")
        if key not in ENV_KEYS:
            raise SystemExit(f"allocator_ab: unknown key {key!r} in setting {setting!r} (known: {sorted(ENV_KEYS)})")
        out[ENV_KEYS[key]] = str(_size(value))
    return out


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One training run; per-step CPU / kernel seconds and minor faults, peak RSS."""
    import resource

    import torch

    torch.set_num_threads(spec["settings"]["threads"])
    if spec["setting"] == "glibc":  # the trainer's mallopt off: glibc's adaptive threshold
        import rlcockpit.trainer.state as state

        state.return_freed_memory_to_os = lambda *a, **k: False
    from rlcockpit.trainer import loop

    steps: list[dict[str, float]] = []
    plain = loop.train_step

    def measured_step(*a: Any, **k: Any) -> Any:
        r0, c0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        try:
            return plain(*a, **k)
        finally:
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            steps.append({"cpu_s": time.process_time() - c0, "sys_s": r1.ru_stime - r0.ru_stime,
                          "minor_faults": r1.ru_minflt - r0.ru_minflt})

    loop.train_step = measured_step
    out = gpu_vs_trl.run_ours(Path(spec["workdir"]), spec["settings"], spec["paths"])
    return {"steps": steps, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "sec_per_step": out["sec_per_step"]}


def run(setting: str, workdir: Path, s: dict[str, Any], paths: dict[str, str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(setting_env(setting), OMP_NUM_THREADS=str(s["threads"]))
    spec = {"workdir": str(workdir), "settings": s, "paths": paths, "setting": setting}
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                          env=env, timeout=3600)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"allocator_ab: {setting} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[0][7:])


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    steady = [st for r in runs for st in r["steps"][1:]]
    return {"runs": len(runs), "cpu_s_per_step": statistics.median(st["cpu_s"] for st in steady),
            "sys_s_per_step": statistics.median(st["sys_s"] for st in steady),
            "minor_faults_per_step": statistics.median(st["minor_faults"] for st in steady),
            "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
            "per_run_cpu_s": [round(statistics.median(st["cpu_s"] for st in r["steps"][1:]), 3) for r in runs]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", nargs="+", default=["default", "mmap=32M,trim=256M,pad=64M"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))))
        return 0
    for setting in args.settings:
        setting_env(setting)  # a bad name fails before any run
    s = {**REALISTIC, "steps": args.steps, "threads": args.threads}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in args.settings}
    with tempfile.TemporaryDirectory(prefix="rlcockpit-alloc-ab-") as tmp:
        workdir = Path(tmp)
        paths = gpu_vs_trl.prepare(workdir, s)
        for i in range(args.rounds):
            order = args.settings if i % 2 == 0 else args.settings[::-1]
            for setting in order:
                r = run(setting, workdir / f"run-{i}-{len(runs[setting])}-{abs(hash(setting))}", s, paths)
                runs[setting].append(r)
                print(f"[allocator_ab] round {i} {setting}: {statistics.median(st['cpu_s'] for st in r['steps'][1:]):.3f}"
                      f" CPU s/step, {r['peak_rss_mib']:.0f} MiB peak (load {os.getloadavg()[0]:.1f})", file=sys.stderr)
    result = {"shape": s, "settings": {k: summarise(v) for k, v in runs.items()}, "raw": runs}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'setting':32} {'CPU s/step':>10} {'sys s/step':>10} {'faults/step':>12} {'peak RSS MiB':>13}")
    for k, v in result["settings"].items():
        print(f"{k:32} {v['cpu_s_per_step']:>10.3f} {v['sys_s_per_step']:>10.3f} {v['minor_faults_per_step']:>12.0f} "
              f"{v['peak_rss_mib']:>13.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
