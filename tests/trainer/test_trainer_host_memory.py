"""The CPU allocator setting (glibc mmap threshold): applied in a fresh process, the user's own setting wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import ctypes, sys
from rlcockpit.trainer.host_memory import return_freed_memory_to_os
applied = return_freed_memory_to_os()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
# with the threshold fixed at 4 MiB, a freed 8 MiB block was mmapped: RSS drops back after free
import psutil
p = psutil.Process()
before = p.memory_info().rss
buf = libc.malloc(8 << 20)
ctypes.memset(buf, 1, 8 << 20)
libc.free(ctypes.c_void_p(buf))
buf = libc.malloc(6 << 20)  # glibc default: from the heap now (threshold raised to 8 MiB), kept after free
ctypes.memset(buf, 1, 6 << 20)
libc.free(ctypes.c_void_p(buf))
print(applied, p.memory_info().rss - before)
"""


def _probe(env_extra: dict[str, str]) -> tuple[str, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **env_extra}
    env.pop("MALLOC_MMAP_THRESHOLD_", None) if "MALLOC_MMAP_THRESHOLD_" not in env_extra else None
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    applied, grown = out.stdout.split()
    return applied, int(grown)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")
def test_freed_large_blocks_return_to_the_os():
    applied, grown = _probe({})
    assert applied == "True"
    assert grown < 4 << 20, grown  # both blocks were unmapped on free


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")
def test_an_explicit_malloc_setting_is_left_alone():
    applied, _ = _probe({"MALLOC_MMAP_THRESHOLD_": "65536"})
    assert applied == "False"
