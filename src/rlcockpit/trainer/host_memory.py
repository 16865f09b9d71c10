"""Give freed tensor memory back to the OS on CPU runs (glibc's ``mallopt(M_MMAP_THRESHOLD)``).

Why: glibc serves large allocations with ``mmap`` and returns them to the OS when freed, but after the
first such free it *raises* its mmap threshold to that size (up to 32 MiB), so later tensors of that size
come from the heap - and a rollout's KV cache, which grows by one token per step (a new, slightly
larger tensor each time), leaves the heap full of holes that are never returned.  Measured with
``bench/memory_estimate.py`` (33.6M-parameter Qwen2, batch 8 x 4): peak RSS 1740 MiB with glibc's
default, 1204 MiB with a fixed 128 KiB threshold; the live tensors were the same.  A fixed threshold
turns that adaptation off, so the process's RSS follows the tensors it holds (what preflight's memory
estimate predicts) instead of the heap's history.

An explicit ``MALLOC_MMAP_THRESHOLD_`` in the environment is the user's choice and is left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
DEFAULT_THRESHOLD = 128 * 1024  # glibc's initial value, made fixed


def return_freed_memory_to_os(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; True when applied (Linux with glibc only)."""
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
    except (OSError, AttributeError):  # musl and other libcs have no mallopt: nothing to tune
        return False


def trim_heap() -> bool:
    """Return the heap's free pages to the OS (glibc ``malloc_trim(0)``); True when something was released.

    Cheap (one pass over the free lists) and called between the phases of a CPU step, so that the holes a
    rollout leaves in the heap are not added to the update's peak.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False
