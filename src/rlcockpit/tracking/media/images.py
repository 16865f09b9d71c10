"""``rlcockpit.Image`` (``wandb.Image`` under ``import rlcockpit as wandb``) and how images reach the store.

An image is encoded when it is made, as W&B does (a numpy array the script changes afterwards must not change
what was logged): a PIL image or an array becomes PNG bytes; a file path or encoded bytes (verl's
``{"bytes": ...}`` image cells) keep their bytes when PIL reads them as PNG, JPEG, GIF or WebP, which a browser
shows as they are. The writer thread stores the bytes content-addressed (:class:`rlcockpit.store.media.MediaStore`)
and puts W&B's ``image-file`` reference in their place:

* ``log({"key": Image})`` or a list of images → one sample row per image at that step, ``{"table": key,
  "image": ref, "caption": ...}`` (as a W&B Table logged under ``key``);
* ``log_samples`` cells (and W&B Table cells) holding an image or a list of images — a VLM prompt's images —
  → the reference or the list of references in that cell.

``rlcockpit.Api().image(ref)`` reads one back as a PIL image; the dashboard shows them as thumbnails.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from rlcockpit.store.media import IMAGE_TYPE, MediaError, MediaStore, row_images

logger = logging.getLogger("rlcockpit")

KEPT_FORMATS = {"PNG": "png", "JPEG": "jpeg", "GIF": "gif", "WEBP": "webp"}  # stored as given: browsers show them


class Image:
    """``Image(data_or_path, mode=None, caption=None)``: a PIL image, a numpy array (H×W, H×W×C; floats in
    [0, 1] or [-1, 1] are scaled to 0..255 as W&B does), a torch tensor (C×H×W), a file path, encoded bytes,
    or a ``{"bytes": ..., "path": ...}`` cell. A value that is none of these raises ``ValueError`` naming it."""

    _rlcockpit_media = "image"

    def __init__(self, data_or_path: Any = None, mode: str | None = None, caption: str | None = None,
                 file_type: str | None = None, **_: Any) -> None:
        self.caption = None if caption is None else str(caption)
        self.png, self.format, self.width, self.height = encode_image(data_or_path, mode)

    def ref(self, media: MediaStore) -> dict[str, Any]:
        """Store the bytes; W&B's ``image-file`` reference to them."""
        digest = media.put_bytes(self.png)
        out = {"_type": IMAGE_TYPE, "sha256": digest, "path": media.relpath(digest), "size": len(self.png),
               "format": self.format, "width": self.width, "height": self.height}
        if self.caption is not None:
            out["caption"] = self.caption
        return out

    def sample_rows(self, key: str) -> list[dict[str, Any]]:
        """``log({key: image})`` as a sample row (the writer treats it like a one-row Table)."""
        return [{"table": key, "image": self, "caption": self.caption}]

    def to_pil(self) -> Any:
        from PIL import Image as PILImage

        return PILImage.open(io.BytesIO(self.png))

    def __repr__(self) -> str:
        return f"<rlcockpit.Image {self.width}x{self.height} {self.format} caption={self.caption!r}>"


class ImageList:
    """``log({key: [Image, ...]})``: one sample row per image (W&B logs the list as a gallery under ``key``)."""

    _rlcockpit_media = "table"

    def __init__(self, images: list[Image]) -> None:
        self.images = images

    def sample_rows(self, key: str) -> list[dict[str, Any]]:
        return [row for im in self.images for row in im.sample_rows(key)]


def image_bytes(value: Any) -> int:
    """Encoded bytes an image cell (one image or a list) keeps alive in the queue (``log_samples``' cost)."""
    if isinstance(value, Image):
        return len(value.png)
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], Image):
        return sum(len(v.png) for v in value if isinstance(v, Image))
    return 0


def is_image_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, Image) for v in value)


