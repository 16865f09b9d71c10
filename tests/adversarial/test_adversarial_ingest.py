"""A standing adversarial suite for ingestion: hypothesis writes hostile payloads (keys, values, steps, types,
sizes) into a real team server on real PostgreSQL, through the remote client and as hand-made API ops, and
the same metrics through ``log()`` into the local SQLite store. Properties:

* nothing is stored wrong: every stored point is bit-exact what was sent at that step; stored fields have
  the type the pages expect;
* every rejection is recorded and reported: a sent key, sample row or run field that is not stored is named
  in a ``data_lost`` record, its points counted (stored + lost = sent), and the client says it;
* the good points in the same batch are kept, the spool never blocks, no answer is a 500/503;
* the local store and the server agree on which keys and steps can be stored.

The team server has one store, PostgreSQL (``rlcockpit server`` refuses a SQLite URL); the SQLite store is
exercised through ``log()``. The counts (cases tried, rejected, stored, lost) are written to
``docs/qa/adversarial-ingest.md`` at the end of every whole run of this module (as ``make test`` runs it; not
after a run with ``-k``/``-m`` or a failure, whose numbers would be partial), like the other docs/qa counts.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pg_support
from rlcockpit.server.app import TeamServer
from rlcockpit.server.guard import Limits
from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore
from rlcockpit.store.remote.wire import encode_batch

DOC = Path(__file__).resolve().parents[2] / "docs" / "qa" / "adversarial-ingest.md"
COUNTS: Counter[str] = Counter()
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

HOSTILE_KEYS = ["a\nb", "nul\x00", "\ud800", "lone\udfff", "k" * 513, "x" * 512, "", " ", "tab\tkey", "del\x7f",
                "ü/ö", "a/b/c", "emoji😀", "\u2028sep", "../../etc/passwd", "<script>alert(1)</script>",
                "'; DROP TABLE runs;--", "%00", "\\", "_step"]
HOSTILE_TEXT = ["bad\x00nul", "\ud800", "ok text", "", "x" * 70_000, "<img src=x onerror=alert(1)>", "中文", "\u202e"]
keys = st.one_of(st.sampled_from(HOSTILE_KEYS), st.text(max_size=16), st.from_regex(r"[a-z_/]{1,12}", fullmatch=True))
steps = st.one_of(st.integers(0, 1000), st.integers(2**62, 2**63 - 1), st.integers(-3, -1))
texts = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=30))
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.integers(-2**60, 2**60),
                                     texts), lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                      st.dictionaries(texts, inner, max_size=3)),
                           max_leaves=6)
any_type = st.one_of(st.integers(), st.floats(allow_nan=False), texts, st.lists(texts, max_size=3),
                     st.dictionaries(texts, texts, max_size=2), st.none(), st.booleans())


@pytest.fixture(scope="module")
def server(pg_cluster, request):
    url, schema = pg_support.fresh_schema_url(pg_cluster)
    srv = TeamServer(url, "127.0.0.1", 0, pool_size=4, limits=Limits(requests_per_s=10_000, request_burst=10_000)).serve_in_thread()
    acc = srv.team.accounts
    acc.create_user("mallory", actor="test")
    acc.grant("mallory", "adv", "member", actor="test")
    srv.token = acc.issue_token("mallory", "test", actor="test")
    yield srv
    srv.shutdown()
    pg_support.drop_schema(pg_cluster, schema)
    opt = request.config.option
    if not getattr(opt, "keyword", "") and not getattr(opt, "markexpr", "") and not request.session.testsfailed:
        _write_doc()


def _write_doc() -> None:
    c = COUNTS
    lines = [
        "# Adversarial ingestion: counts", "",
        "Generated at the end of every whole run of `tests/adversarial/test_adversarial_ingest.py` (`make test`",
        "runs it; hypothesis, derandomized; the generated cases still vary a little between runs); do not edit by hand. Server:",
        "`rlcockpit server` on a throwaway PostgreSQL cluster; local store: SQLite through `log()`. The suite runs",
        "in `make test` with the same bounds (about 130 cases, under a minute).", "",
        "| what | count |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in sorted(c.items())], "",
        "Properties checked on every case: no stored point differs from what was sent at its step; every key, sample",
        "row or run field not stored is named in a `data_lost` record (stored + lost points = sent points); good",
        "points of the same batch are kept; the spool drains (nothing retried forever); hand-made ops get 200 or a",
        "422 naming the field, never 500/503; the runs list and run page keep answering with well-typed rows; the",
        "local SQLite store keeps exactly the keys and steps the server keeps.", "",
    ]
    text = "\n".join(lines)
    if not DOC.is_file() or DOC.read_text(encoding="utf-8") != text:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text, encoding="utf-8")


def _losses(store, run_id):
    return [e["payload"] for e in store.events(run_id, "data_lost")]


def _bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64).tolist()


@st.composite
def writes(draw):
    points = {}
    for key in draw(st.lists(keys, min_size=1, max_size=5, unique=True)):
        s = sorted(draw(st.lists(steps, min_size=1, max_size=4, unique=True)))
        points[key] = (np.array(s, np.int64), np.array(draw(st.lists(st.floats(), min_size=len(s), max_size=len(s)))),
                       np.zeros(len(s)))
    rows = draw(st.lists(st.fixed_dictionaries({"prompt": texts, "response": texts},
                                               optional={"reward": st.one_of(st.floats(), st.none(), texts),
                                                         "extra": json_values}), max_size=3))
    create = {"name": draw(st.one_of(texts, st.just("n" * 2000))), "tags": draw(st.lists(texts, max_size=3)),
              "group": draw(st.one_of(st.none(), texts)), "notes": draw(texts), "config": draw(
                  st.dictionaries(texts, json_values, max_size=3))}
    summary = draw(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), json_values, max_size=3))
    return points, rows, create, summary


@settings(max_examples=45, **SETTINGS)
@given(payload=writes())
def test_hostile_writes_through_the_client(server, tmp_path_factory, payload) -> None:
    points, rows, create, summary = payload
    rid = "adv" + uuid.uuid4().hex[:10]
    remote = RemoteStore(server.url, server.token, spool_dir=tmp_path_factory.mktemp("spool"), start=False)
    try:
        remote.create_run({"id": rid, "project": "adv", **create})
        remote.write_batch(rid, WriteBatch(points=dict(points), samples=[(1, [dict(r) for r in rows])] if rows else []))
        remote.update_run(rid, summary=summary)
        assert remote.uploader.flush(), remote.uploader.state  # never stuck on a value
    finally:
        remote.close()
    store = server.store
    lost = _losses(store, rid)
    messages = " ".join(x["message"] for x in lost)
    COUNTS["client cases tried"] += 1
    kept = set(store.keys(rid))
    sent_points = sum(len(s) for s, _, _ in points.values())
    stored_points = 0
    for key, (s, v, _) in points.items():
        if key not in kept:
            assert repr(key)[:60] in messages or len(points) > 5, (key, messages)
            continue
        got_s, got_v, _ = store.series(rid, key)
        good = s >= 0
        assert got_s.tolist() == s[good].tolist() and _bits(got_v) == _bits(v[good])  # nothing stored wrong
        stored_points += len(got_s)
    lost_points = sum(x["points"] for x in lost if x["what"] == "metrics")
    assert stored_points + lost_points == sent_points
    stored_rows = store.samples(rid)
    assert len(stored_rows) + sum(x["entries"] for x in lost if x["what"] == "samples") == len(rows)
    sent_rows = {(r["prompt"], r["response"]) for r in rows}
    assert all((r["prompt"], r["response"]) in sent_rows for r in stored_rows)
    row = store.get_run(rid)
    for field, value in create.items():
        stored = {"name": row["name"], "tags": row["tags"], "group": row["group"], "notes": row["notes"],
                  "config": row["config"]}[field]
        if stored != value and not (field == "config" and json.dumps(stored) == json.dumps(value)):
            assert f"run.{field}" in messages and (field != "name" or stored == rid), (field, value, stored)
            COUNTS["client run fields rejected"] += 1
    assert row["summary"] == summary or "run.summary" in messages
    COUNTS["client points sent"] += sent_points
    COUNTS["client points stored"] += stored_points
    COUNTS["client points rejected (recorded as data_lost)"] += lost_points
    COUNTS["client sample rows stored"] += len(stored_rows)
    COUNTS["client sample rows rejected (recorded)"] += len(rows) - len(stored_rows)
    COUNTS["client data_lost records"] += len(lost)


WELL_TYPED = {"name": texts, "tags": st.lists(texts, max_size=3), "group": st.one_of(st.none(), texts), "notes": texts,
              "config": st.dictionaries(texts, json_values, max_size=3), "summary": st.dictionaries(
                  texts, json_values, max_size=3), "status": st.sampled_from(["running", "finished", "crashed"]),
              "created_at": st.floats(0, 2e9), "meta": st.dictionaries(texts, json_values, max_size=2),
              "exit_code": st.one_of(st.none(), st.integers(-255, 255)), "finished_at": st.floats(0, 2e9),
              "heartbeat_at": st.floats(0, 2e9), "data_lost": st.integers(0, 10)}


def _field(draw, name):
    """Half the time a value of the right type (hostile text inside), else any type at all."""
    return draw(WELL_TYPED[name] if draw(st.booleans()) else any_type)


@st.composite
def hand_made_ops(draw):
    create = {"id": None, "project": "adv"}
    for field in draw(st.lists(st.sampled_from(["name", "tags", "group", "notes", "config", "summary", "status",
                                                "created_at", "meta"]), unique=True, max_size=3)):
        create[field] = _field(draw, field)
    fields = {f: _field(draw, f) for f in draw(st.lists(st.sampled_from(
        ["summary", "tags", "group", "name", "notes", "status", "exit_code", "finished_at", "heartbeat_at",
         "data_lost", "config"]), unique=True, max_size=2))}
    batch = {"run_fields": fields} if fields else {}
    if draw(st.booleans()):
        batch["events"] = [[draw(texts), {"v": draw(any_type)}, draw(st.one_of(st.none(), steps))]]
    if draw(st.booleans()):
        batch["samples"] = [[draw(st.integers(0, 5)), [{"prompt": draw(texts), "reward": draw(any_type)}]]]
    return create, batch


@settings(max_examples=60, **SETTINGS)
@given(ops=hand_made_ops())
def test_hand_made_ops_get_a_clear_answer_and_pages_keep_working(server, ops) -> None:
    create, batch = ops
    rid = "hm" + uuid.uuid4().hex[:10]
    create["id"] = rid
    body = {"stream": "adv", "ops": [{"seq": 1, "create": create}] + ([{"seq": 2, "batch": batch}] if batch else [])}
    headers = {"authorization": f"Bearer {server.token}"}
    import httpx

    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as c:
        r = c.post(f"/api/v1/runs/{rid}/ingest", content=json.dumps(body).encode())
        COUNTS["api cases tried"] += 1
        assert r.status_code in (200, 422), r.text
        if r.status_code == 422:
            COUNTS["api ops rejected with 422"] += 1
            assert "ops[" in r.json()["error"], r.text  # names the op (and the field)
            return
        COUNTS["api ops stored"] += 1
        page = c.get(f"/api/runs/{rid}")
        assert page.status_code == 200, page.text
        listing = c.get("/api/runs", params={"project": "adv"})
        assert listing.status_code == 200
    row = server.store.get_run(rid)
    assert isinstance(row["tags"], list) and all(isinstance(t, str) for t in row["tags"])
    assert isinstance(row["summary"], dict) and isinstance(row["config"], dict) and isinstance(row["name"], str)
    assert row["group"] is None or isinstance(row["group"], str)


@settings(max_examples=25, **SETTINGS)
@given(payload=writes())
def test_local_log_and_the_server_keep_the_same_keys_and_steps(server, tmp_path_factory, payload) -> None:
    import rlcockpit

    points = payload[0]
    rid = "ag" + uuid.uuid4().hex[:10]
    remote = RemoteStore(server.url, server.token, spool_dir=tmp_path_factory.mktemp("spool"), start=False)
    remote.create_run({"id": rid, "project": "adv", "name": rid})
    remote.write_batch(rid, WriteBatch(points=dict(points)))
    assert remote.uploader.flush()
    remote.close()
    by_step: dict[int, dict] = {}
    for key, (s, v, _) in points.items():
        for step, value in zip(s.tolist(), v.tolist()):
            by_step.setdefault(step, {})[key] = value
    run = rlcockpit.init(project="adv", dir=tmp_path_factory.mktemp("local"), system_interval=None,
                         capture_meta=False, health=False)
    for step in sorted(by_step):
        run.log(by_step[step], step=step)
    run.finish()
    local, srv = run.store, server.store
    COUNTS["agreement cases tried"] += 1
    assert sorted(local.keys(run.id)) == sorted(srv.keys(rid))
    for key in srv.keys(rid):
        assert local.series(run.id, key)[0].tolist() == srv.series(rid, key)[0].tolist()
        assert _bits(local.series(run.id, key)[1]) == _bits(srv.series(rid, key)[1])
    COUNTS["agreement keys compared"] += len(points)


def test_encode_is_what_the_server_decodes() -> None:
    """The wire keeps what the client cleaned bit-exact (a sanity check of the suite's oracle)."""
    b = WriteBatch(points={"k": (np.array([0, 2**63 - 1]), np.array([np.nan, -0.0]), np.zeros(2))})
    from rlcockpit.store.remote.wire import decode_batch

    got = decode_batch(json.loads(json.dumps(encode_batch(b))))
    assert got.points["k"][0].tolist() == [0, 2**63 - 1] and _bits(got.points["k"][1]) == _bits([np.nan, -0.0])
