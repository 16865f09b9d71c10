"""Read API, wandb-shaped: ``rlcockpit.Api(dir).runs(project)`` / ``.run(run_id)``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.store import open_store
from rlcockpit.store.base import Store
from rlcockpit.tracking import api_wandb


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
        # W&B's names for the same things
        self.state: str = self.status
        self.display_name: str = self.name
        self.notes: str | None = row.get("notes")
        self.job_type: str | None = self.meta.get("job_type")
        self.entity: str | None = self.meta.get("entity")
        self.path: list[str] = [p for p in (self.entity, self.project, self.id) if p]
        self.url: str = f"http://127.0.0.1:6007/#/run/{self.id}"

    def history(self, keys: Sequence[str] | None = None, samples: int | None = None, *, pandas: bool = True,
                x_axis: str | None = None, stream: str = "default"):
        """pandas DataFrame: one row per step (index ``step``), one column per key.

        W&B's arguments give W&B's shape: with ``samples`` (at most that many rows, evenly spaced), ``x_axis``
        or ``stream="system"`` the frame has a ``_step`` column and a plain index; ``pandas=False`` gives a
        list of ``{"_step": N, key: value}`` dicts."""
        df = self._store.history(self.id, keys) if stream != "system" else self._system_by_step()
        wandb_shape = samples is not None or x_axis is not None or stream != "default" or not pandas
        if not wandb_shape:
            return df
        if stream != "system":
            rows = list(api_wandb.wandb_rows(self._store, self.id, list(df.columns), require_all=False))
        else:
            rows = [{"_step": int(step), **{k: v for k, v in vals.items() if v == v}}
                    for step, vals in zip(df.index.tolist(), df.to_dict("records"))]
        rows = api_wandb.sample_rows(rows, samples)
        if not pandas:
            return rows
        import pandas as pd

        return pd.DataFrame(rows, columns=["_step", *df.columns]) if rows else pd.DataFrame(columns=["_step"])

    def scan_history(self, keys: Sequence[str] | None = None, page_size: int = 1000, min_step: int | None = None,
                     max_step: int | None = None):
        """As W&B's ``scan_history``: every row (no sampling) as a ``{"_step": N, key: value}`` dict; with
        ``keys``, only those keys and only the steps where all of them were logged. ``max_step`` is excluded.
        Values are as logged: a NaN loss comes back as NaN in its row (W&B's rows are its logged JSON)."""
        return api_wandb.wandb_rows(self._store, self.id, list(keys) if keys else None, min_step, max_step)

    def _system_by_step(self):
        df = self._store.system(self.id)
        return df.reset_index().drop(columns=["timestamp"]).groupby("step").last() if len(df) else df

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

    def runs(self, project: str | None = None, filters: Mapping[str, Any] | None = None, order: str | None = None,
             per_page: int = 50, **_: Any) -> list[StoredRun]:
        """Runs, newest first. ``project`` may be W&B's ``"entity/project"`` path; ``filters`` a W&B
        (MongoDB-style) filter such as ``{"config.lr": 1e-5, "state": "finished"}``; ``order`` e.g.
        ``"+summary_metrics.loss"`` (see :mod:`rlcockpit.tracking.api_wandb`)."""
        rows = self.store.list_runs(project)
        if not rows and project and "/" in project:
            rows = self.store.list_runs(api_wandb.split_path(project)[1])
        if filters:
            rows = [r for r in rows if api_wandb.matches(r, filters)]
        return [StoredRun(self.store, r) for r in api_wandb.order_rows(rows, order)]

    def run(self, run_id: str) -> StoredRun:
        """A run by id, unique id prefix or unique name (``KeyError`` if none); W&B's ``"entity/project/id"``
        path works too."""
        try:
            return StoredRun(self.store, self.store.get_run(run_id))
        except KeyError:
            if "/" not in run_id:
                raise
        return StoredRun(self.store, self.store.get_run(api_wandb.run_ref(run_id)))

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
