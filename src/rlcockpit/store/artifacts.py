"""Versioned artifacts in the store: versions ``name:vN``, aliases, lineage, content-addressed files.

This is the store-level part (tracking's ``Run.log_artifact`` / ``use_artifact`` and ``Api().artifact``
use it): a version is a manifest of ``(path, sha256, size)`` rows plus metadata; its files live once in
the :class:`~rlcockpit.store.blobs.BlobStore`. Logging content identical to an existing version of the
same name returns that version (as W&B does) instead of creating a new one. Aliases (``latest``, ``best``,
any user alias) point at one version each and move inside one transaction, so a reader never sees
``best`` on two versions or on none while it moves. Lineage: the run that logged a version, and the runs
that used it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcockpit.paths import UnsafePathError, check_relative, confined
from rlcockpit.store.base import resolve_dir
from rlcockpit.store.blobs import BlobStore, copy_hashing, sha256_file
from rlcockpit.store.sql import Cursor, Database, open_database

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS artifact_versions (
      id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL,
      type TEXT NOT NULL, digest TEXT NOT NULL, size BIGINT NOT NULL, n_files INTEGER NOT NULL,
      metadata TEXT NOT NULL, description TEXT, producer_run TEXT, step BIGINT,
      created_at DOUBLE PRECISION NOT NULL, UNIQUE (project, name, version))""",
    "CREATE INDEX IF NOT EXISTS artifact_versions_digest ON artifact_versions(project, name, digest)",
    """CREATE TABLE IF NOT EXISTS artifact_files (
      version_id TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL, size BIGINT NOT NULL,
      PRIMARY KEY (version_id, path))""",
    "CREATE INDEX IF NOT EXISTS artifact_files_sha ON artifact_files(sha256)",
    """CREATE TABLE IF NOT EXISTS artifact_aliases (
      project TEXT NOT NULL, name TEXT NOT NULL, alias TEXT NOT NULL, version_id TEXT NOT NULL,
      updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (project, name, alias))""",
    """CREATE TABLE IF NOT EXISTS artifact_usage (
      version_id TEXT NOT NULL, run_id TEXT NOT NULL, used_at DOUBLE PRECISION NOT NULL,
      PRIMARY KEY (version_id, run_id))""",
)
logger = logging.getLogger("rlcockpit")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
_VERSION = re.compile(r"^v(\d+)$")
_COLS = ("id", "project", "name", "version", "type", "digest", "size", "n_files", "metadata", "description",
         "producer_run", "step", "created_at")


class ArtifactError(ValueError):
    """A bad artifact name, alias or reference; the message names it."""


def check_name(name: str, what: str = "artifact name") -> str:
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 128:
        raise ArtifactError(f"{what} {name!r} may only contain letters, digits, '_', '-' and '.' "
                            "(and must start with a letter, digit or '_')")
    return name


def check_alias(alias: str) -> str:
    check_name(alias, "alias")
    if _VERSION.match(alias):
        raise ArtifactError(f"alias {alias!r} looks like a version number; versions are named by the store")
    return alias


def parse_ref(ref: str) -> tuple[str | None, str, str]:
    """``[entity/][project/]name[:version|alias]`` -> ``(project or None, name, version-or-alias)``."""
    if not isinstance(ref, str) or not ref:
        raise ArtifactError(f"artifact reference must be a non-empty string, got {ref!r}")
    path, _, tag = ref.partition(":")
    parts = path.split("/")
    if len(parts) > 3:
        raise ArtifactError(f"artifact reference {ref!r}: expected [project/]name[:version|alias]")
    project = parts[-2] if len(parts) >= 2 else None
    return project, check_name(parts[-1]), tag or "latest"


