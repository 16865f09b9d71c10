"""The ingestion wire format (round trip, and every malformed shape refused with the field named) and store
selection by URL everywhere: ``init(store=)``, ``Api(store=)``, ``--store``, ``$RLCOCKPIT_STORE``."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import numpy as np
import pytest

import rlcockpit
from rlcockpit.store.batch import DataLoss, WriteBatch
from rlcockpit.store.remote.wire import BadBatch, decode_batch, encode_batch


def _b64(a, dtype):
    return base64.b64encode(np.asarray(a, dtype=dtype).tobytes()).decode()


def test_batch_round_trips_bit_exact() -> None:
    vals = np.array([np.nan, np.inf, -0.0, 1e-300])
    batch = WriteBatch(points={"a": (np.arange(4), vals, np.arange(4.0)), "b": (np.array([7]), np.array([2.0]),
                                                                                 np.array([0.0]))},
                       samples=[(3, [{"prompt": "p", "response": "r", "reward": 1.0}])],
                       events=[("checkpoint", {"path": "/x"}, 3)], run_fields={"summary": {"a": 1}},
                       losses=[DataLoss("metrics", "queue_full", [[1, 2]], entries=2)])
    back = decode_batch(json.loads(json.dumps(encode_batch(batch))))
    assert np.array_equal(back.points["a"][1].view(np.int64), vals.view(np.int64))  # NaN payload and -0.0 kept
    assert back.points["b"][0].tolist() == [7] and back.samples == batch.samples
    assert back.events == [("checkpoint", {"path": "/x"}, 3)] and back.losses[0].ranges == [[1, 2]]


def _pts(**over):
    d = {"keys": ["a"], "counts": [2], "s": _b64([0, 1], "<i8"), "v": _b64([1, 2], "<f8"), "t": _b64([0, 0], "<f8")}
    d.update(over)
    return {"points": d}


@pytest.mark.parametrize("batch,match", [
    (_pts(counts=[3]), "3 points announced"),
    (_pts(keys=["a", "b"]), "2 keys but 1 counts"),
    (_pts(keys=["bad\x1bname"]), "bad metric name"),
    (_pts(s="not base64!"), "points.s: not base64"),
    (_pts(v=base64.b64encode(b"123").decode()), "whole number of 8-byte values"),
    (_pts(s=_b64([-1, 0], "<i8")), "steps must be within"),
    (_pts(counts=[0]), "positive integers"),
    ({"points": [1, 2]}, "expected {keys"),
    ({"colour": 1}, "unknown fields"),
    ({"samples": [[1, "row"]]}, "samples\\[0\\]"),
    ({"events": [["", {}, 1]]}, "events\\[0\\]"),
    ({"run_fields": {"project": "other"}}, "run_fields: only"),
])
def test_malformed_batches_name_the_field(batch, match) -> None:
    with pytest.raises(BadBatch, match=match):
        decode_batch(batch)


def test_init_api_and_cli_select_the_store_by_url(pg_url, tmp_path, monkeypatch) -> None:
    run = rlcockpit.init(project="p", store=pg_url, dir=tmp_path / "local", system_interval=None, health=False,
                         capture_meta=False)
    run.log({"x": 1.0}, step=0)
    run.finish()
    assert not (tmp_path / "local" / "rlcockpit.db").exists()  # nothing went to the local SQLite store
    assert rlcockpit.Api(store=pg_url).run(run.id).history()["x"].tolist() == [1.0]
    out = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "runs", "--store", pg_url, "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)] == [run.id]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RLCOCKPIT_STORE", pg_url)  # the variable alone, for every reader and writer
    second = rlcockpit.init(project="p", system_interval=None, health=False, capture_meta=False)
    second.finish()
    assert {r.id for r in rlcockpit.Api().runs("p")} == {run.id, second.id}
