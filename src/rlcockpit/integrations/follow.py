"""Follow a growing line-oriented file like ``tail -F``, with a position that survives restarts.

Why not just ``readline()`` in a loop: a training job writes the file while we read it, so the last
line may be half-written (we hold it back until its newline arrives), the file may not exist yet
(we wait), and a restarted job truncates or replaces it (verl's FileLogger reopens its file with
``"wb"``). A :class:`FollowState` (inode, byte offset, line number, fingerprint of the first line)
is what the watcher persists in the run's store, so a restarted watcher continues at the exact
byte where it stopped when the file is still the same one, and starts over when it is not.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HEAD_BYTES = 256  # how much of the file start identifies "the same file" across truncate+rewrite
MAX_READ = 16 * 1024 * 1024  # bytes read per poll, so one huge backlog does not starve other sources
MAX_LINE = 256 * 1024 * 1024  # a longer line is skipped (reported as ``(line, None)``), not held in memory


@dataclass
class FollowState:
    """Where a follower is in its file; JSON-serialisable (stored in the run's meta)."""

    inode: int | None = None
    offset: int = 0
    line: int = 0  # number of complete lines consumed (for error messages: the next line is line + 1)
    head: str | None = None  # sha1 of the file's first line (at most HEAD_BYTES bytes of it)
    head_len: int = 0
    generation: int = 0  # bumped every time the file was found truncated or replaced

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> FollowState:
        d = d or {}
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _head_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


class LineFollower:
    """Complete lines appended to ``path`` since the last poll.

    ``poll()`` returns ``(line_number, text)`` pairs (1-based line numbers) and sets :attr:`reset`
    when it found the file truncated or replaced since the previous position (the caller decides
    what that means, e.g. "a restarted job: skip steps already recorded").
    """

    def __init__(self, path: str | os.PathLike[str], state: FollowState | None = None) -> None:
        self.path = Path(path)
        self.state = state or FollowState()
        self.reset = False

    def _same_file(self, st: os.stat_result) -> bool:
        s = self.state
        if s.inode is not None and st.st_ino != s.inode:
            return False
        if st.st_size < s.offset:
            return False
        if s.head is not None and s.head_len:
            with open(self.path, "rb") as f:
                start = f.read(s.head_len)
            if _head_hash(start) != s.head:
                return False
        return True

    def poll(self) -> list[tuple[int, str | None]]:
        """Read what is new; ``[]`` when the file does not exist (yet) or nothing complete arrived. A line
        longer than the read window is read whole; one over :data:`MAX_LINE` comes back as ``(line, None)``."""
        self.reset = False
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        s = self.state
        if (s.inode is not None or s.offset > 0) and not self._same_file(st):
            self.reset = True
            s.offset, s.line, s.head, s.head_len = 0, 0, None, 0
            s.generation += 1
        s.inode = st.st_ino
        if st.st_size <= s.offset:
            return []
        with open(self.path, "rb") as f:
            if s.head is None:
                first = f.read(HEAD_BYTES)
                nl = first.find(b"\n")
                if nl >= 0 or len(first) >= HEAD_BYTES:
                    s.head_len = nl + 1 if nl >= 0 else HEAD_BYTES
                    s.head = _head_hash(first[: s.head_len])
            f.seek(s.offset)
            data = f.read(min(st.st_size - s.offset, MAX_READ))
            end = data.rfind(b"\n")
            if end < 0 and len(data) == MAX_READ:  # one line longer than the window: read on to its end
                return self._long_line(f, data)
        if end < 0:
            return []  # a partial line: wait for its newline
        chunk = data[: end + 1]
        out: list[tuple[int, str | None]] = []
        for raw in chunk.split(b"\n")[:-1]:
            s.line += 1
            out.append((s.line, raw.decode("utf-8", errors="replace").rstrip("\r")))
        s.offset += len(chunk)
        return out

    def _long_line(self, f: Any, head: bytes) -> list[tuple[int, str | None]]:
        """The line starting at the current offset, read whole (up to :data:`MAX_LINE`; a longer one is
        skipped and returned as ``(line, None)``); ``[]`` while its newline has not arrived."""
        s = self.state
        parts, size = [head], len(head)
        while True:
            more = f.read(MAX_READ)
            if not more:
                return []  # still being written
            nl = more.find(b"\n")
            if nl >= 0:
                size += nl + 1
                if size <= MAX_LINE:
                    parts.append(more[: nl + 1])
                break
            size += len(more)
            if size <= MAX_LINE:
                parts.append(more)
            else:
                parts = []
        s.line += 1
        s.offset += size
        if size > MAX_LINE:
            return [(s.line, None)]
        return [(s.line, b"".join(parts)[:-1].decode("utf-8", errors="replace").rstrip("\r"))]