def collect_files(path: str | os.PathLike[str], prefix: str = "") -> list[tuple[Path, str]]:
    """``(source, path inside the artifact)`` for a file or every file under a directory (sorted).

    Links inside a directory are followed only while they stay inside it: a link out of the folder
    (``secrets -> /etc/shadow``), a broken link, a link loop and anything that is not a regular file (a FIFO
    would block the read) are skipped with one warning naming them; the rest is kept."""
    src = Path(path)
    prefix = check_relative(prefix, "artifact file name") if prefix else ""
    if src.is_file():
        return [(src, prefix or check_relative(src.name, "artifact file name"))]
    if not src.is_dir():
        raise FileNotFoundError(f"artifact path not found: {src}")
    out: list[tuple[Path, str]] = []
    skipped: list[str] = []
    _walk(src, src.resolve(), "", frozenset(), out, skipped)
    if skipped:
        logger.warning("rlcockpit: artifact folder %s: skipped %d entr%s: %s", src, len(skipped),
                       "y" if len(skipped) == 1 else "ies", "; ".join(skipped))
    if not out:
        raise FileNotFoundError(f"artifact directory {src} has no files" + (" it may store" if skipped else ""))
    return [(full, f"{prefix}/{rel}" if prefix else rel) for full, rel in out]


def _walk(folder: Path, root: Path, rel: str, ancestors: frozenset[Path], out: list[tuple[Path, str]],
          skipped: list[str]) -> None:
    """Depth-first, sorted: regular files into ``out``; what must not be stored into ``skipped``, with why."""
    real = folder.resolve()
    if real in ancestors:
        skipped.append(f"{rel} (a link loop)")
        return
    ancestors = ancestors | {real}
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:  # an unreadable subfolder: named, the rest is stored
        if not rel:
            raise
        skipped.append(f"{rel} (cannot be read: {exc.strerror})")
        return
    for entry in entries:
        full = Path(entry.path)
        name = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_symlink():
            try:
                target = full.resolve(strict=True)
            except (OSError, RuntimeError):
                skipped.append(f"{name} (a broken link or a link loop)")
                continue
            if not target.is_relative_to(root):
                skipped.append(f"{name} (a link out of the folder, to {target})")
                continue
        if full.is_dir():
            _walk(full, root, name, ancestors, out, skipped)
        elif full.is_file():
            out.append((full, name))
        else:
            skipped.append(f"{name} (not a regular file)")


@dataclass
class ArtifactVersion:
    """One stored version; data methods read the store when called."""

    id: str
    project: str
    name: str
    version: int
    type: str
    digest: str
    size: int
    n_files: int
    metadata: dict[str, Any]
    description: str | None
    producer_run: str | None
    step: int | None
    created_at: float
    aliases: list[str] = field(default_factory=list)
    _registry: ArtifactRegistry | None = field(default=None, repr=False, compare=False)

    @property
    def qualified_name(self) -> str:
        return f"{self.name}:v{self.version}"

    def files(self) -> list[dict[str, Any]]:
        assert self._registry is not None
        return self._registry.files(self.id)

    def file(self, path: str) -> Path:
        """The stored (read-only) copy of one file of this version."""
        for f in self.files():
            if f["path"] == path:
                return self._registry.blobs.path(f["sha256"])  # type: ignore[union-attr]
        raise KeyError(f"{self.qualified_name} has no file {path!r}")

    def download(self, root: str | os.PathLike[str] | None = None, *, mode: str = "copy") -> Path:
        """Materialise the files under ``root`` (default ``./artifacts/<name>:v<N>``); ``mode="symlink"``
        links to the stored objects instead of copying (read-only use, no extra disk)."""
        assert self._registry is not None
        return self._registry.materialize(self, root, mode=mode)

    def wait(self, timeout: float | None = None) -> ArtifactVersion:
        """W&B's ``run.log_artifact(art).wait()``: a version is committed before it is returned, so it is ready."""
        return self

    def logged_by(self) -> str | None:
        """The id of the run that logged this version."""
        return self.producer_run

    def used_by(self) -> list[str]:
        """Ids of the runs that used this version (``run.use_artifact``)."""
        assert self._registry is not None
        return self._registry.consumers(self.id)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _COLS}
        d["aliases"] = list(self.aliases)
        d["qualified_name"] = self.qualified_name
        return d


