"""Read API, wandb-shaped: ``rlcockpit.Api(dir).runs(project)`` / ``.run(run_id)``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rlcockpit.store import open_store
from rlcockpit.store.base import Store


class StoredRun:
    """A run as stored: attributes are read when the object is made; data methods read live."""

    def __init__(self, store: Store, row: dict[str, Any]) -> None:
        self._store = store
        self._row = row
        self.id: str = row["id"]
        self.name: str = row["name"]
        self.project: str = row["project"]
        self.group: str | None = row.get("group")
        self.tags: list[str] = row.get("tags") or []
        self.status: str = row["status"]
        self.config: dict[str, Any] = row.get("config") or {}
        self.summary: dict[str, Any] = row.get("summary") or {}
        self.meta: dict[str, Any] = row.get("meta") or {}
        self.created_at: float = row["created_at"]
        self.last_step: int | None = row.get("last_step")

    def history(self, keys: Sequence[str] | None = None):
        """pandas DataFrame: one row per step (index ``step``), one column per key."""
        return self._store.history(self.id, keys)

    def series(self, key: str, **kw: Any):
        return self._store.series(self.id, key, **kw)

    def keys(self) -> list[str]:
        return self._store.keys(self.id)

    def samples(self, step: int | None = None, **kw: Any) -> list[dict[str, Any]]:
        return self._store.samples(self.id, step, **kw)

    def system(self):
        """System metrics (``system/*``) as a DataFrame indexed by wall-clock timestamp."""
        return self._store.system(self.id)

    def findings(self) -> list[dict[str, Any]]:
        return self._store.findings(self.id)

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return self._store.events(self.id, kind)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._row)

    def __repr__(self) -> str:
        return f"<StoredRun {self.project}/{self.name} id={self.id} status={self.status}>"


class Api:
    """Read access to a store: ``store`` (a URL — ``sqlite:///DIR``, ``postgresql://...`` — or a directory),
    else ``dir``, else ``$RLCOCKPIT_STORE``, else ``$RLCOCKPIT_DIR``, else ``./rlcockpit``."""

    def __init__(self, dir: str | os.PathLike[str] | None = None, *, store: str | os.PathLike[str] | None = None
                 ) -> None:
        self.store = open_store(store if store is not None else dir)

    def runs(self, project: str | None = None) -> list[StoredRun]:
        return [StoredRun(self.store, r) for r in self.store.list_runs(project)]

    def run(self, run_id: str) -> StoredRun:
        """A run by id, unique id prefix or unique name (``KeyError`` if none)."""
        return StoredRun(self.store, self.store.get_run(run_id))

    def artifact(self, name: str, type: str | None = None):
        """An artifact version: ``"policy:v3"``, ``"policy:best"``, ``"project/policy:latest"``."""
        return self._artifacts().resolve(name, type=type)

    def artifacts(self, project: str | None = None, name: str | None = None, type: str | None = None) -> list:
        """Every stored artifact version (filtered by project, name, type)."""
        return self._artifacts().versions(project, name, type)

    def _artifacts(self):
        from rlcockpit.store.artifacts import ArtifactRegistry

        store_dir = getattr(self.store, "dir", None)
        if store_dir is None:
            raise ValueError("artifacts live beside a local store (a directory or sqlite:///DIR); this store has none")
        return ArtifactRegistry(store_dir)
