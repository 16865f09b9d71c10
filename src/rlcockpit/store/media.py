"""Logged images, content-addressed beside the store: ``<store>/media/objects/<sha256[:2]>/<sha256[2:]>``.

Why here and in this form: W&B keeps a logged image as a file of the run and puts a small ``image-file``
reference (path, sha256, size, width, height, format) in the history row or table cell. rlcockpit stores the
reference the same way (in sample rows), and the bytes once per content in a :class:`BlobStore` of their own
(``media/``, not ``artifacts/``: the artifact garbage collector frees objects no artifact version references,
and images are referenced by sample rows, not versions). The same image logged at every step — a probe
prompt's picture — is one file.

A reference read back from the store is data, not a path: the file is always found from its ``sha256`` (64
hex digits, checked) and never from the stored ``path`` text, so no stored value can point outside the media
root.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcockpit.store.blobs import BlobStore

MEDIA_DIR = "media"
IMAGE_TYPE = "image-file"  # W&B's ``_type`` of an image reference in a history row or table cell
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
CONTENT_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}


class MediaError(ValueError):
    """A reference that names no stored image (bad digest, or the file is gone); the message says which."""


def is_image_ref(value: Any) -> bool:
    """A stored image reference (``{"_type": "image-file", "sha256": ...}``)."""
    return isinstance(value, Mapping) and value.get("_type") == IMAGE_TYPE and isinstance(value.get("sha256"), str)


def check_digest(digest: Any) -> str:
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise MediaError(f"{digest!r} is not an image digest (64 lowercase hex digits)")
    return digest


class MediaStore:
    """The media objects of the store at ``dir``."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)
        self.blobs = BlobStore(self.dir / MEDIA_DIR)

    def put_bytes(self, data: bytes) -> str:
        """Store ``data`` once (written to a temporary name, then renamed); returns its sha256."""
        digest = hashlib.sha256(data).hexdigest()
        if self.blobs.has(digest):
            return digest
        self.blobs.tmp.mkdir(parents=True, exist_ok=True)
        tmp = self.blobs.tmp / f"{uuid.uuid4().hex}.in"
        try:
            tmp.write_bytes(data)
            self.blobs.put(tmp, digest, link=True)
        finally:
            tmp.unlink(missing_ok=True)
        return digest

    def file(self, ref_or_digest: Mapping[str, Any] | str) -> Path:
        """The stored file of a reference (or digest); :class:`MediaError` when it is not there."""
        digest = ref_or_digest.get("sha256") if isinstance(ref_or_digest, Mapping) else ref_or_digest
        path = self.blobs.path(check_digest(digest))
        if not path.is_file():
            raise MediaError(f"image {digest[:12]}… is not in {self.blobs.objects} (was the store copied without "
                             f"its {MEDIA_DIR}/ folder?)")
        return path

    def relpath(self, digest: str) -> str:
        """The reference's ``path``: relative to the store directory, as W&B's is relative to the run's files."""
        return self.blobs.path(check_digest(digest)).relative_to(self.dir).as_posix()


def row_images(row: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(column, reference)`` for each image in a stored sample row: a cell holding one, or a list of them."""
    out = []
    for k, v in row.items():
        if is_image_ref(v):
            out.append((k, dict(v)))
        elif isinstance(v, list):
            out.extend((k, dict(x)) for x in v if is_image_ref(x))
    return out
