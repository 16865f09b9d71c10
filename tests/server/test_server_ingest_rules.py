"""Issue 25's lost-data findings on a real team server (real PostgreSQL): a value the database cannot hold,
a key or step refused by the server, a run deleted while a client logs, wrong types, a replay before the
role check, the Sweeps page. Each loses the bad unit only, records it exactly, and never loops."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore
from rlcockpit.store.remote.wire import dumps, encode_batch


def _pts(steps, value=1.0):
    s = np.asarray(steps, dtype=np.int64)
    return s, np.full(len(s), value), np.zeros(len(s))


def _remote(team, tmp_path, run_id, **row):
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path / "spool", start=False)
    remote.create_run({"id": run_id, "project": "rl", "name": run_id, **row})
    return remote


def _losses(store, run_id):
    return [e["payload"] for e in store.events(run_id, "data_lost")]


def _post(team, user, run_id, ops, stream="s"):
    with team.client(user) as c:
        return c.post(f"/api/v1/runs/{run_id}/ingest", content=json.dumps({"stream": stream, "ops": ops}).encode())


# ---- 9: one value the database cannot store -------------------------------------------------------------
def test_unstorable_values_lose_only_themselves_and_are_recorded(team, tmp_path, capfd) -> None:
    remote = _remote(team, tmp_path, "nul", name="x" * (1 << 20), notes="fine")  # a 1 MiB run name
    rows = [{"prompt": "p", "response": "bad\x00response", "reward": 1.0}, {"prompt": "p", "response": "ok"}]
    remote.write_batch("nul", WriteBatch(points={"loss": _pts(range(10))}, samples=[(3, rows)]))
    remote.write_batch("nul", WriteBatch(samples=[(4, [{"prompt": "\ud800", "response": "x"}])],
                                         run_fields={"summary": {"best": 0.5, "bad": "\ud800"}}))
    remote.write_batch("nul", WriteBatch(points={"loss": _pts(range(10, 20))}))
    assert remote.uploader.flush()  # nothing blocks the spool
    store = team.server.store
    row = store.get_run("nul")
    assert row["name"] == "nul" and row["notes"] == "fine"  # the name was refused alone: the id names the run
    assert store.series("nul", "loss")[0].tolist() == list(range(20))
    assert [r["response"] for r in store.samples("nul")] == ["ok"]
    lost = _losses(store, "nul")
    samples = [x for x in lost if x["what"] == "samples"]
    assert sorted(r for x in samples for r in map(tuple, x["ranges"])) == [(3, 3), (4, 4)]
    assert sum(x["entries"] for x in samples) == 2 and "NUL" in " ".join(x["message"] for x in samples)
    assert any(x["what"] == "run" and "run.name" in x["message"] for x in lost)
    assert any(x["what"] == "summary" and "surrogate" in x["message"] for x in lost)
    assert row["data_lost"] >= 4
    err = capfd.readouterr().err
    assert "run.name" in err and "NUL" in err and "surrogate" in err
    remote.close()


def test_hand_made_ops_with_unstorable_values_get_422_naming_the_field(team) -> None:
    create = {"id": "hm", "project": "rl", "name": "hm"}
    bad_sample = {"samples": [[1, [{"prompt": "a", "response": "b\u0000c"}]]]}
    r = _post(team, "alice", "hm", [{"seq": 1, "create": create}, {"seq": 2, "batch": bad_sample}])
    assert r.status_code == 422 and "samples[step 1][0]" in r.json()["error"] and "NUL" in r.json()["error"], r.text
    r = _post(team, "alice", "hm", [{"seq": 1, "create": {**create, "name": "n" * (1 << 20)}}])
    assert r.status_code == 422 and "run.name" in r.json()["error"], r.text
    assert _post(team, "alice", "hm", [{"seq": 1, "create": create}]).status_code == 200


def test_the_postgres_store_refuses_values_as_value_refused_not_unavailable(pg_url) -> None:
    from rlcockpit.store.base import ValueRefused
    from rlcockpit.store.postgres.store import PostgresStore

    store = PostgresStore(pg_url)
    try:
        store.create_run({"id": "r1", "project": "p", "name": "ok"})
        with pytest.raises(ValueRefused, match="NUL"):
            store.append_samples("r1", 0, [{"prompt": "a\x00b", "response": "c"}])
        with pytest.raises(ValueRefused):
            store.create_run({"id": "r2", "project": "p", "name": "n" * (1 << 20)})  # a B-tree row too large
        with pytest.raises(ValueRefused):
            store.update_run("r1", notes="\ud800")
    finally:
        store.close()


def test_sync_of_an_offline_run_with_a_nul_sample_completes(team, tmp_path) -> None:
    import rlcockpit
    from rlcockpit.server.sync import sync_run
    from rlcockpit.store.sqlite import SQLiteStore

    run = rlcockpit.init(project="rl", dir=tmp_path / "off", system_interval=None, capture_meta=False, health=False)
    for i in range(30):
        run.log({"a": float(i)}, step=i)
    run.log_samples([{"prompt": "p", "response": "x\x00y", "reward": 0.0}, {"prompt": "p", "response": "ok"}], step=5)
    run.finish()
    local = SQLiteStore(tmp_path / "off")
    out = sync_run(local, run.id, team.url, team.tokens["alice"])
    store = team.server.store
    assert out["sent"]["points"] == 30 and store.series(run.id, "a")[0].tolist() == list(range(30))
    assert [r["response"] for r in store.samples(run.id)] == ["ok"]
    assert any(x["what"] == "samples" and x["ranges"] == [[5, 5]] for x in _losses(store, run.id))


# ---- 10: keys and steps: one rule set, refused per key --------------------------------------------------
def test_bad_keys_lose_their_points_only_and_the_loss_says_which(team, tmp_path) -> None:
    remote = _remote(team, tmp_path, "keys")
    big = 2**62 + 5
    points = {"good": _pts(range(5)), "a\nb": _pts(range(5)), "nul\x00": _pts([1, 2]), "k" * 513: _pts([7]),
              "huge_step": _pts([big, big + 1])}
    remote.write_batch("keys", WriteBatch(points=points))
    assert remote.uploader.flush()
    store = team.server.store
    assert store.series("keys", "good")[0].tolist() == list(range(5))
    assert store.series("keys", "huge_step")[0].tolist() == [big, big + 1]  # int64 steps: the same rule as log()
    assert sorted(store.keys("keys")) == ["good", "huge_step"]
    [lost] = [x for x in _losses(store, "keys") if x["what"] == "metrics"]
    assert lost["points"] == 8 and lost["ranges"] == [[0, 4], [7, 7]] and lost["entries"] == 3
    assert "'a\\nb'" in lost["message"] and "control character" in lost["message"]


def test_log_refuses_the_keys_the_server_refuses(tmp_path, caplog) -> None:
    import rlcockpit

    run = rlcockpit.init(project="p", dir=tmp_path, system_interval=None, capture_meta=False, health=False)
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run.log({"neg": 1.0}, step=-1)  # the first call's step used to pass the "not below the last" check
        run.log({"ok": 1.0, "a\nb": 2.0, "x" * 600: 3.0}, step=0)
        run.log({"ok": 2.0}, step=2**62 + 1)
        run.finish()
    assert sorted(run.store.keys(run.id)) == ["ok"]
    assert run.store.series(run.id, "ok")[0].tolist() == [0, 2**62 + 1]
    text = caplog.text
    assert "control character" in text and "600 characters" in text


def test_a_server_refused_op_records_its_steps_and_points(team, tmp_path) -> None:
    """An op built without the client's cleaning (an older client) is dropped alone, its loss counted."""
    remote = _remote(team, tmp_path, "old")
    assert remote.uploader.flush()
    raw = encode_batch(WriteBatch(points={"good": _pts(range(3)), "bad\nkey": _pts(range(3))}))
    remote._append("old", {"batch": raw})  # spooled as an old client did: not cleaned
    remote.write_batch("old", WriteBatch(points={"good": _pts(range(3, 6))}))
    assert remote.uploader.flush()
    store = team.server.store
    assert store.series("old", "good")[0].tolist() == [3, 4, 5]
    [lost] = [x for x in _losses(store, "old") if x["what"] == "metrics"]
    assert lost["ranges"] == [[0, 2]] and lost["points"] == 6 and "bad\\nkey" in lost["message"]


