"""init()'s tags / group / notes / config: W&B's types, and a lone surrogate never kills the script (issue 25,
12 and 14)."""

from __future__ import annotations

import logging

import pytest

import rlcockpit
from rlcockpit.store import open_store


def test_a_str_tag_is_one_tag_as_in_wandb(start, store_dir) -> None:
    run = start(tags="grpo")
    run.finish()
    assert open_store(store_dir).get_run(run.id)["tags"] == ["grpo"] and run.tags == ("grpo",)


@pytest.mark.parametrize(("kw", "field"), [({"tags": 5}, "tags"), ({"group": {"a": 1}}, "group"),
                                           ({"notes": ["x"]}, "notes"), ({"name": {"n": 1}}, "name")])
def test_wrong_types_are_refused_naming_the_field(start, kw, field) -> None:
    with pytest.raises(TypeError, match=rf"init\({field}="):
        start(**kw)


def test_a_number_where_text_belongs_is_kept_as_text_with_a_warning(start, store_dir, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = start(group=3, notes=1.5)
    run.finish()
    row = open_store(store_dir).get_run(run.id)
    assert row["group"] == "3" and row["notes"] == "1.5" and "init(group=3)" in caplog.text


def test_a_lone_surrogate_in_tags_or_config_is_stored_safe_with_one_warning(start, store_dir, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = start(tags=["ok", "bad\ud800tag"], config={"lr": 1e-5, "pro\udc00mpt": "x\ud83dy", "n": {"d": "\0"}},
                    notes="n\udfff")
        run.log({"loss": 1.0})
    run.finish()
    row = open_store(store_dir).get_run(run.id)
    assert row["tags"] == ["ok", "bad\ufffdtag"] and row["notes"] == "n\ufffd"
    assert row["config"] == {"lr": 1e-5, "pro\ufffdmpt": "x\ufffdy", "n": {"d": "\ufffd"}}
    warnings = [r.getMessage() for r in caplog.records if "lone surrogate" in r.getMessage()]
    assert len(warnings) == 1 and "tags[1]" in warnings[0] and "config pro\ufffdmpt" in warnings[0]
    assert "config n.d" in warnings[0] and "notes" in warnings[0]
    assert rlcockpit.Api(store_dir).run(run.id).summary["loss"] == 1.0


def test_fields_set_after_init_are_stored_safe_not_lost(start, store_dir, caplog) -> None:
    """A surrogate set through run.config / run.notes / run.tags made the store refuse the whole batch: config,
    notes, tags and the summary were lost without a data_lost record."""
    run = start()
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run.config.update({"k": "a\ud800", "n": "x\0y", "api_key": "plain"})
        run.notes = "b\udc00 Bearer abcdefghijklmnop"
        run.tags = ["c\ud800", "rlc_0123456789ab_ABCDEFGHIJKLMNOPQRSTUVWX"]
        run.log({"loss": 1.0})
    run.finish()
    stored = rlcockpit.Api(store_dir).run(run.id)
    assert stored.config == {"k": "a\ufffd", "n": "x\ufffdy", "api_key": "***"}
    assert stored.notes == "b\ufffd Bearer ***" and stored.tags == ["c\ufffd", "rlc_***"]
    assert stored.summary["loss"] == 1.0
    assert "run.config: text with a lone surrogate" in caplog.text and "tags[0]" in caplog.text


def test_show_masks_secrets_of_a_store_written_before_the_rules(start, store_dir, capsys) -> None:
    from rlcockpit.cli import main
    from rlcockpit.store import open_store

    run = start(tags=["t"])
    run.finish()
    token = "rlc_0123456789ab_ABCDEFGHIJKLMNOPQRSTUVWX"
    open_store(store_dir).update_run(run.id, config={"OPENAI_KEY": "plainvalue", "x": token},
                                     notes=f"Bearer {token}", tags=[token])  # as an older version stored them
    assert main(["show", run.id, "--dir", str(store_dir)]) == 0
    assert main(["show", run.id, "--dir", str(store_dir), "--json"]) == 0
    out = capsys.readouterr().out
    assert "ABCDEFGHIJ" not in out and "plainvalue" not in out and "rlc_***" in out


@pytest.mark.parametrize("config", [5, [1, 2], "", b"x"])
def test_a_config_that_is_no_mapping_is_refused_naming_config(start, config) -> None:
    with pytest.raises((TypeError, FileNotFoundError, ValueError), match="config"):
        start(config=config)


def test_config_keys_json_cannot_hold_are_stored_as_text(start, store_dir, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = start(config={(1, 2): 3, "ok": {1: "a"}})
    run.finish()
    assert rlcockpit.Api(store_dir).run(run.id).config == {"(1, 2)": 3, "ok": {"1": "a"}}
    assert "(1, 2)" in caplog.text


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_nul_or_surrogate_in_the_project_is_stored_safe_in_both_stores(backend, tmp_path, request,
                                                                       caplog) -> None:
    """The project went to the store as given: SQLite kept the NUL and PostgreSQL refused it, so the same
    ``init`` killed a script on the team store (hostile names, session of 2026-12-07)."""
    store = str(tmp_path) if backend == "sqlite" else request.getfixturevalue("pg_url")
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = rlcockpit.init(project="ev\0il\ud800", dir=str(tmp_path), store=store, system_interval=None)
        run.log({"loss": 1.0})
        run.finish()
    assert run.project == "ev\ufffdil\ufffd"
    assert open_store(store).get_run(run.id)["project"] == "ev\ufffdil\ufffd"
    assert any("project" in r.getMessage() and "lone surrogate" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_overlong_run_text_is_cut_alike_in_both_stores(backend, tmp_path, request, caplog) -> None:
    """A 600-character project/name/group/tag was kept whole by SQLite and refused by the team store, so the same
    ``init`` stored a run in one and lost it in the other (hostile names, session of 2026-12-07)."""
    from rlcockpit.store.rules import MAX_KEY_LEN

    store = str(tmp_path) if backend == "sqlite" else request.getfixturevalue("pg_url")
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run = rlcockpit.init(project="p" * 600, name="n" * 700, group="g" * 513, tags=["t" * 900, "ok"],
                             dir=str(tmp_path), store=store, system_interval=None)
        run.log({"loss": 1.0, "k" * 600: 2.0})
        run.name = "m" * 800
        run.finish()
    row = open_store(store).get_run(run.id)
    assert (row["project"], row["name"], row["group"]) == ("p" * MAX_KEY_LEN, "m" * MAX_KEY_LEN, "g" * MAX_KEY_LEN)
    assert row["tags"] == ["t" * MAX_KEY_LEN, "ok"]
    assert rlcockpit.Api(store).run(run.id).summary["loss"] == 1.0
    cut = [r.getMessage() for r in caplog.records if "each stored as its first 512" in r.getMessage()]
    assert len(cut) == 2 and "project (600 characters)" in cut[0] and "tags[0] (900 characters)" in cut[0]
    assert "name (800 characters)" in cut[1]
    rejected = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert len(rejected) == 1 and "a key of 600 characters" in rejected[0] and len(rejected[0]) < 300
