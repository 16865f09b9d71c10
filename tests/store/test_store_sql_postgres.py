"""Sweeps through PostgreSQL: the experiment tables' Database on the team server's database, several agents
(threads with their own connections, as processes on several machines would be) claiming trials of one
sweep — every grid point taken exactly once."""

from __future__ import annotations

import threading

from rlcockpit.store.postgres.sql import PostgresDatabase, portable
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.controller import Claim, next_trial
from rlcockpit.sweeps.state import SweepState


def test_placeholders_are_translated() -> None:
    assert portable("SELECT * FROM t WHERE a = ? AND b LIKE '%x'") == "SELECT * FROM t WHERE a = %s AND b LIKE '%%x'"


def test_agents_on_postgres_share_one_grid_sweep_without_taking_a_point_twice(pg_url) -> None:
    db = open_database(pg_url)
    assert isinstance(db, PostgresDatabase) and not db.has_table("sweeps")
    state = SweepState(db)
    assert db.has_table("sweeps")
    grid = {"method": "grid", "parameters": {"lr": {"values": [1e-6, 3e-6, 1e-5, 3e-5]}, "n": {"values": [2, 4, 8]}}}
    state.create("sw1", project="p", name=None, method="grid", config=grid, seed=0, sampler="grid", base_args=[])
    claims: list[Claim] = []
    lock = threading.Lock()

    def agent(i: int) -> None:
        mine = SweepState(open_database(pg_url))  # its own connections
        while True:
            out = next_trial(mine, "sw1", f"agent{i}")
            if not isinstance(out, Claim):
                return
            with lock:
                claims.append(out)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    points = sorted((c.params["lr"], c.params["n"]) for c in claims)
    assert len(points) == 12 and len(set(points)) == 12  # the whole grid, each point once
    assert sorted(c.number for c in claims) == list(range(12))
    assert state.get("sw1")["state"] == "finished"
