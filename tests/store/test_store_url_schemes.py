"""The two ways to open a store by URL — ``open_store`` (the runs) and ``store.sql.open_database`` (the
sweep and artifact tables) — take the same schemes: both read the one scheme registry in store/urls.py. A
``postgres://`` or ``postgresql+psycopg://`` URL that works for ``init(store=...)`` must work for
``rlcockpit sweep`` too (it did not: ``open_database`` refused ``postgresql+psycopg://``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcockpit.store import open_store
from rlcockpit.store.postgres.sql import PostgresDatabase
from rlcockpit.store.postgres.store import PostgresStore
from rlcockpit.store.sql import SQLiteDatabase, open_database
from rlcockpit.store.sqlite import SQLiteStore
from rlcockpit.store.urls import STORE_SCHEMES, url_kind

PG_SPELLINGS = ("postgresql", "postgres", "postgresql+psycopg", "POSTGRES")


@pytest.mark.parametrize("scheme", PG_SPELLINGS)
def test_both_openers_take_every_postgres_spelling(pg_url: str, scheme: str) -> None:
    url = f"{scheme}://{pg_url.split('://', 1)[1]}"
    db = open_database(url)
    try:
        assert isinstance(db, PostgresDatabase) and not db.has_table("sweeps")  # connected to the real server
    finally:
        db.close()
    store = open_store(url)
    try:
        assert isinstance(store, PostgresStore) and store.list_runs() == []
    finally:
        store.close()


def test_both_openers_take_sqlite_urls_to_the_same_directory(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}"
    store = open_store(url)
    assert isinstance(store, SQLiteStore) and Path(store.dir) == tmp_path.resolve()
    store.close()
    db = open_database(url)
    assert isinstance(db, SQLiteDatabase)
    db.close()
    assert (tmp_path / "rlcockpit.db").is_file()


@pytest.mark.parametrize("url", ["mysql://h/db", "http://team:8000", "redis://h"])
def test_both_openers_refuse_other_schemes(tmp_path: Path, url: str) -> None:
    assert url_kind(url) is None
    with pytest.raises(ValueError, match="://|scheme"):
        open_store(url)
    with pytest.raises(ValueError, match="://"):
        open_database(url)


def test_the_registry_names_every_kind_once() -> None:
    assert STORE_SCHEMES.names() == ["postgresql", "sqlite"]
    assert {url_kind(f"{s}://x") for s in PG_SPELLINGS} == {"postgresql"}
