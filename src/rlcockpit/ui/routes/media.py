"""The logged images of a run (sample thumbnails), served from the store's content-addressed media folder.

An image is served only for a run the caller may see and only when one of that run's sample rows refers to
its digest, so a digest learnt elsewhere opens nothing of another project. The file is found from the
digest alone (:class:`rlcockpit.store.media.MediaStore`), never from a stored path.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from rlcockpit.store.media import CONTENT_TYPES, MediaError, MediaStore, check_digest
from rlcockpit.ui.params import ApiError, Cockpit, cockpit
from rlcockpit.ui.routes.runs import visible_run

router = APIRouter(prefix="/api", tags=["media"])
Ctx = Annotated[Cockpit, Depends(cockpit)]


@router.get("/runs/{run}/media/{digest}", summary="A logged image of the run (by its sha256), as stored",
            response_class=Response)
def get_media(ctx: Ctx, request: Request, run: str, digest: str) -> Response:
    r = visible_run(ctx, request, run)
    try:
        check_digest(digest)
    except MediaError as exc:
        raise ApiError(400, str(exc)) from None
    store_dir = getattr(ctx.store, "dir", None)
    if store_dir is None or not ctx.store.samples(r["id"], None, limit=1, query=digest):
        raise ApiError(404, f"run {r['id']} logged no image {digest[:12]}…")
    try:
        path = MediaStore(store_dir).file(digest)
    except MediaError as exc:
        raise ApiError(404, str(exc)) from None
    head = path.read_bytes()
    kind = next((fmt for fmt, magic in _MAGIC.items() if head.startswith(magic)), None)
    return Response(head, media_type=CONTENT_TYPES.get(kind or "", "application/octet-stream"),
                    headers={"cache-control": "private, max-age=31536000, immutable",
                             "x-content-type-options": "nosniff"})


_MAGIC = {"png": b"\x89PNG", "jpeg": b"\xff\xd8\xff", "gif": b"GIF8", "webp": b"RIFF"}
