"""Session-wide fixtures shared by several test folders: the throwaway PostgreSQL cluster."""

from __future__ import annotations

import pytest

import pg_support


@pytest.fixture(scope="session")
def pg_cluster():
    """A real PostgreSQL server on loopback for this session (started on first use, removed at the end)."""
    c = pg_support.cluster()
    yield c
    pg_support.shutdown()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A URL to an empty schema of the session's PostgreSQL (dropped after the test)."""
    url, name = pg_support.fresh_schema_url(pg_cluster)
    yield url
    pg_support.drop_schema(pg_cluster, name)
