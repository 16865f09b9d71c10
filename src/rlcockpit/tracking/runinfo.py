"""Helpers of a run's identity and row: the summary dict, config conversion, metadata, init errors, and
finding or creating the stored row a run starts from (resume).

Why apart from :mod:`rlcockpit.tracking.run`: the run object is about the hot path and the lifecycle; which
row a new process continues (W&B's resume modes, by id or by name) is decided once, at ``init``.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rlcockpit.store.base import Store, StoreError, StoreUnavailable, boot_id
from rlcockpit.tracking.write.entries import SUMMARY_REMOVED, SummarySet


class Summary(dict):
    """``run.summary``: last value of every key, plus what you set (``run.summary["best"] = 0.9``). While the
    run is live, a logged key reads as the writer has summarised it so far (``run.summary["loss"]`` after
    ``log({"loss": ...})``, as in W&B); the dict itself holds what was set and is filled in at ``finish``."""

    def __missing__(self, key: str) -> Any:
        live = self._live()
        if key in live:
            return live[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[key] if key in self else default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._live()

    def _live(self) -> dict[str, Any]:
        writer = getattr(self._run, "_writer", None)
        if writer is None or getattr(self._run, "finished", False):
            return {}
        try:
            return writer.summary()
        except RuntimeError:  # the writer changed its values while they were read: read the raw ones
            return dict(writer.last_values)

    def __init__(self, run: Any) -> None:
        super().__init__()
        self._run = run

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._run._put_internal(SummarySet({key: value}))

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        d = dict(*args, **kwargs)
        super().update(d)
        self._run._put_internal(SummarySet(d))

    def __delitem__(self, key: str) -> None:
        """As W&B: the key leaves the summary (a logged key comes back when it is logged again)."""
        self.pop(key, None)
        self._run._put_internal(SummarySet({key: SUMMARY_REMOVED}))

    def _refresh(self, values: Mapping[str, Any]) -> None:
        for k, v in values.items():
            dict.__setitem__(self, k, v)


def config_to_dict(config: Any) -> dict[str, Any]:
    """A run config as a plain dict, from what ``init(config=...)`` takes (W&B's forms: a dict, a YAML file
    path, an OmegaConf config, a dataclass, an argparse namespace)."""
    if config is None:
        return {}
    if isinstance(config, (str, os.PathLike)):  # W&B: a path to a YAML config file
        from rlcockpit.tracking.compat.wandb_env import wandb_config_file

        return wandb_config_file(config)
    if type(config).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    if not hasattr(config, "__dict__") or isinstance(config, (list, tuple, set, bytes, int, float, bool)):
        raise TypeError(f"config must be a dict, a dataclass, an OmegaConf config, an argparse Namespace or the path "
                        f"of a YAML file; got a {type(config).__name__} ({config!r:.80})")
    return dict(vars(config))


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; a dotted top-level key stays as it is, an empty mapping is a value.
    The dotted form is what flat-parameter trackers (MLflow) store and what sweep importance ranks."""
    out: dict[str, Any] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten_config(v, key + "."))
        else:
            out[key] = v
    return out


def init_error(exc: StoreError, dir: Path) -> StoreError:
    """The same store error, saying that ``init`` could not start and what to do."""
    text = f"rlcockpit.init: cannot use the store at {dir}: {exc}"
    if isinstance(exc, StoreUnavailable):
        if exc.reason == "full":
            text += " — free some space, or pass another dir="
        return exc.with_message(text)
    return StoreError(exc.errno, text)


def _safe_meta(capture: bool) -> dict[str, Any]:
    from rlcockpit.tracking.meta import collect_meta

    try:
        return collect_meta(capture_git=capture)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"metadata capture failed: {exc}"}


@dataclasses.dataclass
class RunRow:
    """The stored row a run starts from: a new one, or a resumed one (``resumed_summary`` is then set)."""

    id: str
    name: str
    group: str | None
    tags: list[str]
    last_step: int
    config: dict[str, Any]
    meta: dict[str, Any]
    resumed_summary: dict[str, Any] | None = None


def open_run_row(store: Store, project: str, config: dict[str, Any], *, resume: Any, id: str | None,
                 name: str | None, group: str | None, tags: Sequence[str] | None, notes: str | None,
                 capture_meta: bool, extra_meta: dict[str, Any], where: Path) -> RunRow:
    """Resume the run ``resume`` names (its config and meta updated by the given ones), else create a new row;
    either way the row is marked alive (heartbeat, boot id) for the staleness check of readers."""
    beat = {"heartbeat_at": time.time(), "heartbeat_mono": time.monotonic(), "boot_id": boot_id()}
    resumed = find_resume_row(store, project, resume, name, where)
    if resumed is not None:
        last = resumed.get("last_step")
        row = RunRow(resumed["id"], resumed["name"], resumed.get("group") if group is None else group,
                     list(resumed.get("tags") or []) if tags is None else list(tags),
                     -1 if last is None else int(last), {**(resumed.get("config") or {}), **config},
                     {**(resumed.get("meta") or {}), **extra_meta}, resumed.get("summary") or {})
        given = {k: v for k, v in (("group", group), ("tags", None if tags is None else list(tags)),
                                   ("notes", notes)) if v is not None}  # new values replace the stored ones
        store.update_run(row.id, status="running", finished_at=None, exit_code=None, config=row.config, **given,
                         **beat)
        if extra_meta:
            store.update_run(row.id, meta=row.meta)
        return row
    run_id = id or uuid.uuid4().hex[:8]
    row = RunRow(run_id, name or f"run-{run_id}", group, list(tags or []), -1, config,
                 {**_safe_meta(capture_meta), **extra_meta})
    store.create_run({"id": row.id, "project": project, "name": row.name, "group": group,
                      "tags": row.tags, "config": row.config, "meta": row.meta, "notes": notes})
    store.update_run(row.id, **beat)
    return row


def find_resume_row(store: Store, project: str, resume: Any, name: str | None, where: Path) -> dict[str, Any] | None:
    """The stored run to continue, or ``None`` for a new one. ``resume``: ``None``/``"never"``; ``("id", run id,
    W&B mode)`` (see ``wandb_compat.normalize_resume``); ``"auto"``/``"allow"``/``"must"`` by ``name``; else a
    run id."""
    if not resume:
        return None
    if isinstance(resume, tuple):  # ("id", run id, W&B mode): resume that run if it exists
        _, run_id, mode = resume
        try:
            row = store.get_run(run_id)
        except KeyError:
            row = None
        row = row if row is not None and row["id"] == run_id else None  # an id, not a prefix or a name
        if row is not None and mode == "never":
            raise ValueError(f"resume='never': run id {run_id!r} exists already in {where}")
        if row is None and mode == "must":
            raise KeyError(f"resume='must': no run with id {run_id!r} in {where}")
        return row
    if resume == "never":
        return None
    if resume in ("auto", "allow", "must"):
        candidates = [r for r in store.list_runs(project) if name and r["name"] == name]
        candidates = [r for r in candidates if r["stored_status"] != "finished" or resume == "must"]
        if candidates:
            return candidates[0]
        if resume == "must":
            raise KeyError(f"resume='must': no run named {name!r} in project {project!r}")
        return None
    return store.get_run(resume)
