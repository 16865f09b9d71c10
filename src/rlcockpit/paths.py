"""Every path built from a stored name stays inside its root.

A name that comes from the store, a run, an artifact manifest or a user's script (an artifact file's path,
a run id, a run name, a digest) is never joined to a folder as it is: ``../../victim``, ``/abs/x``, a NUL, or
a folder inside the root that is a link to somewhere else would make the write land outside. The one rule,
used by every file-writing command (artifact download, ``Artifact.new_file`` / ``add_file`` names, sink and
sweep folders, ``rlcockpit export``):

* :func:`check_relative` — the name itself: text, relative, no ``..`` part, no NUL, no empty part, each part
  at most 255 bytes (what file systems accept), normalised to ``a/b/c``.
* :func:`confined` — ``root / name`` resolved (links followed), refused unless it is still inside the
  resolved root; a link that leaves the tree is named in the error.

This module is on the ground floor (stdlib only).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

MAX_PART_BYTES = 255  # NAME_MAX of ext4/xfs/btrfs/apfs
MAX_NAME_BYTES = 4096  # PATH_MAX


class UnsafePathError(ValueError):
    """A stored name that would write outside its root; the message names the name and the root."""


def check_relative(name: object, what: str = "path") -> str:
    """``name`` as a normalised relative POSIX path (``a/./b/`` -> ``a/b``), or :class:`UnsafePathError`."""
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise UnsafePathError(f"{what} {name!r} must be text, not a {type(name).__name__}")
    if "\0" in name:
        raise UnsafePathError(f"{what} {name!r} contains a NUL character")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise UnsafePathError(f"{what} {name!r} contains a lone surrogate (not valid UTF-8)") from None
    if size > MAX_NAME_BYTES:
        raise UnsafePathError(f"{what} {name[:60]!r}… is {size} bytes long (at most {MAX_NAME_BYTES})")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
        raise UnsafePathError(f"{what} {name!r} is absolute; it must be relative to its folder")
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p != "."]
    if not parts:
        raise UnsafePathError(f"{what} {name!r} is empty")
    for part in parts:
        if part == "..":
            raise UnsafePathError(f"{what} {name!r} goes up with '..'; it must stay inside its folder")
        if len(part.encode("utf-8")) > MAX_PART_BYTES:
            raise UnsafePathError(f"{what} {name[:60]!r}…: the part {part[:40]!r}… is longer than "
                                  f"{MAX_PART_BYTES} bytes")
    return "/".join(parts)


def confined(root: str | os.PathLike[str], name: object, what: str = "path", *, replace_link: bool = False) -> Path:
    """``root / name`` inside the resolved ``root``, refused (:class:`UnsafePathError`) unless it stays there:
    ``name`` passes :func:`check_relative` and no link on the way (a folder, or the file itself) leads out.
    ``replace_link``: the caller removes a link found at the last part before writing (artifact downloads
    replace their earlier links), so that link's target does not matter."""
    rel = check_relative(name, what)
    base = Path(root).resolve()
    target = base / rel
    folder = target.parent.resolve()
    if not folder.is_relative_to(base):
        raise UnsafePathError(f"{what} {name!r} leads out of {base} through a link (to {folder}); refused")
    target = folder / target.name
    if not replace_link and target.is_symlink() and not target.resolve().is_relative_to(base):
        raise UnsafePathError(f"{what} {name!r} is a link out of {base} (to {target.resolve()}); refused")
    return target


def safe_filename(name: object, default: str = "file") -> str:
    """One path component made from free text (a run name): separators, NUL and control characters become
    ``_``, leading dots are dropped, at most 200 bytes; ``default`` when nothing is left."""
    text = str(name).encode("utf-8", "replace").decode("utf-8")
    cleaned = "".join("_" if c in "/\\\0" or ord(c) < 32 else c for c in text).lstrip(".").strip()
    while len(cleaned.encode("utf-8")) > 200:
        cleaned = cleaned[:-1]
    return cleaned or default
