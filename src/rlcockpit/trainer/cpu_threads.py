"""How many torch threads a CPU run uses when ``trainer.num_threads`` is 0 (auto).

torch's default is every core. On a machine shared with other work that oversubscribes: each intra-op
parallel region waits at a barrier for its slowest thread, and a thread that shares its core with another
busy process is preempted for whole scheduler slices, so every op waits for it. On a 2-core machine with one
core kept busy (``stress-ng --cpu 1``) the demo's steps went from ~0.8 s with 1 thread to 7-12 s with 2
(BENCHMARKS.md, "make demo on a shared machine").

So auto uses the CPUs this process may run on (its affinity mask, capped by a cgroup CPU quota, the way Go's
GOMAXPROCS and the JVM count a container's CPUs), less the cores other processes keep busy (measured over a
short window at start, from the machine's CPU times minus this process's own), and never more than torch's
own default. An explicit ``trainer.num_threads`` is used as given.
"""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
SAMPLE_S = 0.25  # long enough for ~25 scheduler ticks per CPU, short enough to go unnoticed at start


def affinity_cpus() -> list[int]:
    """The CPUs this process may run on (``taskset``, ``docker --cpuset-cpus``, a batch scheduler's binding)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _v2_limit(folder: Path) -> float | None:
    text = (folder / "cpu.max").read_text().split() if (folder / "cpu.max").is_file() else []
    if len(text) == 2 and text[0] != "max":
        return int(text[0]) / int(text[1])
    return None


def _v1_limit(folder: Path) -> float | None:
    quota, period = folder / "cpu.cfs_quota_us", folder / "cpu.cfs_period_us"
    if quota.is_file() and period.is_file():
        q, p = int(quota.read_text()), int(period.read_text())
        if q > 0 and p > 0:
            return q / p
    return None


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup and its ancestors, in CPUs (``docker --cpus 1.5`` -> 1.5), or
    None without one. cgroup v2 (``cpu.max``) and v1 (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``)."""
    limits: list[float] = []
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            base, read = root, _v2_limit
        elif "cpu" in controllers.split(","):
            base, read = root / controllers if (root / controllers).is_dir() else root / "cpu", _v1_limit
        else:
            continue
        folder = base / path.lstrip("/")
        while True:  # the tightest quota on the way up to the root binds
            limit = read(folder) if folder.is_dir() else None
            if limit is not None:
                limits.append(limit)
            if folder == base or base not in folder.parents:
                break
            folder = folder.parent
    return min(limits) if limits else None


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup quota rounded up (at least 1)."""
    n = len(affinity_cpus())
    quota = cgroup_cpu_limit()
    return max(1, min(n, math.ceil(quota))) if quota else max(1, n)


def busy_elsewhere(window_s: float = SAMPLE_S) -> float:
    """Cores (of this process's CPUs) that other processes kept busy over ``window_s``, e.g. 1.0 beside one
    ``stress-ng --cpu 1``. Busy = not idle and not waiting on I/O (steal counts: another VM had the core)."""
    cpus, me = affinity_cpus(), psutil.Process()

    def busy_s() -> float:
        per_cpu = psutil.cpu_times(percpu=True)
        total = 0.0
        for i in cpus:
            t = per_cpu[i] if i < len(per_cpu) else None
            if t is not None:
                total += sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "guest", 0.0) \
                    - getattr(t, "guest_nice", 0.0)  # guest time is already inside user/nice
        return total

    def own_s() -> float:
        t = me.cpu_times()
        return t.user + t.system

    b0, o0, w0 = busy_s(), own_s(), time.perf_counter()
    time.sleep(window_s)
    b1, o1, w1 = busy_s(), own_s(), time.perf_counter()
    return max(0.0, ((b1 - b0) - (o1 - o0)) / max(w1 - w0, 1e-6))


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    usable: int
    busy: float
    torch_default: int

    def note(self) -> str:
        return (f"[rlcockpit] CPU threads: {self.threads} of {self.usable} usable CPUs (~{self.busy:.1f} cores busy "
                "with other processes; more threads would wait on preempted ones; trainer.num_threads=N to choose)")


@functools.cache
def torch_default_threads() -> int:
    """torch's own intra-op thread count before rlcockpit set any (its default, or OMP_NUM_THREADS)."""
    import torch

    return torch.get_num_threads()


def auto_threads(window_s: float = SAMPLE_S) -> ThreadChoice:
    """``trainer.num_threads=0``: the usable CPUs less those kept busy elsewhere (rounded: a core at least half
    busy is taken), at least 1, at most torch's default."""
    usable, busy = usable_cpus(), busy_elsewhere(window_s)
    default = torch_default_threads()
    free = usable - math.floor(busy + 0.5)
    return ThreadChoice(threads=max(1, min(free, default)), usable=usable, busy=busy, torch_default=default)
