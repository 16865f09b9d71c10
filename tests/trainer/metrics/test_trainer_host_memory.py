"""The CPU allocator setting (glibc mmap/trim thresholds, top pad): applied in a fresh process, the user's own
setting wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROBE = """
import ctypes, sys
import psutil
from rlcockpit.trainer.host_memory import return_freed_memory_to_os
applied = return_freed_memory_to_os()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
p = psutil.Process()
MiB = 1 << 20

def touched(size):
    buf = libc.malloc(size)
    ctypes.memset(buf, 1, size)
    return buf

# large blocks: with the threshold fixed at 16 MiB a freed 24 MiB block was mmapped and so is a later 20 MiB one
# (glibc's default raises its threshold to 24 MiB on the first free: the 20 MiB then stays on the heap)
before = p.memory_info().rss
libc.free(ctypes.c_void_p(touched(24 * MiB)))
libc.free(ctypes.c_void_p(touched(20 * MiB)))
large = p.memory_info().rss - before
# small blocks from the heap: 48 MiB freed at its top; the trim threshold (32 MiB) gives it back down to the
# top pad (16 MiB), which stays for the next step's tensors
before = p.memory_info().rss
blocks = [touched(MiB) for _ in range(48)]
for b in reversed(blocks):
    libc.free(ctypes.c_void_p(b))
kept = p.memory_info().rss - before
print(applied, large, kept)
"""


def _probe(env_extra: dict[str, str]) -> tuple[str, int, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update({"PYTHONPATH": str(REPO / "src"), **env_extra})
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    applied, large, kept = out.stdout.split()
    return applied, int(large), int(kept)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")
def test_large_blocks_return_to_the_os_and_the_heap_keeps_a_bounded_pad():
    applied, large, kept = _probe({})
    assert applied == "True"
    assert large < 4 << 20, large  # both large blocks were unmapped on free
    assert 8 << 20 <= kept <= 24 << 20, kept  # trimmed above 32 MiB, down to the 16 MiB pad


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")
@pytest.mark.parametrize("env", [{"MALLOC_MMAP_THRESHOLD_": "65536"}, {"MALLOC_TRIM_THRESHOLD_": "131072"},
                                 {"MALLOC_TOP_PAD_": "0"}, {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}])
def test_an_explicit_malloc_setting_is_left_alone(env):
    applied, _, kept = _probe(env)
    assert applied == "False"
    assert kept < 8 << 20, kept  # glibc's own small trim threshold and pad, not ours
