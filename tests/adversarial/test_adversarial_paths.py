"""Path traversal and links against every command that writes a file named by stored data (issue 25, 1/2/16).

The hostile names reach the store the way an older version or a hostile team member would put them there:
rows of a real store rewritten with SQL. Every write must land inside its root or be refused naming the
name; the victim files outside never change; the good files of the same artifact are still written.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from adversarial_files_support import adv_doc_fixture, adv_tally_fixture  # noqa: F401 - fixtures

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.paths import UnsafePathError, check_relative, confined
from rlcockpit.store.artifacts import ArtifactRegistry
from rlcockpit.tracking.sinks.base import RunInfo

VICTIM = "victim/keep.txt"


def hostile_names(tmp_path: Path) -> list[str]:
    """Names that must never be written where they point (relative to a root two levels below tmp_path)."""
    return ["../../victim/keep.txt", "../../../victim/keep.txt", str(tmp_path / VICTIM), "a/../../../victim/keep.txt",
            "x\0y", "/etc/passwd", "..", "a/" + "b" * 300, "c" * 5000, "\\..\\..\\victim\\keep.txt", "",
            "./../victim/keep.txt"]


def logged_version(tmp_path: Path, n_hostile: int) -> tuple[Path, str]:
    """A store with one artifact of ``1 + n_hostile`` files, all named ``f<i>.txt`` for now."""
    store = tmp_path / "store"
    src = tmp_path / "src"
    src.mkdir()
    for i in range(1 + n_hostile):
        (src / f"f{i}.txt").write_text(f"content {i}")
    (src / "ünïcödé 文件.txt").write_text("unicode name")
    run = rlcockpit.init(project="p", dir=store, system_interval=None, health=False, capture_meta=False)
    run.log_artifact(src, name="ckpt", type="model")
    run.finish()
    return store, "ckpt:v0"


def rename_stored(store: Path, names: list[str]) -> None:
    reg = ArtifactRegistry(store)
    with reg.db.transaction() as cur:
        for i, name in enumerate(names, start=1):
            cur.execute("UPDATE artifact_files SET path = ? WHERE path = ?", (name, f"f{i}.txt"))


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / VICTIM
    v.parent.mkdir(parents=True)
    v.write_text("original")
    return v


def test_artifact_get_cli_and_download_api_refuse_every_hostile_stored_name(
        tmp_path: Path, victim: Path, adv_tally, capsys: pytest.CaptureFixture) -> None:
    names = [n for n in hostile_names(tmp_path) if "\0" not in n]  # SQLite text keeps no NUL: checked below
    store, ref = logged_version(tmp_path, len(names))
    rename_stored(store, names)
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    root = tmp_path / "dl" / "root"
    assert main(["artifact", "get", ref, "--dir", str(store), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{len(names)} stored file(s) not written" in err
    for name in names:
        assert repr(name)[:40] in err, name
        adv_tally.add("rejected")
    assert victim.read_text() == "original"
    written = {p for p in tmp_path.rglob("*") if p.is_file() and store not in p.parents} - before
    assert written == {root / "f0.txt", root / "ünïcödé 文件.txt"}  # the good files are there, nothing else
    assert (root / "f0.txt").read_text() == "content 0"
    adv_tally.add("stored", 2)
    version = ArtifactRegistry(store).resolve(ref)
    with pytest.raises(UnsafePathError, match="would land outside"):
        version.download(tmp_path / "api-root")
    assert victim.read_text() == "original"
    assert not (tmp_path / "etc").exists()


def test_download_refuses_a_link_in_the_root_leading_out(tmp_path: Path, victim: Path, adv_tally) -> None:
    store, ref = logged_version(tmp_path, 1)
    rename_stored(store, ["sub/keep.txt"])
    root = tmp_path / "root"
    root.mkdir()
    (root / "sub").symlink_to(victim.parent, target_is_directory=True)  # planted before the download
    with pytest.raises(UnsafePathError, match="through a link"):
        ArtifactRegistry(store).resolve(ref).download(root)
    assert victim.read_text() == "original"
    adv_tally.add("rejected")
    (root / "f0.txt").unlink()
    (root / "f0.txt").symlink_to(victim)  # a link at the file itself is replaced, never written through
    rename_stored(store, [])
    with pytest.raises(UnsafePathError):
        ArtifactRegistry(store).resolve(ref).download(root)
    assert victim.read_text() == "original" and not (root / "f0.txt").is_symlink()
    assert (root / "f0.txt").read_text() == "content 0"
    adv_tally.add("stored")


def test_a_hostile_stored_digest_is_refused(tmp_path: Path, victim: Path, adv_tally) -> None:
    store, ref = logged_version(tmp_path, 1)
    reg = ArtifactRegistry(store)
    for digest in ("../../../../victim/keep.txt", "ab/../../../victim", "0" * 63 + "\0", "A" * 64):
        with reg.db.transaction() as cur:
            cur.execute("UPDATE artifact_files SET sha256 = ? WHERE path = 'f1.txt'", (digest,))
        with pytest.raises(UnsafePathError, match="not a sha256"):
            reg.resolve(ref).download(tmp_path / "out")
        with pytest.raises(UnsafePathError):
            reg.resolve(ref).file("f1.txt")
        adv_tally.add("rejected")
    assert victim.read_text() == "original"


def test_new_file_add_file_and_log_refuse_hostile_names(tmp_path: Path, victim: Path, adv_tally) -> None:
    art = rlcockpit.Artifact("a", type="dataset")
    src = tmp_path / "one.txt"
    src.write_text("x")
    for name in hostile_names(tmp_path):
        with pytest.raises(UnsafePathError):
            with art.new_file(name, mode="w") as f:
                f.write("pwned")
        with pytest.raises(UnsafePathError):
            ArtifactRegistry(tmp_path / "store").log([(src, name)], project="p", name="a", type="dataset")
        adv_tally.add("rejected", 2)
        if name:  # add_file(name="") means "the file's own name", as in W&B
            with pytest.raises(UnsafePathError):
                art.add_file(src, name=name)
            adv_tally.add("rejected")
    assert victim.read_text() == "original"
    assert not list(tmp_path.glob("**/*pwned*")) and art.files == []
    with art.new_file("ok/ünï.txt", mode="w") as f:  # unicode and subfolders are fine
        f.write("fine")
    with art.new_file("./dup.txt", mode="w") as f:
        f.write("d")
    with pytest.raises(ValueError, match="already has"):
        with art.new_file("dup.txt", mode="w") as f:
            f.write("again")
    assert sorted(p for _, p in art.files) == ["dup.txt", "ok/ünï.txt"]
    adv_tally.add("stored", 2)


def test_add_dir_skips_links_out_of_the_folder_and_loops_keeping_the_rest(
        tmp_path: Path, adv_tally, caplog: pytest.LogCaptureFixture) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASH:19000")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("OUTSIDE-DIR-CONTENT")
    d = tmp_path / "ckpt"
    (d / "sub").mkdir(parents=True)
    (d / "model.bin").write_bytes(b"weights")
    (d / "sub" / "cfg.json").write_text("{}")
    (d / "shadow").symlink_to(secret)  # a link to a file outside
    (d / "sub" / "out").symlink_to(outside, target_is_directory=True)  # a folder outside
    (d / "loop").symlink_to(d, target_is_directory=True)  # a loop to the top
    (d / "sub" / "self").symlink_to(d / "sub", target_is_directory=True)  # a loop to itself
    (d / "a").symlink_to(d / "b")  # a two-link loop
    (d / "b").symlink_to(d / "a")
    (d / "broken").symlink_to(tmp_path / "nowhere")
    (d / "inside-link.bin").symlink_to(d / "model.bin")  # stays inside: kept
    os.mkfifo(d / "pipe")  # reading it would block the run
    store = tmp_path / "store"
    run = rlcockpit.init(project="p", dir=store, system_interval=None, health=False, capture_meta=False)
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        art = rlcockpit.Artifact("ckpt", type="model")
        art.add_dir(d)
        version = run.log_artifact(art)
    run.finish()
    paths = sorted(f["path"] for f in version.files())
    assert paths == ["inside-link.bin", "model.bin", "sub/cfg.json"]
    adv_tally.add("stored", 3)
    text = caplog.text
    for name in ("shadow (a link out of the folder", "sub/out (a link out of the folder", "loop (a link loop)",
                 "sub/self (a link loop)", "a (a broken link or a link loop)", "b (a broken link or a link loop)",
                 "broken (a broken link", "pipe (not a regular file)"):
        assert name in text, name
        adv_tally.add("rejected")
    objects = b"".join(p.read_bytes() for p in (store / "artifacts" / "objects").rglob("*") if p.is_file())
    assert b"SECRETHASH" not in objects and b"OUTSIDE-DIR-CONTENT" not in objects


@pytest.mark.parametrize("run_name", ["../../victim/keep", "/tmp/abs-export-target", "a/b/../../../victim/keep",
                                      "n" * 400, "..", "名字/../../victim/keep"])
def test_export_default_file_stays_in_the_current_folder(tmp_path: Path, victim: Path, run_name: str, adv_tally,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    run = rlcockpit.init(project="p", dir=store, name=run_name, system_interval=None, health=False,
                         capture_meta=False)
    run.log({"loss": 1.0})
    run.finish()
    cwd = tmp_path / "work" / "here"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    assert main(["export", run.id, "--dir", str(store), "--format", "jsonl"]) == 0
    new = {p for p in tmp_path.rglob("*") if p.is_file()} - before
    assert len(new) == 1 and next(iter(new)).parent == cwd, new
    assert victim.read_text() == "original" and not Path("/tmp/abs-export-target.jsonl").exists()
    assert '"loss":1.0' in next(iter(new)).read_text()
    adv_tally.add("stored")


@pytest.mark.parametrize("run_id", ["../../victim", "a/b", "/abs", "..", "x\0y", "a\\..\\b", ".", "i" * 300])
def test_run_ids_that_would_name_folders_outside_are_refused(tmp_path: Path, run_id: str, adv_tally) -> None:
    with pytest.raises((ValueError, TypeError), match="id"):
        rlcockpit.init(project="p", dir=tmp_path / "store", id=run_id, system_interval=None, health=False,
                       capture_meta=False)
    info = RunInfo(id=run_id, name="n", project="p", group=None, tags=[], config={}, dir=tmp_path / "store")
    try:  # a hostile id read back from a store (resume): the sinks' folder is refused or stays inside
        inside = info.sink_dir("jsonl").resolve().is_relative_to((tmp_path / "store" / "jsonl").resolve())
    except UnsafePathError:
        inside = True
    assert inside
    assert not (tmp_path / "victim").exists() and not Path("/abs").exists()
    adv_tally.add("rejected")


def test_confined_rules(tmp_path: Path) -> None:
    assert check_relative("a/./b//c/") == "a/b/c"
    assert confined(tmp_path, "x/y") == tmp_path.resolve() / "x" / "y"
    for bad in ("../x", "/x", "C:\\x", "a/../../x", "\0", "", 5, "\ud800"):
        with pytest.raises(UnsafePathError):
            confined(tmp_path, bad)
