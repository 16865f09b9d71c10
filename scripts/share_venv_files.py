"""Hard-link a side venv's files to identical ones in the main venv, so three venvs cost one torch on disk.

Why: `make test` builds three venvs (.venv, .venv-verl, .venv-vllm), each with the same 2.13.0 CPU torch
(~750 MB) and many of the same numpy/pandas/pyarrow files; on a CI disk with little room the third venv's
install once failed with "No space left on device". pip installs each file by writing a new one and removes
files by unlinking them, so a hard-linked file is never changed under the other venv: upgrading a package in
one venv writes new files there and leaves the other's links intact.

A file is linked only when the relative path, the size, the mode and the bytes are the same. Byte-compiled files
(``*.pyc``) embed their source's path, so they differ between venvs and stay separate, as do the console
scripts in ``bin/`` (their shebang names the venv's python). Stdlib only: it runs before any venv is usable.

Usage: python3 scripts/share_venv_files.py SIDE_VENV MAIN_VENV
"""

from __future__ import annotations

import filecmp
import os
import sys
from pathlib import Path


def site_packages(venv: Path) -> Path | None:
    """The venv's ``lib/pythonX.Y/site-packages``, or None when it has none (not built yet)."""
    found = sorted(venv.glob("lib/python*/site-packages"))
    return found[0] if found else None


def share(side: Path, main: Path) -> tuple[int, int]:
    """Link identical files of ``side`` to ``main``; returns (files linked, bytes saved)."""
    linked = saved = 0
    for root, _dirs, files in os.walk(side):
        for name in files:
            path = Path(root, name)
            twin = main / path.relative_to(side)
            try:
                st, tw = path.lstat(), twin.lstat()
            except FileNotFoundError:
                continue
            if (not path.is_file() or path.is_symlink() or twin.is_symlink() or st.st_size != tw.st_size
                    or st.st_mode != tw.st_mode or st.st_ino == tw.st_ino or st.st_dev != tw.st_dev
                    or st.st_size == 0 or not filecmp.cmp(path, twin, shallow=False)):
                continue
            tmp = path.with_name(path.name + ".share-tmp")
            try:
                os.link(twin, tmp)
                os.replace(tmp, path)
            except OSError:  # another filesystem, a read-only tree: keep the copy
                tmp.unlink(missing_ok=True)
                continue
            linked += 1
            saved += st.st_size
    return linked, saved


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    side, main_sp = site_packages(Path(argv[0])), site_packages(Path(argv[1]))
    if side is None or main_sp is None:
        print(f"share_venv_files: nothing to share ({argv[0]} or {argv[1]} has no site-packages)")
        return 0
    linked, saved = share(side, main_sp)
    print(f"share_venv_files: {linked} files of {argv[0]} hard-linked to {argv[1]} ({saved / 2**20:.0f} MiB saved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
