"""A throwaway PostgreSQL cluster for the whole test session, and a clean schema per test.

The cluster is real (``rlcockpit.server.pgcluster``: initdb in a temp dir, loopback, ephemeral port, run
as an unprivileged user when the tests run as root). ``make test`` installs PostgreSQL when missing, so
no test skips for its absence. Each test gets its own schema (``search_path`` in the URL): cheaper than
a database per test, and nothing leaks between tests.
"""

from __future__ import annotations

import urllib.parse
import uuid

import psycopg

from rlcockpit.server.pgcluster import PgCluster

_cluster: PgCluster | None = None


def cluster() -> PgCluster:
    global _cluster
    if _cluster is None:
        _cluster = PgCluster(fast=True).start()
    return _cluster


def shutdown() -> None:
    global _cluster
    if _cluster is not None:
        _cluster.destroy()
        _cluster = None


def fresh_schema_url(c: PgCluster) -> tuple[str, str]:
    """A new empty schema in the session's database: (url whose search_path is that schema, schema)."""
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(c.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    options = urllib.parse.quote(f"-csearch_path={name}")
    return f"{c.url}?options={options}", name


def drop_schema(c: PgCluster, name: str) -> None:
    if not c.running:
        return
    with psycopg.connect(c.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
