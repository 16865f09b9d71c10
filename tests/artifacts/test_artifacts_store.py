"""Artifacts round-trip with lineage: content-addressed files, versions, atomic aliases, gc that never
frees an aliased version."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.store.artifacts import ArtifactError, ArtifactRegistry, parse_ref


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def start(store: Path, **kw) -> rlcockpit.Run:
    kw.setdefault("project", "proj")
    return rlcockpit.init(dir=store, system_interval=None, health=False, capture_meta=False, **kw)


def checkpoint(root: Path, weights: bytes, extra: str = "cfg") -> Path:
    (root / "actor").mkdir(parents=True, exist_ok=True)
    (root / "actor" / "model.safetensors").write_bytes(weights)
    (root / "actor" / "config.json").write_text(extra)
    return root


def objects(store: Path) -> list[Path]:
    return [p for p in (store / "artifacts" / "objects").rglob("*") if p.is_file()]


def test_round_trip_with_lineage_and_metadata(store: Path, tmp_path: Path) -> None:
    ck = checkpoint(tmp_path / "ck", os.urandom(50_000))
    producer = start(store, name="trainer")
    v0 = producer.log_artifact(ck, name="policy", type="model", aliases=["best"], metadata={"step": 10, "acc": 0.5})
    producer.finish()
    assert v0.qualified_name == "policy:v0" and v0.step == 0
    consumer = start(store, name="eval")
    used = consumer.use_artifact("policy:best", type="model")
    consumer.finish()
    assert used.qualified_name == "policy:v0" and used.aliases == ["best", "latest"]
    assert used.metadata == {"step": 10, "acc": 0.5} and used.type == "model"
    assert used.logged_by() == producer.id and used.used_by() == [consumer.id]
    out = used.download(tmp_path / "dl")
    for rel in ("actor/model.safetensors", "actor/config.json"):
        assert (out / rel).read_bytes() == (ck / rel).read_bytes()
    api = rlcockpit.Api(store)
    assert api.artifact("proj/policy:v0").digest == used.digest
    assert [a.qualified_name for a in api.artifacts(name="policy")] == ["policy:v0"]
    reg = ArtifactRegistry(store)
    assert [v.qualified_name for v in reg.produced_by(producer.id)] == ["policy:v0"]
    assert [v.qualified_name for v in reg.used_by_run(consumer.id)] == ["policy:v0"]
    kinds = [e["payload"]["op"] for e in rlcockpit.Api(store).run(producer.id).events("artifact")]
    assert kinds == ["log"]


def test_same_content_is_stored_once(store: Path, tmp_path: Path) -> None:
    weights = os.urandom(200_000)
    a = checkpoint(tmp_path / "a", weights)
    b = checkpoint(tmp_path / "b", weights)  # a second copy of the same checkpoint
    run = start(store)
    v0 = run.log_artifact(a, name="policy", type="model")
    again = run.log_artifact(b, name="policy", type="model", aliases=["best"])
    assert again.id == v0.id and again.qualified_name == "policy:v0"  # identical content: the same version
    assert len(objects(store)) == 2
    (b / "actor" / "config.json").write_text("cfg-2")  # only a small file changes
    v1 = run.log_artifact(b, name="policy", type="model")
    assert v1.qualified_name == "policy:v1" and len(objects(store)) == 3  # the weights are shared
    other = run.log_artifact(a / "actor" / "model.safetensors", name="weights-only", type="model")
    assert len(objects(store)) == 3 and other.n_files == 1
    digest = hashlib.sha256(weights).hexdigest()
    assert (store / "artifacts" / "objects" / digest[:2] / digest[2:]).read_bytes() == weights
    run.finish()


def test_versions_aliases_move_atomically(store: Path, tmp_path: Path) -> None:
    reg = ArtifactRegistry(store)
    versions = []
    for i in range(3):
        f = tmp_path / f"w{i}.bin"
        f.write_bytes(bytes([i]) * 10)
        versions.append(reg.log([(f, "w.bin")], project="p", name="m", type="model"))
    assert [v.version for v in versions] == [0, 1, 2]
    assert reg.resolve("m").version == 2 and reg.resolve("m:latest").version == 2
    reg.set_alias(versions[0], "best")
    reg.set_alias(versions[1], "best")
    holders = [v.qualified_name for v in reg.versions("p", "m") if "best" in v.aliases]
    assert holders == ["m:v1"]  # one holder at any time
    reg.remove_alias(versions[1], "best")
    with pytest.raises(KeyError, match="it has: v0, v1, v2, latest"):
        reg.resolve("m:best")


def _move_best(store: str, n: int, who: int) -> None:
    reg = ArtifactRegistry(store)
    versions = reg.versions("p", "m")
    for i in range(n):
        reg.set_alias(versions[(i + who) % len(versions)], "best")


def test_concurrent_alias_moves_leave_exactly_one_holder(store: Path, tmp_path: Path) -> None:
    reg = ArtifactRegistry(store)
    for i in range(4):
        f = tmp_path / f"w{i}.bin"
        f.write_bytes(bytes([i]) * 10)
        reg.log([(f, "w.bin")], project="p", name="m", type="model")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_move_best, args=(str(store), 40, k)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    rows = reg.db.query("SELECT COUNT(*) FROM artifact_aliases WHERE project = 'p' AND name = 'm' AND alias = 'best'")
    assert rows == [(1,)]


def test_best_moves_only_when_better_across_runs(store: Path, tmp_path: Path) -> None:
    from rlcockpit.tracking.artifacts import log_checkpoint

    scores = [0.3, 0.6, 0.5]
    for i, acc in enumerate(scores):  # three trials of a sweep, each with one checkpoint
        run = start(store, name=f"trial-{i}")
        log_checkpoint(run, checkpoint(tmp_path / f"ck{i}", os.urandom(100)), step=20, metrics={"val/acc": acc},
                       best_key="val/acc", goal="max")
        run.finish()
    best = ArtifactRegistry(store).resolve("policy:best")
    assert best.qualified_name == "policy:v1" and best.metadata == {"step": 20, "val/acc": 0.6}


def test_gc_frees_unreferenced_files_never_aliased_versions(store: Path, tmp_path: Path) -> None:
    reg = ArtifactRegistry(store)
    vs = []
    for i in range(4):
        f = tmp_path / f"w{i}.bin"
        f.write_bytes(os.urandom(1000))
        vs.append(reg.log([(f, "w.bin")], project="p", name="m", type="model", aliases=["best"] if i == 0 else ()))
    out = reg.gc(keep=1, grace_s=0)  # keep the newest; v0 has an alias, so it stays too
    assert sorted(out["deleted_versions"]) == ["p/m:v1", "p/m:v2"] and out["freed_files"] == 2
    assert [v.qualified_name for v in reg.versions("p", "m")] == ["m:v0", "m:v3"]
    assert reg.resolve("m:best").download(tmp_path / "b").joinpath("w.bin").read_bytes() == (tmp_path / "w0.bin").read_bytes()
    with pytest.raises(ArtifactError, match="has aliases"):
        reg.delete(reg.resolve("m:v3"))  # latest
    reg.delete(reg.resolve("m:v3"), force=True)
    assert reg.resolve("m:latest").qualified_name == "m:v0"  # latest moves back
    young = reg.gc(grace_s=3600)
    assert young["freed_files"] == 0  # a just-written object may belong to a version being logged
    assert reg.gc(grace_s=0)["freed_files"] == 1


@pytest.mark.parametrize(("ref", "expected"), [
    ("policy", (None, "policy", "latest")), ("policy:v3", (None, "policy", "v3")),
    ("proj/policy:best", ("proj", "policy", "best")), ("team/proj/policy:v0", ("proj", "policy", "v0")),
])
def test_parse_ref(ref: str, expected: tuple) -> None:
    assert parse_ref(ref) == expected


def test_bad_names_and_references(store: Path, tmp_path: Path) -> None:
    reg = ArtifactRegistry(store)
    f = tmp_path / "x"
    f.write_text("x")
    with pytest.raises(ArtifactError, match="may only contain"):
        reg.log([(f, "x")], project="p", name="bad name", type="model")
    with pytest.raises(ArtifactError, match="looks like a version"):
        reg.log([(f, "x")], project="p", name="m", type="model", aliases=["v2"])
    reg.log([(f, "x")], project="p", name="m", type="model")
    with pytest.raises(ArtifactError, match="has type 'model', not 'dataset'"):
        reg.log([(tmp_path / "x", "y")], project="p", name="m", type="dataset")
    with pytest.raises(ArtifactError, match="not 'dataset'"):
        reg.resolve("m", type="dataset")
    reg.log([(f, "x")], project="q", name="m", type="model")
    with pytest.raises(KeyError, match="several projects"):
        reg.resolve("m:v0")
    assert reg.resolve("m:v0", project="q").project == "q"
    with pytest.raises(FileNotFoundError):
        start(store).log_artifact(tmp_path / "missing")
