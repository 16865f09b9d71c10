"""What a failed SQLite call means for the caller: :class:`StoreFull`, :class:`StoreLocked`, another
:class:`StoreUnavailable` (retry later), or the original exception (the data itself was refused)."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

from rlcockpit.store.base import StoreFull, StoreLocked, StoreUnavailable

# SQLite primary result codes (``sqlite3.Error.sqlite_errorcode & 0xFF``)
_BUSY, _LOCKED, _READONLY, _IOERR, _FULL, _CANTOPEN = 5, 6, 8, 10, 13, 14


def translate_error(exc: BaseException, path: Path, busy_s: float) -> BaseException:
    """The store error a caller can act on (:class:`StoreFull`, :class:`StoreLocked`, ...) for a
    low-level failure, or ``exc`` itself when it is not about the disk or the lock."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return StoreFull(f"store {path}: the disk is full ({exc.strerror})")
    if not isinstance(exc, sqlite3.Error):
        return exc
    code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
    text = str(exc)
    if code == _FULL or "disk is full" in text:
        return StoreFull(f"store {path}: the disk is full ({text})")
    if code in (_BUSY, _LOCKED) or "locked" in text:
        return StoreLocked(f"store {path}: locked by another process for more than {busy_s:g}s ({text})")
    if code in (_IOERR, _CANTOPEN) or "I/O error" in text or "unable to open" in text:
        if _disk_full(path):  # SQLite reports some ENOSPC cases (the WAL index, a file extension) as I/O errors
            return StoreFull(f"store {path}: the disk is full ({text}; no space left on {path.parent})")
        return StoreUnavailable("io", f"store {path}: I/O error ({text})")
    if code == _READONLY or "readonly" in text:
        return StoreUnavailable("readonly", f"store {path}: cannot be written ({text})")
    return exc


def _disk_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < 64 * 1024
    except OSError:
        return False
