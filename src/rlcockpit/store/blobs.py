"""Content-addressed files: ``<store>/artifacts/objects/<sha256[:2]>/<sha256[2:]>``.

A file is stored once however often it is logged (the same checkpoint saved as ``policy:v3`` and
``policy:best``, or re-logged after a resume). Objects are written to a temporary name and renamed, so a
crash never leaves a half-written object under a real digest, and they are never modified afterwards.
Garbage collection only frees objects older than a grace period, because an object is written before the
version that references it is committed.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from rlcockpit.paths import UnsafePathError

_DIGEST = re.compile(r"^[0-9a-f]{64}\Z")
CHUNK = 8 << 20  # 8 MiB reads: hashing runs at disk / memory speed


def sha256_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """``(hex digest, size)`` of a file, read in large chunks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            size += n
    return h.hexdigest(), size


def copy_hashing(src: str | os.PathLike[str], dst: Path) -> str:
    """Copy ``src`` to ``dst`` and return the sha256 of the bytes actually copied (one read of ``src``)."""
    h = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    with open(src, "rb", buffering=0) as fin, open(dst, "wb") as fout:
        while True:
            n = fin.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            fout.write(view[:n])
        fout.flush()
        os.fsync(fout.fileno())
    return h.hexdigest()


def _link_hashing(src: str | os.PathLike[str], dst: Path) -> str | None:
    """Hard-link ``src`` to ``dst`` and return the linked content's sha256 (None: cannot link here)."""
    try:
        os.link(src, dst)
    except OSError:
        return None
    return sha256_file(dst)[0]


class BlobStore:
    """The object directory of one store."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.tmp = self.root / "tmp"

    def path(self, digest: str) -> Path:
        """Where the object ``digest`` lives; a digest read from the store that is not 64 hex digits (a
        damaged or hostile row: ``../../x``) is refused rather than joined to the folder."""
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise UnsafePathError(f"stored file digest {digest!r} is not a sha256 (64 hex digits); refused")
        return self.objects / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def put(self, src: str | os.PathLike[str], digest: str | None = None, *, link: bool = False) -> tuple[str, int, bool]:
        """Store ``src``; returns ``(digest, size, stored_now)`` — False when the content was already there.

        ``link``: hard-link instead of copying when ``src`` is on the same file system — no extra disk and no
        copy, for files that are never rewritten in place (a freshly written checkpoint directory: its files
        become read-only)."""
        if digest is None:
            digest, size = sha256_file(src)
        else:
            size = os.path.getsize(src)
        dest = self.path(digest)
        if dest.is_file():
            os.utime(dest)  # fresh mtime: gc's grace period protects it until the version is committed
            return digest, size, False
        self.tmp.mkdir(parents=True, exist_ok=True)
        tmp = self.tmp / f"{uuid.uuid4().hex}.part"
        try:
            got = _link_hashing(src, tmp) if link else None
            if got is None:
                got = copy_hashing(src, tmp)
            if got != digest:  # the source changed while we copied it: refuse rather than store a lie
                raise OSError(f"{src} changed while it was being stored (sha256 {digest[:12]} -> {got[:12]}); "
                              "log it again once it is written")
            os.chmod(tmp, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return digest, size, True

    def digests(self) -> Iterator[str]:
        if not self.objects.is_dir():
            return
        for sub in self.objects.iterdir():
            if sub.is_dir() and len(sub.name) == 2:
                for f in sub.iterdir():
                    yield sub.name + f.name

    def free(self, referenced: Iterable[str], grace_s: float = 600.0, dry_run: bool = False) -> tuple[int, int]:
        """Delete objects no version references and older than ``grace_s``; returns ``(files, bytes)``."""
        keep = set(referenced)
        now = time.time()
        n = freed = 0
        for digest in list(self.digests()):
            if digest in keep:
                continue
            p = self.path(digest)
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            if now - st.st_mtime < grace_s:
                continue
            n += 1
            freed += st.st_size
            if not dry_run:
                p.unlink(missing_ok=True)
        if not dry_run and self.tmp.is_dir():
            for part in self.tmp.iterdir():  # leftovers of crashed writes
                if now - part.stat().st_mtime > grace_s:
                    part.unlink(missing_ok=True)
        return n, freed