class ArtifactRegistry:
    """Artifact versions of the store at ``dir``."""

    def __init__(self, dir: str | os.PathLike[str] | None = None, db: Database | None = None) -> None:
        self.dir = resolve_dir(dir)
        self.db = db or open_database(self.dir)
        self.db.ensure_schema("artifacts", SCHEMA)
        self.blobs = BlobStore(self.dir / "artifacts")

    # ---- writing ----------------------------------------------------------------------------------
    def log(self, files: Sequence[tuple[str | os.PathLike[str], str]], *, project: str, name: str, type: str,
            aliases: Iterable[str] = (), metadata: Mapping[str, Any] | None = None, description: str | None = None,
            producer_run: str | None = None, step: int | None = None, link: bool = False) -> ArtifactVersion:
        """Store ``files`` (``(source, path in artifact)``) as the next version of ``project/name`` (or return
        the existing version with the same content), then move ``latest`` and ``aliases`` to it."""
        check_name(name)
        check_name(type, "artifact type")
        aliases = [check_alias(a) for a in dict.fromkeys(aliases)]
        meta = json.loads(json.dumps(dict(metadata or {}), default=str))
        seen: dict[str, tuple[str, int]] = {}
        for src, given in files:
            rel = check_relative(given, f"artifact {name!r} file name")
            if rel in seen:
                raise ArtifactError(f"artifact {name!r}: two files map to {rel!r}")
            digest, size = sha256_file(src)
            self.blobs.put(src, digest, link=link)
            seen[rel] = (digest, size)
        manifest = sorted((rel, d, s) for rel, (d, s) in seen.items())
        digest = hashlib.sha256("".join(f"{r}\0{d}\0{s}\n" for r, d, s in manifest).encode()).hexdigest()
        with self.db.transaction(lock=f"artifact:{project}/{name}") as cur:
            row = cur.one("SELECT id, type FROM artifact_versions WHERE project = ? AND name = ? AND digest = ? "
                          "ORDER BY version DESC", (project, name, digest))
            if row is not None:
                vid = row[0]
            else:
                prev = cur.one("SELECT type FROM artifact_versions WHERE project = ? AND name = ? "
                               "ORDER BY version DESC", (project, name))
                if prev is not None and prev[0] != type:
                    raise ArtifactError(f"artifact {project}/{name} has type {prev[0]!r}, not {type!r}")
                vid = uuid.uuid4().hex[:12]
                top = cur.one("SELECT MAX(version) FROM artifact_versions WHERE project = ? AND name = ?",
                              (project, name))
                number = 0 if top is None or top[0] is None else int(top[0]) + 1
                cur.execute(f"INSERT INTO artifact_versions ({', '.join(_COLS)}) VALUES "
                            f"({', '.join('?' for _ in _COLS)})",
                            (vid, project, name, number, type, digest, sum(s for _, _, s in manifest), len(manifest),
                             json.dumps(meta), description, producer_run, step, time.time()))
                for rel, d, s in manifest:
                    cur.execute("INSERT INTO artifact_files (version_id, path, sha256, size) VALUES (?, ?, ?, ?)",
                                (vid, rel, d, s))
                self._move(cur, project, name, "latest", vid)
            for alias in aliases:
                self._move(cur, project, name, alias, vid)
        return self.get(vid)

    def _move(self, cur: Cursor, project: str, name: str, alias: str, version_id: str) -> None:
        cur.execute("DELETE FROM artifact_aliases WHERE project = ? AND name = ? AND alias = ?", (project, name, alias))
        cur.execute("INSERT INTO artifact_aliases (project, name, alias, version_id, updated_at) VALUES (?, ?, ?, ?, ?)",
                    (project, name, alias, version_id, time.time()))

    def set_alias(self, version: ArtifactVersion, alias: str) -> None:
        """Point ``alias`` at ``version`` (moving it off whichever version had it), atomically."""
        check_alias(alias)
        with self.db.transaction(lock=f"artifact:{version.project}/{version.name}") as cur:
            self._move(cur, version.project, version.name, alias, version.id)

    def set_alias_if_better(self, version: ArtifactVersion, alias: str, key: str, maximize: bool) -> bool:
        """Move ``alias`` to ``version`` when its ``metadata[key]`` beats the version holding the alias now
        (or no version holds it, or that one lacks the key). One transaction: concurrent trials of a sweep
        cannot both win."""
        check_alias(alias)
        value = version.metadata.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            return False
        with self.db.transaction(lock=f"artifact:{version.project}/{version.name}") as cur:
            row = cur.one("SELECT v.metadata FROM artifact_versions v JOIN artifact_aliases a ON a.version_id = v.id "
                          "WHERE a.project = ? AND a.name = ? AND a.alias = ?", (version.project, version.name, alias))
            current = json.loads(row[0]).get(key) if row is not None else None
            if isinstance(current, (int, float)) and not isinstance(current, bool) and current == current:
                if not (value > current if maximize else value < current):
                    return False
            self._move(cur, version.project, version.name, alias, version.id)
        version.aliases = sorted({*version.aliases, alias})
        return True

    def update_metadata(self, version: ArtifactVersion, patch: Mapping[str, Any]) -> ArtifactVersion:
        """Add keys to a version's metadata (a validation score known only after the checkpoint was logged)."""
        with self.db.transaction(lock=f"artifact:{version.project}/{version.name}") as cur:
            row = cur.one("SELECT metadata FROM artifact_versions WHERE id = ?", (version.id,))
            if row is None:
                raise KeyError(f"artifact version {version.id} is gone")
            meta = {**json.loads(row[0]), **json.loads(json.dumps(dict(patch), default=str))}
            cur.execute("UPDATE artifact_versions SET metadata = ? WHERE id = ?", (json.dumps(meta), version.id))
        version.metadata = meta
        return version

    def remove_alias(self, version: ArtifactVersion, alias: str) -> None:
        with self.db.transaction(lock=f"artifact:{version.project}/{version.name}") as cur:
            cur.execute("DELETE FROM artifact_aliases WHERE project = ? AND name = ? AND alias = ? AND version_id = ?",
                        (version.project, version.name, alias, version.id))

    def record_use(self, version: ArtifactVersion, run_id: str) -> None:
        with self.db.transaction() as cur:
            cur.execute("DELETE FROM artifact_usage WHERE version_id = ? AND run_id = ?", (version.id, run_id))
            cur.execute("INSERT INTO artifact_usage (version_id, run_id, used_at) VALUES (?, ?, ?)",
                        (version.id, run_id, time.time()))

    # ---- reading ----------------------------------------------------------------------------------
    def _version(self, row: Sequence[Any], aliases: list[str]) -> ArtifactVersion:
        d = dict(zip(_COLS, row))
        d["metadata"] = json.loads(d["metadata"])
        return ArtifactVersion(**d, aliases=aliases, _registry=self)

    def _aliases(self, version_id: str) -> list[str]:
        rows = self.db.query("SELECT alias FROM artifact_aliases WHERE version_id = ? ORDER BY alias", (version_id,))
        return [r[0] for r in rows]

    def get(self, version_id: str) -> ArtifactVersion:
        rows = self.db.query(f"SELECT {', '.join(_COLS)} FROM artifact_versions WHERE id = ?", (version_id,))
        if not rows:
            raise KeyError(f"no artifact version with id {version_id!r}")
        return self._version(rows[0], self._aliases(version_id))

    def resolve(self, ref: str, project: str | None = None, type: str | None = None) -> ArtifactVersion:
        """``name:v3``, ``name:best``, ``name`` (= latest), ``project/name:alias``. Without a project in the
        reference, ``project`` is searched first, then every project (an ambiguous name is an error)."""
        ref_project, name, tag = parse_ref(ref)
        projects = [ref_project] if ref_project else self._projects_with(name, project)
        found = []
        for proj in projects:
            m = _VERSION.match(tag)
            if m:
                rows = self.db.query(f"SELECT {', '.join(_COLS)} FROM artifact_versions WHERE project = ? AND "
                                     "name = ? AND version = ?", (proj, name, int(m.group(1))))
            else:
                rows = self.db.query(f"SELECT {', '.join('v.' + c for c in _COLS)} FROM artifact_versions v JOIN "
                                     "artifact_aliases a ON a.version_id = v.id WHERE a.project = ? AND a.name = ? "
                                     "AND a.alias = ?", (proj, name, tag))
            found += rows
        if not found:
            raise KeyError(f"no artifact {ref!r}" + (f" in project {projects[0]!r}" if len(projects) == 1 else "")
                           + self._known_hint(name, projects))
        if len(found) > 1:
            where = ", ".join(sorted({r[1] for r in found}))
            raise KeyError(f"artifact {ref!r} exists in several projects ({where}); write project/{ref}")
        version = self._version(found[0], self._aliases(found[0][0]))
        if type is not None and version.type != type:
            raise ArtifactError(f"artifact {ref!r} has type {version.type!r}, not {type!r}")
        return version

    def _projects_with(self, name: str, preferred: str | None) -> list[str]:
        rows = self.db.query("SELECT DISTINCT project FROM artifact_versions WHERE name = ?", (name,))
        projects = sorted(r[0] for r in rows)
        if preferred in projects:
            return [preferred]  # type: ignore[list-item]
        return projects or [preferred or "default"]

    def _known_hint(self, name: str, projects: Sequence[str]) -> str:
        tags = []
        for proj in projects:
            tags += [f"v{r[0]}" for r in self.db.query("SELECT version FROM artifact_versions WHERE project = ? AND "
                                                       "name = ? ORDER BY version", (proj, name))]
            tags += [r[0] for r in self.db.query("SELECT alias FROM artifact_aliases WHERE project = ? AND name = ?",
                                                 (proj, name))]
        return f" (it has: {', '.join(tags)})" if tags else " (no artifact with that name)"

    def versions(self, project: str | None = None, name: str | None = None,
                 type: str | None = None) -> list[ArtifactVersion]:
        sql = f"SELECT {', '.join(_COLS)} FROM artifact_versions WHERE 1 = 1"
        params: list[Any] = []
        for col, val in (("project", project), ("name", name), ("type", type)):
            if val is not None:
                sql += f" AND {col} = ?"
                params.append(val)
        rows = self.db.query(sql + " ORDER BY project, name, version", params)
        aliases: dict[str, list[str]] = {}
        for vid, alias in self.db.query("SELECT version_id, alias FROM artifact_aliases ORDER BY alias"):
            aliases.setdefault(vid, []).append(alias)
        return [self._version(r, aliases.get(r[0], [])) for r in rows]

    def files(self, version_id: str) -> list[dict[str, Any]]:
        rows = self.db.query("SELECT path, sha256, size FROM artifact_files WHERE version_id = ? ORDER BY path",
                             (version_id,))
        return [{"path": p, "sha256": d, "size": s} for p, d, s in rows]

    def consumers(self, version_id: str) -> list[str]:
        rows = self.db.query("SELECT run_id FROM artifact_usage WHERE version_id = ? ORDER BY used_at", (version_id,))
        return [r[0] for r in rows]

    def produced_by(self, run_id: str) -> list[ArtifactVersion]:
        rows = self.db.query(f"SELECT {', '.join(_COLS)} FROM artifact_versions WHERE producer_run = ? "
                             "ORDER BY created_at", (run_id,))
        return [self._version(r, self._aliases(r[0])) for r in rows]

    def used_by_run(self, run_id: str) -> list[ArtifactVersion]:
        rows = self.db.query("SELECT version_id FROM artifact_usage WHERE run_id = ? ORDER BY used_at", (run_id,))
        return [self.get(r[0]) for r in rows]

    def materialize(self, version: ArtifactVersion, root: str | os.PathLike[str] | None = None, *,
                    mode: str = "copy") -> Path:
        if mode not in ("copy", "symlink"):
            raise ValueError("mode must be copy or symlink")
        dest = Path(root) if root is not None else Path.cwd() / "artifacts" / f"{version.name}:v{version.version}"
        refused: list[str] = []
        for f in self.files(version.id):
            try:  # a stored name or digest that would write outside ``dest`` is refused, the rest downloaded
                src = self.blobs.path(f["sha256"])
                out = confined(dest, f["path"], "file name", replace_link=True)
            except UnsafePathError as exc:
                refused.append(str(exc))
                continue
            if not src.is_file():
                raise FileNotFoundError(f"{version.qualified_name}: stored file {f['path']} ({f['sha256'][:12]}) "
                                        "is missing from the object store")
            out.parent.mkdir(parents=True, exist_ok=True)
            if out.is_symlink() or out.exists():
                out.unlink()
            if mode == "symlink":
                out.symlink_to(src)
            elif copy_hashing(src, out) != f["sha256"]:  # verified on the way: a stored file changed on disk
                out.unlink()
                raise OSError(f"{version.qualified_name}: stored file {f['path']} no longer matches its sha256 "
                              f"{f['sha256'][:12]}… (modified on disk?)")
        if refused:
            raise UnsafePathError(f"{version.project}/{version.qualified_name}: {len(refused)} stored file(s) not "
                                  f"written, they would land outside {dest} (the others are there): "
                                  + "; ".join(refused))
        return dest

    # ---- deleting ---------------------------------------------------------------------------------
    def delete(self, version: ArtifactVersion, *, force: bool = False) -> None:
        """Delete a version (its files are freed by :meth:`gc`). A version with aliases is kept unless
        ``force``; then ``latest`` moves to the newest remaining version."""
        with self.db.transaction(lock=f"artifact:{version.project}/{version.name}") as cur:
            aliases = [r[0] for r in cur.query("SELECT alias FROM artifact_aliases WHERE version_id = ?",
                                               (version.id,))]
            if aliases and not force:
                raise ArtifactError(f"{version.project}/{version.qualified_name} has aliases ({', '.join(aliases)}); "
                                    "move them or pass --force")
            for table, col in (("artifact_aliases", "version_id"), ("artifact_usage", "version_id"),
                               ("artifact_files", "version_id"), ("artifact_versions", "id")):
                cur.execute(f"DELETE FROM {table} WHERE {col} = ?", (version.id,))
            if "latest" in aliases:
                top = cur.one("SELECT id FROM artifact_versions WHERE project = ? AND name = ? ORDER BY version DESC",
                              (version.project, version.name))
                if top is not None:
                    self._move(cur, version.project, version.name, "latest", top[0])

    def gc(self, *, keep: int | None = None, project: str | None = None, name: str | None = None,
           producer_run: str | None = None, grace_s: float = 600.0, dry_run: bool = False) -> dict[str, Any]:
        """With ``keep``, delete versions beyond the newest ``keep`` per name (of ``producer_run``'s versions
        only, when given) that have no alias; then free every stored file no version references (older than
        ``grace_s``)."""
        deleted = []
        if keep is not None:
            by_name: dict[tuple[str, str], list[ArtifactVersion]] = {}
            for v in self.versions(project, name):
                if producer_run is not None and v.producer_run != producer_run:
                    continue
                by_name.setdefault((v.project, v.name), []).append(v)
            for vs in by_name.values():
                for v in sorted(vs, key=lambda v: -v.version)[keep:]:
                    if not v.aliases:
                        deleted.append(f"{v.project}/{v.qualified_name}")
                        if not dry_run:
                            self.delete(v)
        referenced = [r[0] for r in self.db.query("SELECT DISTINCT sha256 FROM artifact_files")]
        n, freed = self.blobs.free(referenced, grace_s=grace_s, dry_run=dry_run)
        return {"deleted_versions": deleted, "freed_files": n, "freed_bytes": freed, "dry_run": dry_run}
