"""Rendered responses of ended runs, kept in memory and validated by ETag.

A run that ended (``finished``, ``failed``, ``killed``, ``stopped``) no longer gets points, so its chart
series are the same bytes for every viewer: 200 people opening the same run page should not make the
server read and encode the same 75 series 200 times. The cache key is the request's path and query plus
the run's version (stored status, ``updated_at``, ``last_step``, ``finished_at``): resuming a run (status
back to ``running``), or anything else that touches the run row, changes the key. A running (or
heartbeat-lost ``crashed``) run is never cached. Responses carry ``Cache-Control: no-cache`` and an
``ETag``: a browser revalidates and gets an empty ``304`` when it already has the bytes. Bounded by
total size (least recently used first out); one cache per app (per worker process).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import Request
from starlette.responses import Response

from rlcockpit.ui.params import JSON

ENDED = frozenset({"finished", "failed", "killed", "stopped"})
MAX_BYTES = 64 * 2**20
MAX_ENTRY_BYTES = 16 * 2**20


def if_none_match(request: Request) -> set[str]:
    """The entity tags of the request's ``If-None-Match`` (weak ones compared as strong)."""
    header = request.headers.get("if-none-match", "")
    return {t.strip().removeprefix("W/") for t in header.split(",") if t.strip()}


class ResponseCache:
    """``respond(request, run, render)``: the cached bytes for an ended run, else ``render()`` as usual."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, tuple[bytes, str]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(request: Request, run: Mapping[str, Any]) -> tuple | None:
        if run.get("status") not in ENDED or run.get("stored_status", run.get("status")) not in ENDED:
            return None
        return (request.url.path, str(request.query_params), run.get("id"), run.get("stored_status"),
                run.get("updated_at"), run.get("last_step"), run.get("finished_at"))

    def respond(self, request: Request, run: Mapping[str, Any], render: Callable[[], Any]) -> Response:
        key = self.key(request, run)
        if key is None:
            return JSON(render())
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        if hit is None:
            body = JSON(render()).body
            hit = (body, '"' + hashlib.sha256(body).hexdigest()[:24] + '"')
            self._put(key, hit)
        body, etag = hit
        headers = {"cache-control": "no-cache", "etag": etag}
        if etag in if_none_match(request):
            return Response(status_code=304, headers=headers)
        return Response(body, media_type="application/json", headers=headers)

    def _put(self, key: tuple, entry: tuple[bytes, str]) -> None:
        if len(entry[0]) > MAX_ENTRY_BYTES:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = entry
            self._size += len(entry[0])
            while self._size > self.max_bytes and self._entries:
                _, (old, _) = self._entries.popitem(last=False)
                self._size -= len(old)
