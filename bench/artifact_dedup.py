"""Artifact dedup on a >= 1 GB checkpoint file: stored once however often it is logged.

    python bench/artifact_dedup.py [--gb 1.0] [--json]

A sparse file of ``--gb`` GiB (random 1 MiB blocks every 64 MiB so it is not all zeros) is logged as
``policy:v0``; then the same file again (same version, no copy), a second copy of it under another path
in a checkpoint directory with a new small file (new version ``v1``, the big file shared), and the first
version aliased ``best``. Reported: wall time of each log, bytes in the object store (must be one copy of the
big file plus the small one), and sha256 throughput. Everything is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def make_sparse(path: Path, size: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        f.truncate(size)
        for off in range(0, size, 64 << 20):
            f.seek(off)
            f.write(block[: min(len(block), size - off)])


def store_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "artifacts" / "objects").rglob("*") if p.is_file())


def bench(gb: float = 1.0) -> dict[str, Any]:
    from rlcockpit.store.artifacts import ArtifactRegistry

    size = int(gb * (1 << 30))
    tmp = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    try:
        big = tmp / "model.safetensors"
        make_sparse(big, size)
        reg = ArtifactRegistry(tmp / "store")
        t0 = time.perf_counter()
        v0 = reg.log([(big, "model.safetensors")], project="bench", name="policy", type="model")
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = reg.log([(big, "model.safetensors")], project="bench", name="policy", type="model")
        second = time.perf_counter() - t0
        ck = tmp / "global_step_2"
        ck.mkdir()
        shutil.copyfile(big, ck / "model.safetensors")
        (ck / "config.json").write_text('{"step": 2}')
        t0 = time.perf_counter()
        v1 = reg.log([(ck / "model.safetensors", "model.safetensors"), (ck / "config.json", "config.json")],
                     project="bench", name="policy", type="model")
        third = time.perf_counter() - t0
        reg.set_alias(v0, "best")
        stored = store_bytes(tmp / "store")
        gc = reg.gc(grace_s=0)
        out = {
            "file_bytes": size, "first_log_s": round(first, 2), "same_file_again_s": round(second, 2),
            "copy_in_new_version_s": round(third, 2), "versions": [v0.qualified_name, again.qualified_name,
                                                                    v1.qualified_name],
            "object_store_bytes": stored, "stored_copies_of_big_file": round(stored / size, 4),
            "sha256_gb_per_s": round(size / (1 << 30) / max(second, 1e-9), 2),
            "gc_freed_files": gc["freed_files"],
            "ok": again.id == v0.id and v1.version == 1 and stored < size + (1 << 20) and gc["freed_files"] == 0,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gb", type=float, default=1.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    r = bench(args.gb)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print(f"{r['file_bytes'] / (1 << 30):.2f} GiB file: first log {r['first_log_s']} s (hash + copy), same file "
              f"again {r['same_file_again_s']} s (hash only, {r['sha256_gb_per_s']} GiB/s), a copy in a new version "
              f"{r['copy_in_new_version_s']} s; versions {r['versions']}; object store holds "
              f"{r['stored_copies_of_big_file']}x the file")
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
