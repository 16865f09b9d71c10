"""The experiment tables' database: store directories and sqlite:/// URLs, read-only readers, clear refusals."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.state import SweepState


def test_directory_and_sqlite_url_name_the_same_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = open_database(tmp_path)
    b = open_database(f"sqlite:///{tmp_path}")
    c = open_database(f"sqlite:///{tmp_path}/rlcockpit.db")
    assert a.path == b.path == c.path == tmp_path.resolve() / "rlcockpit.db"
    monkeypatch.setenv("RLCOCKPIT_STORE", f"sqlite:///{tmp_path}")
    assert open_database().path == a.path
    with pytest.raises(ValueError, match="mysql:// stores are not supported"):
        open_database("mysql://user@localhost/db")  # postgresql:// is: tests/store/test_store_sql_postgres.py


def test_read_only_reader_sees_sweeps_and_cannot_write(tmp_path: Path) -> None:
    reader = open_database(tmp_path / "missing", read_only=False)  # creates an empty database file
    assert not reader.has_table("sweeps")
    sweep_id = rlcockpit.sweep({"method": "random", "parameters": {"x": {"values": [1, 2]}}}, dir=tmp_path)
    ro = open_database(tmp_path, read_only=True)
    assert ro.has_table("sweeps") and SweepState(ro).get(sweep_id)["method"] == "random"
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        with ro.transaction() as cur:
            cur.execute("DELETE FROM sweeps")
    assert SweepState(open_database(tmp_path)).get(sweep_id)["state"] == "running"
