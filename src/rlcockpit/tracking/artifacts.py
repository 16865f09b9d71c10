"""``run.log_artifact`` / ``run.use_artifact`` and the W&B-style ``Artifact`` builder.

Files are hashed and stored in the caller's thread (content-addressed, so re-logging an unchanged
checkpoint costs one read and no copy), because the caller may delete or overwrite them right after —
checkpoint rotation does. The version is committed before ``log_artifact`` returns, so
``use_artifact("policy:best")`` in another process sees it at once. When the run also logs to W&B or
MLflow, the version is mirrored there through their own APIs by those loggers, each on its own thread
(ordered after the metrics logged so far; a failure is a warning and a recorded loss, never an error in
training).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rlcockpit.paths import check_relative, confined
from rlcockpit.store.artifacts import ArtifactRegistry, ArtifactVersion, check_name, collect_files

if TYPE_CHECKING:
    from rlcockpit.tracking.run import Run

class Artifact:
    """An artifact being assembled (``wandb.Artifact``-shaped): ``add_file`` / ``add_dir``, then
    ``run.log_artifact(artifact, aliases=[...])``."""

    def __init__(self, name: str, type: str, description: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> None:
        self.name = check_name(name)
        self.type = check_name(type, "artifact type")
        self.description = description
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._files: list[tuple[Path, str]] = []
        self._tmp: tempfile.TemporaryDirectory | None = None  # new_file / add write here

    def add_file(self, local_path: str | os.PathLike[str], name: str | None = None) -> None:
        self._files += collect_files(local_path, name or "")

    def add_dir(self, local_path: str | os.PathLike[str], name: str | None = None) -> None:
        if not Path(local_path).is_dir():
            raise NotADirectoryError(f"add_dir: {local_path} is not a directory")
        self._files += collect_files(local_path, name or "")

    @contextlib.contextmanager
    def new_file(self, name: str, mode: str = "x", encoding: str | None = None) -> Iterator[IO[Any]]:
        """As W&B's ``with artifact.new_file("notes.txt", mode="w") as f: f.write(...)``: a file written
        into the artifact (kept in a private temporary folder until the artifact is logged)."""
        if mode not in ("x", "w", "xb", "wb"):
            raise ValueError(f"new_file({name!r}, mode={mode!r}): mode must be 'x', 'w', 'xb' or 'wb'")
        rel = check_relative(name, f"new_file: artifact {self.name!r} file name")  # never outside the scratch folder
        if any(path == rel for _, path in self._files):
            raise ValueError(f"new_file: artifact {self.name!r} already has a file {name!r}")
        path = confined(self._scratch(), rel, f"new_file: artifact {self.name!r} file name")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, mode, encoding=None if "b" in mode else encoding or "utf-8") as f:
            yield f
        self._files.append((path, rel))

    def add(self, obj: Any, name: str) -> None:
        """As W&B's ``artifact.add(table, "my_table")``: a ``Table`` stored as ``<name>.table.json``
        (W&B's file name and its ``columns`` / ``data`` layout)."""
        from rlcockpit.tracking.media.rich import Table

        if not isinstance(obj, Table):
            raise TypeError(f"Artifact.add({name!r}): only a Table can be added (got {type(obj).__name__}); "
                            "use add_file / add_dir / new_file for files")
        file_name = name if name.endswith(".table.json") else f"{name}.table.json"
        with self.new_file(file_name, mode="w") as f:
            json.dump({"_type": "table", "columns": obj.columns, "data": obj.data}, f, default=str)

    def add_reference(self, uri: str, name: str | None = None, **_: Any) -> None:
        """``file://`` references are added as their files; other schemes (s3, gs, http) cannot be read
        offline and are refused, naming the URI."""
        if not str(uri).startswith("file://"):
            raise ValueError(f"Artifact.add_reference({uri!r}): only file:// references work offline")
        self._files += collect_files(str(uri)[len("file://"):], name or "")

    def save(self) -> ArtifactVersion:
        """W&B's ``artifact.save()``: log it on the current run."""
        from rlcockpit.tracking import run as run_module

        if run_module._current is None:
            raise RuntimeError(f"Artifact.save(): artifact {self.name!r} needs an active run (rlcockpit.init)")
        return log_artifact(run_module._current, self)

    def wait(self, timeout: float | None = None) -> Artifact:
        """Logged versions are committed before ``log_artifact`` returns: nothing to wait for."""
        return self

    def _scratch(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="rlcockpit-artifact-new-")
        return Path(self._tmp.name)

    @property
    def files(self) -> list[tuple[Path, str]]:
        return list(self._files)


def artifact_registry(run: Run) -> ArtifactRegistry:
    """The run's artifact registry (made on first use, then kept on the run)."""
    reg = getattr(run, "_artifacts", None)
    if reg is None:
        reg = ArtifactRegistry(run.dir)
        run._artifacts = reg  # type: ignore[attr-defined]
    return reg


def log_artifact(run: Run, artifact_or_path: Artifact | str | os.PathLike[str], *, name: str | None = None,
                 type: str | None = None, aliases: Iterable[str] | None = None,
                 metadata: Mapping[str, Any] | None = None, description: str | None = None,
                 link: bool = False) -> ArtifactVersion:
    """Store a file, a directory or an :class:`Artifact` as the next version of ``name`` logged by ``run``
    (``link``: hard-link files that are never rewritten in place, see :meth:`BlobStore.put`)."""
    if isinstance(artifact_or_path, Artifact):
        art = artifact_or_path
        files = art.files
        if not files:
            raise ValueError(f"artifact {art.name!r} has no files (add_file / add_dir first)")
        name, type = name or art.name, type or art.type
        metadata = {**art.metadata, **dict(metadata or {})}
        description = description or art.description
    else:
        path = Path(artifact_or_path)
        files = collect_files(path)
        name = name or _default_name(path)
        type = type or "artifact"
    version = artifact_registry(run).log(files, project=run.project, name=name, type=type, aliases=aliases or (),
                                 metadata=metadata, description=description, producer_run=run.id,
                                 step=max(run.step, 0), link=link)
    # the event reaches every logger on its own thread, in order: the W&B and MLflow loggers mirror the version
    run.log_event("artifact", {"op": "log", "artifact": version.qualified_name, "type": version.type,
                               "aliases": version.aliases, "digest": version.digest[:12], "size": version.size,
                               "version_id": version.id, "project": version.project})
    return version


def use_artifact(run: Run, ref: str | ArtifactVersion, type: str | None = None) -> ArtifactVersion:
    """Resolve ``name:v3`` / ``name:best`` / ``name`` and record that ``run`` used it (lineage)."""
    reg = artifact_registry(run)
    version = ref if isinstance(ref, ArtifactVersion) else reg.resolve(ref, project=run.project, type=type)
    version._registry = reg
    reg.record_use(version, run.id)
    run.log_event("artifact", {"op": "use", "artifact": f"{version.project}/{version.qualified_name}"})
    return version


def log_checkpoint(run: Run, path: str | os.PathLike[str], *, step: int, metrics: Mapping[str, Any] | None = None,
                   name: str = "policy", best_key: str | None = None, goal: str = "max",
                   type: str = "model", link: bool = False, keep: int | None = None) -> ArtifactVersion:
    """Register a checkpoint as the next ``model`` version of ``name`` (``metadata.step`` = ``step``) and
    move ``best`` to it when ``metrics[best_key]`` beats the value recorded on the current ``best`` — across
    runs, so after a sweep ``policy:best`` is the best checkpoint of every trial."""
    meta = {"step": int(step), **{k: v for k, v in dict(metrics or {}).items() if isinstance(v, (int, float, str))}}
    version = log_artifact(run, path, name=name, type=type, metadata=meta, link=link)
    reg = artifact_registry(run)
    if best_key is not None and reg.set_alias_if_better(version, "best", best_key, goal == "max"):
        run.log_event("artifact", {"op": "best", "artifact": version.qualified_name, best_key: meta.get(best_key)})
    if keep:  # checkpoint rotation: this run's versions beyond the newest ``keep`` go too, aliased ones stay
        reg.gc(keep=keep, project=run.project, name=name, producer_run=run.id)
    return version


def _default_name(path: Path) -> str:
    base = path.name if path.name else path.resolve().name
    cleaned = "".join(c if c.isalnum() or c in "_-." else "-" for c in base).strip("-.") or "artifact"
    return cleaned[:128]


# ---- mirroring to third-party trackers ------------------------------------------------------------
# Called by the ``wandb`` and ``mlflow`` loggers' ``log_event`` (each on its own logger thread, so a slow
# tracker delays only itself): the files come from the store's objects, not from the caller's path, which
# may have been rotated away by then.

def mirror(store_dir: str | os.PathLike[str], payload: Mapping[str, Any], send: Any) -> bool:
    """Materialise the logged version as links to its stored files and call ``send(version, root)``;
    False for events that are not a logged version."""
    if payload.get("op") != "log" or not payload.get("version_id"):
        return False
    version = ArtifactRegistry(store_dir).get(str(payload["version_id"]))
    tmp = Path(tempfile.mkdtemp(prefix="rlcockpit-artifact-"))
    try:
        send(version, version.download(tmp / version.name, mode="symlink"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def to_wandb(wandb_run: Any, version: ArtifactVersion, root: Path) -> None:
    """``wandb.Artifact`` with the same name, type, files and aliases, logged on the W&B run."""
    import wandb

    art = wandb.Artifact(version.name, type=version.type, description=version.description,
                         metadata={**version.metadata, "rlcockpit_version": version.qualified_name,
                                   "rlcockpit_digest": version.digest})
    for f in version.files():
        art.add_file(str((root / f["path"]).resolve()), name=f["path"])
    aliases = [a for a in version.aliases if a != "latest"]
    wandb_run.log_artifact(art, aliases=aliases or None)


def to_mlflow(client: Any, mlflow_run_id: str, version: ArtifactVersion, root: Path) -> None:
    """The files as MLflow run artifacts under ``<name>/v<N>/`` and a ``rlcockpit.artifact.<name>`` tag."""
    # MLflow copies the files it is given (following the links to the stored objects)
    client.log_artifacts(mlflow_run_id, str(root), artifact_path=f"{version.name}/v{version.version}")
    client.set_tag(mlflow_run_id, f"rlcockpit.artifact.{version.name}",
                   ",".join([version.qualified_name, *version.aliases]))
