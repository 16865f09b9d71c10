"""verl's geo3k parquet layout (``examples/data_preprocess/geo3k.py`` through HF datasets), written in code."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# the arrow type HF datasets gives a list of Image features: list<struct<bytes: binary, path: string>>
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
SCHEMA = pa.schema([("data_source", pa.string()),
                    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
                    ("images", pa.list_(IMAGE)), ("ability", pa.string()),
                    ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
                    ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64()),
                                              ("answer", pa.string()), ("question", pa.string())]))])


def write_geo3k(path: Path, rows: list[dict]) -> Path:
    """``rows`` as a parquet file with verl's geo3k schema; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    return path
