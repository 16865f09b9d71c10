"""QA with data as verl users have it (docs/qa/verl-inputs.md): examples/ppo_trainer/run_qwen2-7b_seq_balance.sh
points data.train_files at ``hdfs://`` paths, GSM8K-schema rows are often kept as one JSON array, and a broken
parquet file gave pyarrow's message without the file's name."""

from __future__ import annotations

import json

import pytest
from hf_fixtures import gsm8k_rows

from rlcockpit.trainer.data import DataError, _read_file


def test_hdfs_path_says_remote_paths_are_not_read():
    with pytest.raises(FileNotFoundError, match=r"hdfs://haruna/x/train.parquet \(remote paths such as hdfs://"):
        _read_file("hdfs://haruna/x/train.parquet")


def test_a_directory_says_give_the_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="a directory: give the .parquet files"):
        _read_file(str(tmp_path))


def test_json_array_file_is_read_as_rows(tmp_path):
    rows = gsm8k_rows(3)
    f = tmp_path / "train.json"
    f.write_text(json.dumps(rows, indent=2))
    assert _read_file(str(f)) == rows
    f.write_text(json.dumps([rows[0], "oops"]))
    with pytest.raises(DataError, match=r"train.json: row 1: expected an object, got str"):
        _read_file(str(f))


def test_broken_parquet_names_the_file(tmp_path):
    f = tmp_path / "cut.parquet"
    f.write_bytes(b"PAR1 not really")
    with pytest.raises(DataError, match=r"cut.parquet: not a readable parquet file"):
        _read_file(str(f))
