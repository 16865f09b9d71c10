"""Read a W&B offline run (``wandb/offline-run-*/run-*.wandb``) without a W&B server.

The ``.wandb`` file is a LevelDB-style record log (32 KiB blocks; each record: crc32 ``<I``, length
``<H``, type ``<B`` FULL/FIRST/MIDDLE/LAST, data) behind a 7-byte ``:W&B`` header; each assembled record
is a ``wandb.proto.wandb_internal_pb2.Record`` protobuf, which we parse with wandb's own message
classes. Recent wandb releases (0.2x+, Go core) no longer ship a Python reader for this file, so the
framing is read here, following the documented LevelDB log format.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlcockpit.integrations.verl_files import SourceError

BLOCK = 32768
HEADER = 7
IDENT = b":W&B"
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_TYPE_CRC = {t: zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (FULL, FIRST, MIDDLE, LAST)}


def find_wandb_file(path: str | Path) -> Path:
    """The ``run-*.wandb`` file for ``path``: the file itself, an ``offline-run-*`` dir, or a ``wandb/``
    dir (its newest run)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        direct = sorted(p.glob("run-*.wandb"))
        if direct:
            return direct[-1]
        runs = sorted(p.glob("offline-run-*/run-*.wandb")) or sorted(p.glob("*/run-*.wandb"))
        runs = runs or sorted(p.glob("wandb/offline-run-*/run-*.wandb"))
        if runs:
            return runs[-1]
    raise FileNotFoundError(f"no W&B run file (run-*.wandb) at {p}")


def iter_records(path: str | Path) -> Iterator[bytes]:
    """The raw protobuf records of a ``.wandb`` file; a torn or corrupt record raises :class:`SourceError`
    naming the record number and byte offset (records before it have been yielded)."""
    data = Path(path).read_bytes()
    if len(data) < HEADER or data[:4] != IDENT:
        raise SourceError(path, None, "not a W&B run file (missing ':W&B' header)")
    pos, n, pending = HEADER, 0, b""
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # block trailer padding
            pos += left
            continue
        if pos + HEADER > len(data):
            raise SourceError(path, None, f"record {n + 1} at byte {pos}: file ends inside a record header "
                                          "(the run may still be writing, or the file was cut)")
        crc, length, rtype = struct.unpack("<IHB", data[pos:pos + HEADER])
        if rtype == 0 and length == 0 and crc == 0:  # zero fill at the end of a preallocated block
            pos += left
            continue
        body = data[pos + HEADER:pos + HEADER + length]
        if len(body) < length:
            raise SourceError(path, None, f"record {n + 1} at byte {pos}: file ends inside the record")
        if rtype not in _TYPE_CRC or zlib.crc32(body, _TYPE_CRC[rtype]) & 0xFFFFFFFF != crc:
            raise SourceError(path, None, f"record {n + 1} at byte {pos}: bad checksum (corrupt data)")
        pos += HEADER + length
        if rtype == FULL:
            n += 1
            yield body
        elif rtype == FIRST:
            pending = body
        elif rtype == MIDDLE:
            pending += body
        else:
            n += 1
            yield pending + body
            pending = b""


def _value(text: str) -> Any:
    if text in ("NaN", "nan"):
        return math.nan
    if text in ("Infinity", "inf"):
        return math.inf
    if text in ("-Infinity", "-inf"):
        return -math.inf
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _item_key(item: Any) -> str:
    return "/".join(item.nested_key) if len(item.nested_key) else item.key


def read_offline_run(path: str | Path) -> dict[str, Any]:
    """``{"file", "run_id", "name", "project", "config", "rows": [(step, metrics)], "summary", "step_metric",
    "error"}``.

    Rows keep the keys as logged (``_step``/``_runtime``/``_timestamp`` dropped); ``error`` is the
    :class:`SourceError` that stopped the read early, if any (rows up to it are returned).
    ``step_metric`` is the x axis the run declared for all its keys (``define_metric("*", step_metric=S)``,
    as transformers' ``WandbCallback`` does with ``train/global_step``), else None.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    file = find_wandb_file(path)
    out: dict[str, Any] = {"file": str(file), "run_id": None, "name": None, "project": None, "config": {},
                           "rows": [], "summary": {}, "step_metric": None, "error": None}
    try:
        for raw in iter_records(file):
            rec = pb.Record()
            try:
                rec.ParseFromString(raw)
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError
                raise SourceError(file, None, f"record is not a W&B protobuf: {exc}") from None
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                out["run_id"] = rec.run.run_id or out["run_id"]
                out["name"] = rec.run.display_name or out["name"]
                out["project"] = rec.run.project or out["project"]
                for it in rec.run.config.update:
                    out["config"][_item_key(it)] = _value(it.value_json)
            elif kind == "config":
                for it in rec.config.update:
                    out["config"][_item_key(it)] = _value(it.value_json)
                for it in rec.config.remove:
                    out["config"].pop(_item_key(it), None)
            elif kind == "history":
                row = {_item_key(it): _value(it.value_json) for it in rec.history.item}
                step = row.pop("_step", None)
                if rec.history.HasField("step"):
                    step = rec.history.step.num
                for k in ("_runtime", "_timestamp"):
                    row.pop(k, None)
                if step is not None:
                    out["rows"].append((int(step), row))
            elif kind == "metric":
                if rec.metric.glob_name == "*" and rec.metric.step_metric:
                    out["step_metric"] = rec.metric.step_metric
            elif kind == "summary":
                for it in rec.summary.update:
                    if it.key or len(it.nested_key):
                        out["summary"][_item_key(it)] = _value(it.value_json)
    except SourceError as exc:
        out["error"] = exc
    out["config"].pop("_wandb", None)
    return out
