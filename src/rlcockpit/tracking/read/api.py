"""Read API, wandb-shaped: ``rlcockpit.Api(dir).runs(project)`` / ``.run(run_id)``."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.store import open_store
from rlcockpit.store.base import Store
from rlcockpit.tracking.read import api_wandb


class RunSummary(dict):
    """A stored run's summary (a dict). As W&B's public API: ``run.summary["best"] = 0.9`` then
    ``run.summary.update()`` (or ``run.update()``) writes it back; ``_json_dict`` is the plain dict."""

    def __init__(self, run: StoredRun, values: Mapping[str, Any]) -> None:
        super().__init__(values)
        self._run = run

    @property
    def _json_dict(self) -> dict[str, Any]:
        return dict(self)

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(*args, **kwargs)
        self._run.update()


class StoredRun:
    """A run as stored: attributes are read when the object is made; data methods read live. As in W&B's
    public API, ``name``/``display_name``, ``tags``, ``notes``, ``group``, ``config`` and ``summary`` may be
    changed and written back with :meth:`update` (a run that is still running owns them: refused)."""

    def __init__(self, store: Store, row: dict[str, Any], api: Api | None = None) -> None:
        self._store = store
        self._api = api
        self._row = row
        self.id: str = row["id"]
        self.name: str = row["name"]
        self.project: str = row["project"]
        self.group: str | None = row.get("group")
        self.tags: list[str] = list(row.get("tags") or [])
        self.status: str = row["status"]
        self.config: dict[str, Any] = dict(row.get("config") or {})
        self.summary: RunSummary = RunSummary(self, row.get("summary") or {})
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

    def update(self) -> None:
        """Write back what was changed on this object: ``name`` (or ``display_name``), ``tags``, ``notes``,
        ``group``, ``config``, ``summary`` (W&B's ``run.update()``). ``RuntimeError`` while the run is
        running (its own process writes them, and would overwrite these)."""
        from rlcockpit.redact import redact
        from rlcockpit.store import effective_status

        status = effective_status(self._store.get_run(self.id), time.time())
        if status == "running":
            raise RuntimeError(f"run {self.id} is running: change its name, tags, config or summary from the "
                               "run itself (run.name = ..., run.summary[...] = ...), not through the Api")
        name = self.display_name if self.display_name != self._row["name"] else self.name
        if not isinstance(name, str) or not name:
            raise TypeError(f"run {self.id}: name must be a non-empty str, got {name!r}")
        if isinstance(self.tags, str) or not all(isinstance(t, str) for t in self.tags):
            raise TypeError(f"run {self.id}: tags must be a list of str, got {self.tags!r}")
        fields = {"name": name, "tags": list(self.tags), "notes": self.notes, "group": self.group,
                  "config": redact(dict(self.config)), "summary": dict(self.summary)}
        self._store.update_run(self.id, **fields)
        self.name = self.display_name = name
        self._row.update(fields)

    @property
    def sweep(self):
        """The sweep this run is a trial of (W&B's ``run.sweep``: a trial's group is its sweep id), else None."""
        if not self.group or self._api is None:
            return None
        try:
            sweep = self._api.sweep(self.group)
        except KeyError:
            return None
        return sweep if any(t["run_id"] == self.id for t in sweep._trials) else None

    @property
    def summary_metrics(self) -> dict[str, Any]:
        return dict(self.summary)

    @property
    def lastHistoryStep(self) -> int:  # noqa: N802 - W&B's name
        return -1 if self.last_step is None else int(self.last_step)

    def delete(self, delete_artifacts: bool = False) -> None:
        """Delete the run and everything logged in it from the store (W&B's ``run.delete()``); its artifact
        versions stay (``rlcockpit artifact rm`` removes those)."""
        self._store.delete_run(self.id)

    def logged_artifacts(self) -> list:
        """The artifact versions this run logged (W&B's ``run.logged_artifacts()``)."""
        return self._registry().produced_by(self.id)

    def used_artifacts(self) -> list:
        """The artifact versions this run used (W&B's ``run.used_artifacts()``)."""
        return self._registry().used_by_run(self.id)

    def _registry(self):
        return (self._api or Api(store=getattr(self._store, "dir", None)))._artifacts()

    def history(self, keys: Sequence[str] | None = None, samples: int | None = None, *, pandas: bool = True,
                x_axis: str | None = None, stream: str = "default"):
        """pandas DataFrame: one row per step (index ``step``), one column per key, and W&B's columns:
        ``_step`` always, ``_timestamp`` and ``_runtime`` without ``keys`` (or when ``keys`` names them);
        a key logged as a list has the lists in its cells. Every step is in it (W&B samples 500 rows).

        W&B's arguments give W&B's shape: with ``samples`` (at most that many rows, evenly spaced), ``x_axis``
        or ``stream="system"`` the frame has a plain index; ``pandas=False`` gives a list of
        ``{"_step": N, key: value}`` dicts (with ``_timestamp`` and ``_runtime`` as above)."""
        if stream == "system":
            df = self._system_by_step()
        else:
            df = api_wandb.history_frame(self._store, self.id, keys)
        wandb_shape = samples is not None or x_axis is not None or stream != "default" or not pandas
        if not wandb_shape:
            return df
        if stream != "system":
            asked = None if keys is None else [*df.columns]
            rows = list(api_wandb.wandb_rows(self._store, self.id, asked, require_all=False))
            columns = [c for c in df.columns if c != "_step"]
        else:
            rows = [{"_step": int(step), **{k: v for k, v in vals.items() if v == v}}
                    for step, vals in zip(df.index.tolist(), df.to_dict("records"))]
            columns = list(df.columns)
        rows = api_wandb.sample_rows(rows, samples)
        if not pandas:
            return rows
        import pandas as pd

        return pd.DataFrame(rows, columns=["_step", *columns]) if rows else pd.DataFrame(columns=["_step"])

    def scan_history(self, keys: Sequence[str] | None = None, page_size: int = 1000, min_step: int | None = None,
                     max_step: int | None = None):
        """As W&B's ``scan_history``: every row (no sampling) as a ``{"_step": N, key: value}`` dict, with
        ``_timestamp`` and ``_runtime`` (as W&B's full rows); with ``keys``, only those keys (W&B's own
        columns when named) and only the steps where all of them were logged. ``max_step`` is excluded.
        Values are as logged: a NaN loss comes back as NaN in its row (W&B's rows are its logged JSON), a
        list as the list."""
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
        self.where = store if store is not None else dir  # what was asked for (the sweep tables live there too)
        self.store = open_store(self.where)

    def runs(self, project: str | None = None, filters: Mapping[str, Any] | None = None, order: str | None = None,
             per_page: int = 50, **_: Any) -> list[StoredRun]:
        """Runs, newest first. ``project`` may be W&B's ``"entity/project"`` path; ``filters`` a W&B
        (MongoDB-style) filter such as ``{"config.lr": 1e-5, "state": "finished"}``; ``order`` e.g.
        ``"+summary_metrics.loss"`` (see :mod:`rlcockpit.tracking.read.api_wandb`)."""
        rows = self.store.list_runs(project)
        if not rows and project and "/" in project:
            rows = self.store.list_runs(api_wandb.split_path(project)[1])
        if filters:
            rows = [r for r in rows if api_wandb.matches(r, filters)]
        return [StoredRun(self.store, r, self) for r in api_wandb.order_rows(rows, order)]

    def run(self, run_id: str) -> StoredRun:
        """A run by id, unique id prefix or unique name (``KeyError`` if none); W&B's ``"entity/project/id"``
        path works too."""
        try:
            return StoredRun(self.store, self.store.get_run(run_id), self)
        except KeyError:
            if "/" not in run_id:
                raise
        return StoredRun(self.store, self.store.get_run(api_wandb.run_ref(run_id)), self)

    default_entity: str | None = None  # W&B's Api().default_entity: no accounts offline

    def flush(self) -> None:
        """W&B's ``api.flush()`` drops its cache; every read here is live, so there is nothing to drop."""

    def sweep(self, path: str):
        """A sweep by id (W&B's ``"entity/project/sweep_id"`` path works): ``.runs``, ``.best_run()``,
        ``.config``, ``.state`` as W&B's public ``Sweep``; ``KeyError`` when there is none."""
        from rlcockpit.registry import PROVIDERS

        return PROVIDERS.get("public_sweep")()(self, path)

    def artifact(self, name: str, type: str | None = None):
        """An artifact version: ``"policy:v3"``, ``"policy:best"``, ``"project/policy:latest"``."""
        return self._artifacts().resolve(name, type=type)

    def artifacts(self, project: str | None = None, name: str | None = None, type: str | None = None) -> list:
        """Every stored artifact version (filtered by project, name, type)."""
        return self._artifacts().versions(project, name, type)

    def media_file(self, ref: Mapping[str, Any] | str):
        """The stored file of a logged image (an ``image-file`` reference from a sample row, or its sha256)."""
        from rlcockpit.store.media import MediaStore

        return MediaStore(self._local_dir("images")).file(ref)

    def image(self, ref: Mapping[str, Any] | str):
        """A logged image read back as a PIL image."""
        from PIL import Image as PILImage

        with PILImage.open(self.media_file(ref)) as im:
            im.load()
            return im

    def _local_dir(self, what: str):
        store_dir = getattr(self.store, "dir", None)
        if store_dir is None:
            raise ValueError(f"{what} live beside a local store (a directory or sqlite:///DIR); this store has none")
        return store_dir

    def _artifacts(self):
        from rlcockpit.store.artifacts import ArtifactRegistry

        store_dir = getattr(self.store, "dir", None)
        if store_dir is None:
            raise ValueError("artifacts live beside a local store (a directory or sqlite:///DIR); this store has none")
        return ArtifactRegistry(store_dir)
