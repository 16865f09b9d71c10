"""glibc's heap tuned for CPU training steps (``mallopt``): freed tensors reused, peak RSS that preflight predicts.

Why fixed values: glibc serves large allocations with ``mmap`` and returns them to the OS when freed, but
after the first such free it *raises* its mmap threshold to that size (up to 32 MiB), so later tensors of that
size come from the heap - and a rollout's KV cache, which grows by one token per step (a new, slightly larger
tensor each time), and the update's activations leave the heap full of holes that are never returned.
Measured with ``bench/memory_estimate.py`` (33.6M-parameter Qwen2, batch 8 x 4, 48+48 tokens): peak RSS
1740 MiB with glibc's default, 1204 MiB with a fixed 128 KiB threshold, for the same live tensors. Fixing the
thresholds turns the adaptation off, so RSS follows the tensors the process holds (what preflight's memory
estimate predicts) instead of the heap's history.

Why these values (issue 18; BENCHMARKS.md, "Allocator settings"): the kernel zeroes every page of a fresh
mmap when it is first touched, and a step frees and re-creates the same tensors each time. With the threshold
at 4 MiB (the earlier default) the realistic shape of ``bench/trainer_vs_trl.py`` took ~314k minor page faults
and ~0.6 kernel-seconds a step (``bench/allocator_ab.py``, 1 thread). Now:

* mmap threshold 16 MiB: that shape's per-layer update activations (tokens x MLP width, ~14 MiB) come from the
  heap and are reused by the next step; larger tensors (logit chunks, the kept log-softmax, a big vocabulary's
  weight-sized temporaries) are still mmapped and go back to the OS when freed;
* trim threshold 32 MiB, top pad 16 MiB: a free top of the heap above 32 MiB is given back down to 16 MiB, which
  bounds what the heap keeps between phases. 256 MiB / 64 MiB was ~2% cheaper still, but the kept heap stacked
  under other phases' mmapped tensors (peak RSS up to +120 MiB on the memory scenarios, the estimate 14% under
  on a held-out one).

Measured: CPU per step 4.60 -> 4.14 s (-10%), faults 314k -> 102k; preflight's estimate (unchanged) within
issue 18's bounds on both splits in two runs. Peak RSS now varies more from run to run (up to ~100 MiB on one
scenario, ~8%): the heap's holes depend on thread timing. An explicit ``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_`` or ``glibc.malloc`` tunable in the environment is the user's
choice: then none of these is applied.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's mallopt parameter numbers
DEFAULT_THRESHOLD = 16 * 2**20
DEFAULT_TRIM_THRESHOLD = 32 * 2**20
DEFAULT_TOP_PAD = 16 * 2**20
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def user_set_allocator() -> bool:
    """True when the environment already carries the user's glibc heap setting (variables or tunables)."""
    return any(k in os.environ for k in USER_SETTINGS) or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")


def return_freed_memory_to_os(threshold: int = DEFAULT_THRESHOLD, trim_threshold: int = DEFAULT_TRIM_THRESHOLD,
                              top_pad: int = DEFAULT_TOP_PAD) -> bool:
    """Fix glibc's mmap threshold, trim threshold and top pad (bytes); True when applied (Linux with glibc)."""
    if not sys.platform.startswith("linux") or user_set_allocator():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        settings = ((M_MMAP_THRESHOLD, threshold), (M_TRIM_THRESHOLD, trim_threshold), (M_TOP_PAD, top_pad))
        return all([bool(libc.mallopt(param, int(value))) for param, value in settings])
    except (OSError, AttributeError):  # musl and other libcs have no mallopt: nothing to tune
        return False
