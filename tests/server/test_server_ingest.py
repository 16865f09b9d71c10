"""Remote logging into a real team server on real PostgreSQL: complete, ordered, duplicate-free, visible."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from rlcockpit.server.sync import spool_files
from rlcockpit.store.batch import WriteBatch
from rlcockpit.store.remote.client import RemoteStore
from rlcockpit.store.remote.wire import dumps, encode_batch


def _steps(store, run_id, key):
    return store.series(run_id, key)[0].tolist()


def test_a_run_logs_to_the_server_with_no_code_change(team, remote_init, tmp_path) -> None:
    run = remote_init(config={"lr": 1e-6})
    for i in range(300):
        run.log({"loss": 1.0 / (i + 1), "reward": i * 0.1, "nan": float("nan")}, step=i)
    run.log_samples([{"prompt": "2+2", "response": "4", "reward": 1.0}], step=10)
    run.summary["best"] = 0.9
    run.finish()
    store = team.server.store
    row = store.get_run(run.id)
    assert row["status"] == "finished" and row["project"] == "rl" and row["config"] == {"lr": 1e-6}
    assert row["meta"]["team_user"] == "alice" and row["summary"]["best"] == 0.9
    assert _steps(store, run.id, "loss") == list(range(300))
    assert np.isnan(store.series(run.id, "nan")[1]).all()
    assert store.samples(run.id)[0]["response"] == "4"
    assert not list(spool_files(tmp_path / "local"))  # everything acknowledged: the spool is gone


def test_a_retried_request_never_duplicates_a_point(team, tmp_path) -> None:
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path, start=False)
    remote.create_run({"id": "dup1", "project": "rl", "name": "dup"})
    remote.write_batch("dup1", WriteBatch(points={"x": (np.arange(5), np.ones(5), np.zeros(5))}))
    ops = remote.spool.pending()
    body = b'{"stream":' + dumps(remote.stream) + b',"ops":[' + b",".join(b for _, _, b in ops) + b"]}"
    with team.client("alice") as c:
        first = c.post("/api/v1/runs/dup1/ingest", content=body).json()
        again = c.post("/api/v1/runs/dup1/ingest", content=body).json()  # the response was "lost": resent
    assert first["applied"] == 2 and again == {"applied_through": first["applied_through"], "applied": 0,
                                               "duplicates": 2}
    assert _steps(team.server.store, "dup1", "x") == [0, 1, 2, 3, 4]
    remote.close()


def test_server_down_spools_then_replays_in_order(team, remote_init, tmp_path, pg_url, capfd) -> None:
    run = remote_init()
    for i in range(50):
        run.log({"a": i}, step=i)
    assert run.flush(10)
    port = team.server.server_address[1]
    team.server.shutdown()  # the server goes away mid-run
    for i in range(50, 120):
        run.log({"a": i}, step=i)
    run.flush(5)
    remote = run.store
    deadline = time.monotonic() + 10
    while remote.uploader.outage is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert remote.uploader.outage is not None and remote.spool.stats()["ops"] > 0
    err = capfd.readouterr().err
    assert "spooling to" in err and "sent in order when it is back" in err
    status = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "status", "--dir", str(tmp_path / "local"),
                             "--json"], capture_output=True, text=True, timeout=60)
    spools = json.loads(status.stdout)["spools"]
    assert spools and spools[0]["ops"] > 0 and spools[0]["live"] and spools[0]["last_error"]
    from rlcockpit.server.app import TeamServer

    back = TeamServer(pg_url, "127.0.0.1", port, pool_size=4).serve_in_thread()  # same address, same database
    try:
        remote.uploader.wake_now()
        run.finish()
        assert _steps(back.store, run.id, "a") == list(range(120))
        assert "is back" in capfd.readouterr().err
    finally:
        team.server = back  # the fixture shuts this one down


def test_killed_client_leaves_a_spool_that_sync_replays(team, tmp_path) -> None:
    """A process that dies before the upload (here: never started) leaves its ops; `rlcockpit sync` sends them once."""
    local = tmp_path / "local"
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=local / "spool", start=False)
    remote.create_run({"id": "orph", "project": "rl", "name": "orphan"})
    for lo in range(0, 100, 10):
        remote.write_batch("orph", WriteBatch(points={"x": (np.arange(lo, lo + 10), np.ones(10), np.zeros(10))}))
    remote.spool.close()  # the process "dies": lock released, ops left on disk
    env = {"RLCOCKPIT_TOKEN": team.tokens["alice"], "PATH": "/usr/bin:/bin"}
    import os

    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    for _ in range(2):  # a second sync finds nothing left (resumable, idempotent)
        out = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "sync", "--all", "--dir", str(local)],
                             capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr
    assert _steps(team.server.store, "orph", "x") == list(range(100))
    assert not list(spool_files(local))


def test_sync_uploads_an_offline_run_resumably(team, tmp_path) -> None:
    import os

    import rlcockpit

    local = tmp_path / "offline"
    run = rlcockpit.init(project="rl", dir=local, system_interval=None, health=False, capture_meta=False)
    for i in range(500):
        run.log({"a": i, "b": -i}, step=i)
    run.log_samples([{"prompt": "p", "response": "r", "reward": 0.5}], step=3)
    run.log_event("checkpoint", {"path": "/ckpt"}, step=100)
    run.finish()
    # half of it is already there (an interrupted earlier sync): only the rest may be sent
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path / "s", start=False)
    remote.create_run({"id": run.id, "project": "rl", "name": run.name})
    remote.write_batch(run.id, WriteBatch(points={"a": (np.arange(200), np.arange(200.0), np.zeros(200))}))
    assert remote.uploader.flush()
    remote.close()
    env = {**os.environ, "RLCOCKPIT_TOKEN": team.tokens["alice"]}
    cmd = [sys.executable, "-m", "rlcockpit.cli", "sync", run.id, "--dir", str(local), "--server", team.url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "sent 800 points" in out.stdout  # 300 of a, 500 of b
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert "sent 0 points, 0 samples, 0 events" in again.stdout
    store = team.server.store
    assert _steps(store, run.id, "a") == list(range(500)) and len(_steps(store, run.id, "b")) == 500
    assert store.get_run(run.id)["status"] == "finished" and len(store.samples(run.id)) == 1
    assert [e["kind"] for e in store.events(run.id)] == ["checkpoint"]


@pytest.mark.parametrize("case", ["wrong_token", "other_project", "malformed", "oversized", "backwards"])
def test_bad_clients_are_refused_and_store_nothing(team, tmp_path, case) -> None:
    good = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path / "good", start=False)
    good.create_run({"id": "good", "project": "rl", "name": "g"})
    good.write_batch("good", WriteBatch(points={"x": (np.arange(10, 20), np.ones(10), np.zeros(10))}))
    assert good.uploader.flush()

    def op(seq, batch=None, create=None):
        d = {"seq": seq}
        if create:
            d["create"] = create
        if batch is not None:
            d["batch"] = encode_batch(batch)
        return d

    create = {"id": "bad", "project": "rl", "name": "b"}
    pts = WriteBatch(points={"x": (np.arange(3), np.ones(3), np.zeros(3))})
    headers = {"authorization": f"Bearer {team.tokens['alice']}"}
    body = json.dumps({"stream": "s", "ops": [op(1, pts, create)]}).encode()
    path = "/api/v1/runs/bad/ingest"
    if case == "wrong_token":
        headers = {"authorization": "Bearer rlc_000000000000_notavalidsecretatall00"}
        want = (401, "not valid")
    elif case == "other_project":
        headers = {"authorization": f"Bearer {team.tokens['eve']}"}
        want = (403, "may not log runs in project 'rl'")
    elif case == "malformed":
        body = (b'{"stream": "s", "ops": [{"seq": 1, "create": {"id": "bad", "project": "rl"}, "batch": {"points": '
                b'{"keys": ["x"], "counts": [1], "s": "!!", "v": "", "t": ""}}}]}')
        want = (422, "not base64")
    elif case == "oversized":
        body = b"x" * (17 << 20)
        want = (413, "larger than the limit")
    else:  # a step going backwards against what the good run already stored
        path = "/api/v1/runs/good/ingest"
        body = json.dumps({"stream": "s2", "ops": [op(1, pts)]}).encode()
        want = (422, "step going backwards: step 0 after stored step 19")
    with team.client() as c:
        r = c.post(path, content=body, headers=headers)
    assert r.status_code == want[0] and want[1] in r.json()["error"], r.text
    store = team.server.store
    with pytest.raises(KeyError):
        store.get_run("bad")
    assert _steps(store, "good", "x") == list(range(10, 20))  # the other client is unaffected
    good.write_batch("good", WriteBatch(points={"x": (np.arange(20, 25), np.ones(5), np.zeros(5))}))
    assert good.uploader.flush() and _steps(store, "good", "x") == list(range(10, 25))
    good.close()


def test_a_rejected_batch_is_isolated_dropped_and_recorded_as_lost(team, tmp_path, capfd) -> None:
    remote = RemoteStore(team.url, team.tokens["alice"], spool_dir=tmp_path, start=False)
    remote.create_run({"id": "iso", "project": "rl", "name": "iso"})
    remote.write_batch("iso", WriteBatch(points={"x": (np.arange(5, 10), np.ones(5), np.zeros(5))}))
    remote.write_batch("iso", WriteBatch(points={"x": (np.arange(0, 3), np.ones(3), np.zeros(3))}))  # backwards
    remote.write_batch("iso", WriteBatch(points={"y": (np.arange(3), np.ones(3), np.zeros(3))}))
    assert remote.uploader.flush()
    store = team.server.store
    assert _steps(store, "iso", "x") == [5, 6, 7, 8, 9] and _steps(store, "iso", "y") == [0, 1, 2]
    lost = store.events("iso", "data_lost")
    assert lost and lost[0]["payload"]["reason"] == "rejected_by_store" and lost[0]["payload"]["ranges"] == [[0, 2]]
    assert store.get_run("iso")["data_lost"] >= 1
    assert "rejected a batch of run iso" in capfd.readouterr().err
    remote.close()


def test_a_remote_run_resumes_where_it_stopped(team, remote_init) -> None:
    first = remote_init(name="long", config={"lr": 1e-6, "n": 4})
    for i in range(10):
        first.log({"a": i}, step=i)
    first.finish()
    again = remote_init(resume=first.id, config={"extra": True})
    assert again.id == first.id and again.step == 9  # the server's last step
    for i in range(10, 20):
        again.log({"a": i}, step=i)
    again.finish()
    row = team.server.store.get_run(first.id)
    assert _steps(team.server.store, first.id, "a") == list(range(20))
    assert row["config"] == {"lr": 1e-6, "n": 4, "extra": True} and row["status"] == "finished"


def test_a_permanent_refusal_does_not_hold_finish_for_its_timeout(team, tmp_path, capsys) -> None:
    """A viewer's token is refused (403) for good: ``finish`` says so at once and keeps the data spooled for
    ``rlcockpit sync``; it waited out the whole finish timeout (30 s by default) first."""
    import time

    remote = RemoteStore(team.url, team.tokens["val"], spool_dir=tmp_path / "s")
    remote.create_run({"id": "viewer01", "project": "rl", "name": "v"})
    remote.write_batch("viewer01", WriteBatch(points={"a": (np.arange(5), np.arange(5.0), np.zeros(5))}))
    t0 = time.monotonic()
    assert remote.finish_run("viewer01", timeout_s=20.0) is False
    assert time.monotonic() - t0 < 10.0
    out = capsys.readouterr()
    assert "refused it" in out.out + out.err and "rlcockpit sync" in out.out + out.err
    assert remote.spool.stats("viewer01")["ops"] > 0  # nothing was thrown away
    remote.close()
