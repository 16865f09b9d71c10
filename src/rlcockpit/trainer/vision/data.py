"""verl's multimodal rows: an image column (``data.image_key``, default ``images``) and ``<image>`` placeholders.

The layout is the one verl's ``examples/data_preprocess/geo3k.py`` writes: ``prompt`` chat messages whose text
holds one ``<image>`` per picture, an ``images`` list of ``{"bytes": ..., "path": ...}`` cells (or paths, or
encoded bytes), ``reward_model.ground_truth`` and ``data_source``. As verl's ``RLHFDataset._build_messages``
does, each message's text is split at the placeholders into ``[{"type": "image"}, {"type": "text", ...}]`` parts
for the processor's chat template.

Why cells are checked when loading: a bad picture found at step 300 kills a run hours in; found here, it is one
row named and left out. An image that PIL cannot decode, one larger than ``max_pixels`` (the processor's own
limit: larger images would be resized by it, costing memory the preflight did not plan for), or a count of
images that differs from the count of ``<image>`` placeholders rejects that row — with its file, row number,
column and image index — and every other row is kept.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from typing import Any

# qwen-vl-utils' MAX_PIXELS (16384 * 28 * 28), which verl's process_image applies when the processor gives none
DEFAULT_MAX_PIXELS = 16384 * 28 * 28
PLACEHOLDER = "<image>"
_SPLIT = re.compile("(<image>|<video>|<audio>)")


class ImageCellError(ValueError):
    """One image cell of one row is unusable; the message names file, row, column and image."""


def max_pixels_of(processor: Any) -> int:
    """The processor's image limit (``size["longest_edge"]``, which is what transformers' Qwen2-VL image processor
    resizes to — its ``max_pixels`` attribute may keep the class default; else that attribute), else
    qwen-vl-utils' default."""
    ip = getattr(processor, "image_processor", processor)
    size = getattr(ip, "size", None)  # a dict, or transformers' SizeDict (attributes, not a Mapping)
    pick = size.get if isinstance(size, Mapping) else (lambda k: getattr(size, k, None))
    value = (pick("longest_edge") or pick("max_pixels")) if size is not None else None
    value = value or getattr(ip, "max_pixels", None)
    return int(value) if value else DEFAULT_MAX_PIXELS


def _cell_bytes(cell: Any, base_dir: str | None) -> tuple[bytes, int | None]:
    """The encoded bytes of one image cell and its own ``max_pixels`` (verl allows it per cell)."""
    limit = None
    if isinstance(cell, Mapping):
        limit = cell.get("max_pixels")
        raw = cell.get("bytes")
        if raw is None:
            cell = cell.get("path") or cell.get("image")
        else:
            return bytes(raw), limit
    if isinstance(cell, (bytes, bytearray, memoryview)):
        return bytes(cell), limit
    if isinstance(cell, (str, os.PathLike)):
        path = os.fspath(cell).removeprefix("file://")
        if base_dir and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        with open(path, "rb") as f:
            return f.read(), limit
    raise ValueError(f"a {type(cell).__name__} is not an image cell (expected {{'bytes': ...}}, a path or bytes)")


def decode_images(cells: Any, where: str, column: str, max_pixels: int, base_dir: str | None = None) -> list[Any]:
    """The row's images as RGB PIL images; :class:`ImageCellError` names the first unusable one."""
    from PIL import Image, UnidentifiedImageError

    if cells is None:
        return []
    if isinstance(cells, (Mapping, bytes, str)):
        cells = [cells]
    out = []
    for j, cell in enumerate(list(cells)):
        at = f"{where}: column {column!r} image {j}"
        try:
            raw, own_limit = _cell_bytes(cell, base_dir)
            with Image.open(io.BytesIO(raw)) as im:
                im.load()
                rgb = im.convert("RGB")
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
            raise ImageCellError(f"{at}: not a decodable image ({type(exc).__name__}: {exc})") from None
        limit = int(own_limit or max_pixels)
        if rgb.width * rgb.height > limit:
            raise ImageCellError(f"{at}: {rgb.width}x{rgb.height} = {rgb.width * rgb.height} pixels is more than "
                                 f"max_pixels={limit} (the processor's limit); resize it, or raise the limit")
        out.append(rgb)
    return out


def count_placeholders(prompt: Any) -> int:
    if isinstance(prompt, str):
        return prompt.count(PLACEHOLDER)
    return sum(str(m.get("content") or "").count(PLACEHOLDER) for m in prompt if isinstance(m.get("content"), str))


def build_messages(prompt: Any) -> list[dict[str, Any]]:
    """verl's ``_build_messages``: each ``<image>`` in a message's text becomes an ``{"type": "image"}`` part, the
    text around it ``{"type": "text"}`` parts (the form a processor's chat template expects)."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    out = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, str) or PLACEHOLDER not in content:
            out.append(dict(m))
            continue
        parts = [{"type": "image"} if seg == PLACEHOLDER else {"type": "text", "text": seg}
                 for seg in _SPLIT.split(content) if seg != ""]
        out.append({**m, "content": parts})
    return out


def attach_images(raw: Mapping[str, Any], prompt: Any, where: str, column: str, max_pixels: int,
                  base_dir: str | None = None) -> list[Any]:
    """The decoded images of one raw row, checked against the prompt's ``<image>`` count."""
    images = decode_images(raw.get(column), where, column, max_pixels, base_dir)
    wanted = count_placeholders(prompt)
    if wanted != len(images):
        raise ImageCellError(f"{where}: column {column!r} holds {len(images)} image(s) but the prompt has {wanted} "
                             f"{PLACEHOLDER} placeholder(s); verl pairs them one to one")
    return images
