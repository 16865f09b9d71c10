"""Run storage: the embedded SQLite store behind a small interface (see :mod:`rlcockpit.store.base`)."""

from rlcockpit.store.base import STORES, Store, effective_status, open_store, resolve_dir

__all__ = ["STORES", "Store", "effective_status", "open_store", "resolve_dir"]