# ---- 11: a run deleted on the server while a client logs -------------------------------------------------
def test_a_run_deleted_on_the_server_is_given_up_once(team, tmp_path, capfd) -> None:
    remote = _remote(team, tmp_path, "del")
    remote.write_batch("del", WriteBatch(points={"x": _pts(range(5))}))
    assert remote.uploader.flush()
    team.server.store.delete_run("del")
    for lo in range(5, 105, 5):
        remote.write_batch("del", WriteBatch(points={"x": _pts(range(lo, lo + 5))}))
    before = remote.uploader.requests
    assert remote.uploader.flush()
    for lo in range(105, 200, 5):  # logging goes on: nothing is spooled or sent for the run any more
        remote.write_batch("del", WriteBatch(points={"x": _pts(range(lo, lo + 5))}))
    assert remote.uploader.flush() and remote.spool.stats()["ops"] == 0
    assert remote.uploader.requests - before <= 2
    err = capfd.readouterr().err
    assert err.count("no longer has run del") == 1 and len(err.strip().splitlines()) <= 2
    assert remote.gone["del"] == 19
    from rlcockpit.server.sync import spool_status

    assert "batches dropped" in spool_status(remote.spool.path)["gone"]["del"]  # `rlcockpit status` shows it
    remote.close()


# ---- 4: a replayed op answers only after the role check --------------------------------------------------
def test_a_replay_by_a_user_without_the_role_is_refused(team) -> None:
    ops = [{"seq": 1, "create": {"id": "rp", "project": "rl", "name": "rp"}}]
    assert _post(team, "alice", "rp", ops).status_code == 200
    r = _post(team, "eve", "rp", ops)  # the same stream and seq: a duplicate, but eve has no role in rl
    # eve cannot see project rl: its run is "no run" to her (404, the project not named), and no cursor
    assert r.status_code == 404 and "applied_through" not in r.text and "'rl'" not in r.text