def encode_image(data: Any, mode: str | None = None) -> tuple[bytes, str, int, int]:
    """``(bytes, format, width, height)`` of an image given in any of :class:`Image`'s forms."""
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    if isinstance(data, Image):
        return data.png, data.format, data.width, data.height
    if isinstance(data, Mapping):  # verl / HF datasets image cell: {"bytes": b"...", "path": "..."}
        data = data.get("bytes") or data.get("path")
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as f:
            data = f.read()
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        try:
            with PILImage.open(io.BytesIO(raw)) as im:
                im.load()
                fmt, size = im.format, im.size
                if fmt in KEPT_FORMATS and mode is None:
                    return raw, KEPT_FORMATS[fmt], size[0], size[1]
                return _png(im.convert(mode) if mode else im)
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise ValueError(f"Image: {len(raw)} bytes that are not a readable image ({exc})") from None
    if isinstance(data, PILImage.Image):
        return _png(data.convert(mode) if mode else data)
    if hasattr(data, "detach"):  # a torch tensor: C×H×W, as W&B reads it
        data = data.detach().cpu().numpy()
        if data.ndim == 3:
            data = np.transpose(data, (1, 2, 0))
    if isinstance(data, np.ndarray):
        im = PILImage.fromarray(_to_uint8(data))
        return _png(im.convert(mode) if mode else im)
    raise ValueError(f"Image: cannot make an image from a {type(data).__name__} (expected a PIL image, a numpy "
                     "array, a torch tensor, a file path, encoded bytes or a {'bytes': ...} cell)")


def _to_uint8(array: np.ndarray) -> np.ndarray:
    """W&B's scaling: floats in [-1, 1] map to 0..255 via (x + 1) * 127.5, floats in [0, 1] via x * 255."""
    a = np.asarray(array)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[-1] not in (3, 4)):
        raise ValueError(f"Image: an array of shape {a.shape} is not an image (expected H×W, H×W×3 or H×W×4)")
    if a.dtype.kind == "f":
        if not np.isfinite(a).all():
            raise ValueError("Image: the array holds NaN or infinite values")
        if a.min() < 0:
            a = (a + 1) * 127.5
        elif a.max() <= 1:
            a = a * 255
    elif a.dtype.kind not in "biu":
        raise ValueError(f"Image: an array of dtype {a.dtype} is not an image")
    return np.clip(a, 0, 255).astype(np.uint8)


def _png(im: Any) -> tuple[bytes, str, int, int]:
    if im.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"):
        im = im.convert("RGB")
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue(), "png", im.size[0], im.size[1]


def store_row_images(row: Any, media: MediaStore, reject: Callable[[str, str], None]) -> Any:
    """``row`` with each cell holding an :class:`Image` (or a list of them) replaced by its stored reference;
    a cell whose image cannot be stored is dropped with ``reject(column, why)``, the rest of the row kept."""
    if not isinstance(row, Mapping) or not any(isinstance(v, Image) or is_image_list(v) for v in row.values()):
        return row
    out = dict(row)
    for k, v in row.items():
        try:
            if isinstance(v, Image):
                out[k] = v.ref(media)
            elif is_image_list(v):
                out[k] = [im.ref(media) for im in v]
        except OSError as exc:
            del out[k]
            reject(str(k), f"the image could not be stored ({exc})")
    return out


def sample_images(store_dir: Any, rows: Any) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """For the loggers: ``(tag, PIL image, reference)`` of each stored image in one step's sample rows; the tag
    is ``samples/<column>/<n>`` (n counts that column's images in the step). An image whose file is gone is
    skipped with a warning (the logger gets the rest)."""
    from PIL import Image as PILImage

    media = MediaStore(store_dir)
    counts: dict[str, int] = {}
    for row in rows:
        for column, ref in row_images(row):
            n = counts[column] = counts.get(column, -1) + 1
            try:
                with PILImage.open(media.file(ref)) as im:
                    im.load()
            except (MediaError, OSError) as exc:
                logger.warning("rlcockpit: image %s of column %r not sent to the logger: %s", n, column, exc)
                continue
            yield f"samples/{column}/{n}", im, ref
