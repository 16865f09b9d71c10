"""PostgreSQL failures as the store errors callers act on (:class:`StoreFull`, :class:`StoreLocked`,
:class:`StoreUnavailable`), connection URLs with their secrets masked, and a first connection that says why it
failed (as ``sqlite_errors.py`` does for SQLite)."""

from __future__ import annotations

import urllib.parse

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from rlcockpit.store.base import StoreFull, StoreLocked, StoreUnavailable, ValueRefused


def redact_url(url: str) -> str:
    """``url`` with its password (and any ``password=`` query value) replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        cred, host = netloc.rsplit("@", 1)
        if ":" in cred:
            cred = cred.split(":", 1)[0] + ":***"
        netloc = f"{cred}@{host}"
    query = "&".join(("password=***" if q.lower().startswith("password=") else q) for q in parts.query.split("&")
                     if q)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def translate_error(exc: BaseException, where: str) -> BaseException:
    """The store error a caller can act on for a psycopg failure, or ``exc`` (about the data)."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, (psycopg.Error, PoolTimeout)):  # libpq's messages span lines: one line for consoles
        exc.args = (" ".join(str(exc).split()),) if exc.args else exc.args
    return _translate(exc, where)


def _translate(exc: BaseException, where: str) -> BaseException:
    if isinstance(exc, (psycopg.DataError, pg_errors.ProgramLimitExceeded, UnicodeEncodeError)):
        return ValueRefused(f"store {where}: a value cannot be stored ({' '.join(str(exc).split())[:300]})")
    if isinstance(exc, PoolTimeout):
        return StoreUnavailable("io", f"store {where}: no connection to the server ({exc})")
    if isinstance(exc, pg_errors.DiskFull):
        return StoreFull(f"store {where}: the server's disk is full ({exc})")
    if isinstance(exc, (pg_errors.LockNotAvailable, pg_errors.QueryCanceled, pg_errors.DeadlockDetected,
                        pg_errors.SerializationFailure)):
        return StoreLocked(f"store {where}: timed out waiting ({str(exc).strip()})")
    if isinstance(exc, (pg_errors.AdminShutdown, pg_errors.CannotConnectNow, pg_errors.ConnectionFailure,
                        pg_errors.TooManyConnections, pg_errors.ReadOnlySqlTransaction)):
        return StoreUnavailable("io", f"store {where}: server unavailable ({str(exc).strip()})")
    if isinstance(exc, psycopg.OperationalError) or (isinstance(exc, psycopg.InterfaceError)
                                                     and "closed" in str(exc)):
        return StoreUnavailable("io", f"store {where}: server unreachable ({str(exc).strip()})")
    if isinstance(exc, OSError):
        return StoreUnavailable("io", f"store {where}: {exc}")
    return exc


_HINTS = (
    ("no password supplied", "the server wants a password: postgresql://USER:PASSWORD@HOST/DB (or PGPASSWORD, ~/.pgpass)"),
    ("password authentication failed", "check the user and password in the URL"),
    ("does not exist", "create it: createuser USER; createdb -O USER DB (docs/team-server.md)"),
    ("connection refused", "is PostgreSQL running on that host and port? (service postgresql start)"),
    ("no pg_hba.conf entry", "allow this host in the server's pg_hba.conf"),
)


def probe(conninfo: str, where: str) -> None:
    """One direct connection before the pool opens: the pool would retry silently and report only a timeout
    after ``connect_timeout``, hiding libpq's reason (a missing password, an unknown database)."""
    try:
        psycopg.connect(conninfo, autocommit=True).close()
    except psycopg.OperationalError as exc:
        text = " ".join(str(exc).split())
        hint = next((h for needle, h in _HINTS if needle in text.lower()), "")
        raise StoreUnavailable("io", f"store {where}: cannot connect: {text}" + (f" — {hint}" if hint else "")
                               ) from exc