# ---- 14: wrong types are refused per op, naming the field; pages keep working ----------------------------
@pytest.mark.parametrize(("field", "value", "where"), [
    ("tags", 5, "run.tags"), ("tags", "grpo", "run.tags"), ("summary", "x", "run.summary"),
    ("group", {"a": 1}, "run.group"), ("config", [1, 2], "run.config"), ("exit_code", "0", "run.exit_code"),
])
def test_wrong_types_are_refused_per_op_naming_the_field(team, field, value, where) -> None:
    create = {"id": "ty", "project": "rl", "name": "ty"}
    ok = {"points": encode_batch(WriteBatch(points={"x": _pts(range(3))}))["points"]}
    if field in ("config",):
        ops = [{"seq": 1, "create": {**create, field: value}}]
    else:
        assert _post(team, "alice", "ty", [{"seq": 1, "create": create}, {"seq": 2, "batch": ok}]).status_code == 200
        ops = [{"seq": 3, "batch": {"run_fields": {field: value}}}]
    r = _post(team, "alice", "ty", ops)
    assert r.status_code == 422 and where in r.json()["error"], r.text
    with team.client("alice") as c:
        runs = c.get("/api/runs").json()
        assert all(isinstance(x.get("tags") or [], list) for x in runs["runs"])
        if field != "config":
            assert c.get("/api/runs/ty").status_code == 200


# ---- 15: the Sweeps page on the team server ---------------------------------------------------------------
def test_sweeps_api_answers_on_the_team_server(team) -> None:
    with team.client("alice") as c:
        r = c.get("/api/sweeps")
    assert r.status_code == 200 and r.json() == {"sweeps": []}, r.text


# ---- 20: each distinct refusal is said --------------------------------------------------------------------
def test_each_distinct_step_refusal_is_warned(tmp_path, caplog) -> None:
    import rlcockpit

    run = rlcockpit.init(project="p", dir=tmp_path, system_interval=None, capture_meta=False, health=False)
    with caplog.at_level(logging.WARNING, logger="rlcockpit"):
        run.log({"a": 1.0}, step=True)
        run.log({"a": 1.0}, step=1.5)
        run.log({"a": 1.0}, step="7")
        run.log({"a": 1.0}, step=2.5)  # the same kind as 1.5: rate-limited
    run.finish()
    text = caplog.text
    assert "is a bool" in text and "1.5 is not a whole number" in text and "'7' is a str" in text
    assert "2.5" not in text


def test_distinct_remote_refusals_are_each_said(team, tmp_path, capfd) -> None:
    remote = _remote(team, tmp_path, "say")
    remote.write_batch("say", WriteBatch(points={"a\nb": _pts([0])}))
    remote.write_batch("say", WriteBatch(points={"c\nd": _pts([1])}))  # the same kind: held back
    remote.write_batch("say", WriteBatch(samples=[(2, [{"prompt": "\x00"}])]))  # another kind: said
    remote.write_batch("say", WriteBatch(points={"k" * 600: _pts([3])}))  # another: said
    err = capfd.readouterr().err
    assert "'a\\nb'" in err and "'c\\nd'" not in err and "samples[step 2]" in err and "600 characters" in err
    assert remote.uploader.flush()
    assert sum(x["entries"] for x in _losses(team.server.store, "say")) == 4
    remote.close()


def test_the_wire_dumps_every_cleaned_batch(team, tmp_path) -> None:
    """A lone surrogate used to make the spool's JSON encoding raise on every retry of the writer."""
    remote = _remote(team, tmp_path, "sur")
    remote.add_event("sur", "note", {"text": "\udcff"}, step=1)
    remote.add_event("sur", "ok", {"text": "fine"}, step=2)
    assert remote.uploader.flush()
    kinds = [e["kind"] for e in team.server.store.events("sur")]
    assert "ok" in kinds and "note" not in kinds and "data_lost" in kinds
    assert dumps({"a": 1})
    remote.close()
