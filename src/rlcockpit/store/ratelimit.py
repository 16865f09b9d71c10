"""Saying each distinct problem at once, and repeats of the same one at most every few seconds with how many
were held back: rate-limited, never silenced. Used for ``log()``'s refusals (one per kind of bad step, key...)
and the remote client's (one per kind of refused key, row or op)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable

_DIGITS = re.compile(r"\d+")


def kind_of(message: str) -> str:
    """The kind of a problem from its message: numbers blanked, so ``step 1.5`` and ``step 2.5`` are one kind."""
    return _DIGITS.sub("N", message)[:120]


class RepeatLimiter:
    """``limiter(kind, message)`` calls ``emit`` with the message the first time a ``kind`` is seen, and
    again at most every ``every_s`` seconds, then suffixed with how many repeats were not said."""

    def __init__(self, emit: Callable[[str], None], every_s: float = 60.0) -> None:
        self.emit, self.every_s = emit, every_s
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def __call__(self, kind: str, message: str) -> bool:
        now = time.monotonic()
        with self._lock:
            last, held = self._last.get(kind, (None, 0))
            if last is not None and now - last < self.every_s:
                self._last[kind] = (last, held + 1)
                return False
            if len(self._last) > 10_000:  # a flood of distinct kinds: forget the old ones, keep memory bounded
                self._last.clear()
            self._last[kind] = (now, 0)
        self.emit(message + (f" ({held} more like it since)" if held else ""))
        return True
