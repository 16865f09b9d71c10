"""Helpers for the artifact tests (a uniquely named module)."""

from __future__ import annotations

import struct
from pathlib import Path


def wandb_records(path: Path) -> list:
    """Records of a ``.wandb`` transaction log (LevelDB log framing, W&B's own protobuf messages)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, out, buf = 32768, 7, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:
            break
        buf += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            rec = wandb_internal_pb2.Record()
            rec.ParseFromString(buf)
            out.append(rec)
            buf = b""
    return out
