"""Choosing a store by URL: ``sqlite:///path/to/dir``, ``postgresql://user@host/db``, or a plain directory.

Every reader and writer opens its store through :func:`rlcockpit.store.open_store`, which comes here
for URLs and for ``$RLCOCKPIT_STORE`` — so ``init(store=...)``, ``Api(store=...)``, the CLI's ``--store``
and the environment variable all accept the same strings. Precedence: an explicit argument, then
``$RLCOCKPIT_STORE``, then ``$RLCOCKPIT_DIR``, then ``./rlcockpit``.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from rlcockpit.registry import Registry
from rlcockpit.store.base import Store

STORE_ENV = "RLCOCKPIT_STORE"
# The one home of the URL schemes that choose a store: each store kind (a name in ``STORES``) under its
# canonical scheme, with the spellings SQLAlchemy and libpq users write as aliases. ``open_url`` (stores) and
# ``store.sql.open_database`` (the sweep/artifact tables) both read it, so they accept the same URLs.
STORE_SCHEMES: Registry[str] = Registry("store URL scheme")
STORE_SCHEMES.add("sqlite", "sqlite")
STORE_SCHEMES.add("postgresql", "postgresql", "postgres", "postgresql+psycopg")


def url_kind(url: str) -> str | None:
    """The store kind ``url``'s scheme names (``"sqlite"``, ``"postgresql"``), ``None`` for another scheme."""
    scheme = url.split("://", 1)[0].lower()
    return STORE_SCHEMES.get(scheme) if scheme in STORE_SCHEMES else None


def postgres_dsn(url: str) -> str:
    """The libpq URL of a PostgreSQL store URL in any accepted spelling (``postgres://``, ``+psycopg``)."""
    return "postgresql://" + url.split("://", 1)[1]


def store_url(target: str | os.PathLike[str] | None) -> str | None:
    """The URL ``target`` names (``None`` for a plain directory), falling back to ``$RLCOCKPIT_STORE``."""
    if target is None:
        target = os.environ.get(STORE_ENV) or None
        if target is None:
            return None
    text = os.fspath(target)
    return text if "://" in text else None


def sqlite_dir(url: str) -> Path:
    """The store directory of ``sqlite:///abs/dir`` (or ``sqlite:///abs/dir/rlcockpit.db``)."""
    parts = urllib.parse.urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"store URL {url!r}: use sqlite:///ABSOLUTE/PATH (three slashes) or a plain directory")
    path = Path(urllib.parse.unquote(parts.path)).expanduser()
    if path.suffix == ".db":
        if path.name != "rlcockpit.db":
            raise ValueError(f"store URL {url!r}: the database file of a store is always rlcockpit.db; give its "
                             "directory")
        path = path.parent
    return path.resolve()


def open_url(url: str) -> Store:
    """Open the store ``url`` names."""
    scheme, kind = url.split("://", 1)[0].lower(), url_kind(url)
    if kind == "sqlite":
        from rlcockpit.store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_dir(url))
    if kind == "postgresql":
        from rlcockpit.store.postgres.store import PostgresStore

        return PostgresStore(postgres_dsn(url))
    if scheme in ("http", "https"):
        raise ValueError(f"store {url!r} is a team server: log to it with RLCOCKPIT_SERVER=... (or "
                         "init(server=...)); read it in the browser, or open its PostgreSQL database directly")
    raise ValueError(f"unknown store URL scheme {scheme!r} in {url!r} (use sqlite:///DIR, postgresql://... or a "
                     "directory)")


def open_run_store(dir: Path, *, dir_given: bool, store: str | os.PathLike[str] | Store | None = None,
                   server: str | None = None, token: str | None = None) -> Store:
    """The store a new run writes to: ``server`` (or ``$RLCOCKPIT_SERVER``) → the team server through a
    spool in ``dir/spool``; else ``store`` (a URL, directory or Store); else ``$RLCOCKPIT_STORE`` unless a
    ``dir`` was given; else the SQLite store in ``dir``."""
    from rlcockpit.store.base import open_store

    server = server or os.environ.get("RLCOCKPIT_SERVER") or None
    if server:
        from rlcockpit.store.remote.client import RemoteStore

        return RemoteStore(server, token or os.environ.get("RLCOCKPIT_TOKEN") or None, spool_dir=dir / "spool")
    if isinstance(store, Store):
        return store
    if store is not None:
        return open_store(store)
    if not dir_given and os.environ.get(STORE_ENV):
        return open_store(os.environ[STORE_ENV])
    return open_store(dir)
