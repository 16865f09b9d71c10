"""The load benchmark's faults, shortened for `make test`: remote clients logging into a `rlcockpit server`
subprocess that is SIGKILLed mid-load and restarted, then PostgreSQL stopped and started again — every point
stored exactly once (each key of each run read back against what its client produced)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import team_server  # noqa: E402

pytestmark = pytest.mark.slow


def test_sigkill_and_postgres_outage_lose_and_duplicate_nothing() -> None:
    r = team_server.run_load(clients=6, metrics=20, rate=10, duration=16, procs=2, faults=True, pg_outage=4,
                             fast_pg=True, kill_wait=2)
    assert len(r["faults"]) == 4, r["faults"]
    assert r["points_expected"] > 6 * 20 * 100
    assert (r["missing"], r["duplicated"], r["out_of_order"], r["left_in_spools"]) == (0, 0, 0, 0), r
    assert r["stored"] == r["points_expected"]
    assert r["clients_with_outage"] == 6  # every client saw the outages and replayed from its spool
