"""Reading TensorBoard event files record by record, so damage is found, named and survived.

Why not TensorBoard's ``EventAccumulator``: it stops at the first bad record without saying so (a
flipped byte or a cut-off tail silently imports half a run). An event file is a sequence of TFRecords —
``uint64 length | uint32 masked crc32c(length) | data | uint32 masked crc32c(data)`` — so each record is
checked here; at a bad one the error (file, byte offset, what is wrong) is kept, and reading resumes at
the next offset where a record with valid checksums starts (a scan of at most :data:`RESYNC_BYTES`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import google_crc32c

RESYNC_BYTES = 64 * 1024 * 1024
MAX_RECORD = 256 * 1024 * 1024  # a length field beyond this is damage, not a record


def masked_crc(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@dataclass
class Damage:
    """A part of an event file that could not be read."""

    path: Path
    offset: int
    reason: str
    resumed_at: int | None = None  # where reading went on (None: nothing readable after it)

    def describe(self) -> str:
        tail = (f"; reading resumed at offset {self.resumed_at}" if self.resumed_at is not None
                else "; nothing readable after it")
        return f"damaged record at offset {self.offset}: {self.reason}{tail}"

    def __str__(self) -> str:
        return f"{self.path}: {self.describe()}"


@dataclass
class RecordReader:
    path: Path
    damage: list[Damage] = field(default_factory=list)

    def records(self) -> Iterator[bytes]:
        data = self.path.read_bytes()
        pos, n = 0, len(data)
        while pos < n:
            problem = _check(data, pos)
            if problem is None:
                (length,) = struct.unpack_from("<Q", data, pos)
                yield data[pos + 12 : pos + 12 + length]
                pos += 16 + length
                continue
            nxt = _resync(data, pos + 1)
            self.damage.append(Damage(self.path, pos, problem, nxt))
            if nxt is None:
                return
            pos = nxt


def _check(data: bytes, pos: int) -> str | None:
    """Why the record at ``pos`` is not valid, or ``None``."""
    n = len(data)
    if pos + 12 > n:
        return f"the file ends inside a record header ({n - pos} of 12 bytes)"
    header = data[pos : pos + 8]
    (crc_len,) = struct.unpack_from("<I", data, pos + 8)
    if masked_crc(header) != crc_len:
        return "the length field fails its checksum"
    (length,) = struct.unpack_from("<Q", data, pos)
    if length > MAX_RECORD:
        return f"implausible record length {length}"
    if pos + 16 + length > n:
        return f"the file ends inside a record ({n - pos} of {16 + length} bytes): cut off"
    (crc_data,) = struct.unpack_from("<I", data, pos + 12 + length)
    if masked_crc(data[pos + 12 : pos + 12 + length]) != crc_data:
        return "the record's data fails its checksum (a changed byte)"
    return None


def _resync(data: bytes, start: int) -> int | None:
    """The next offset at which a valid record starts."""
    end = min(len(data) - 12, start + RESYNC_BYTES)
    for pos in range(start, end + 1):
        if _check(data, pos) is None:
            return pos
    return None


def read_scalars(path: Path, into: dict[int, dict[str, float]]) -> list[Damage]:
    """Add every scalar of the event file ``path`` to ``into`` (step -> {tag: value}); returns the damage."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.util import tensor_util

    reader = RecordReader(path)
    for raw in reader.records():
        try:
            event = event_pb2.Event.FromString(raw)
        except Exception:  # noqa: BLE001 - checksums matched but the proto does not parse: skip the record
            continue
        if not event.HasField("summary"):
            continue
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "simple_value":
                into.setdefault(int(event.step), {})[value.tag] = float(value.simple_value)
            elif kind == "tensor" and value.metadata.plugin_data.plugin_name in ("scalars", ""):
                try:
                    arr = tensor_util.make_ndarray(value.tensor)
                except Exception:  # noqa: BLE001 - a tensor we cannot decode is not a scalar
                    continue
                if arr.size == 1 and arr.dtype.kind in "biuf":
                    into.setdefault(int(event.step), {})[value.tag] = float(arr.reshape(-1)[0])
    return reader.damage
