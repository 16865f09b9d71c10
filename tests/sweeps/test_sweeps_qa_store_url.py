"""QA (issue 16 leftover): a sweep kept in the team's PostgreSQL (``--store postgresql://...``) runs its trials
in that database. Before: ``rlcockpit sweep FILE --store URL`` was refused ("unknown option"), and the agent
turned the URL into a local directory named ``postgresql:`` (a SQLite store nobody reads) and found no sweep."""

from __future__ import annotations

import io
from pathlib import Path

from sweeps_support import cli, write

from rlcockpit.store import open_store
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps import Agent
from rlcockpit.sweeps.state import SweepState

SWEEP = """\
program: train.py
method: grid
metric: {name: loss, goal: minimize}
parameters:
  lr: {values: [0.1, 0.2]}
"""

TRAIN = """\
import argparse
import rlcockpit as wandb
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float)
args = p.parse_args()
run = wandb.init(project="mine", config=args, dir="own-dir", system_interval=None)
run.log({"loss": 1 - wandb.config.lr})
run.finish()
"""


def test_sweep_and_trials_in_a_postgresql_store(tmp_path: Path, pg_url: str, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RLCOCKPIT_DIR", raising=False)
    monkeypatch.delenv("RLCOCKPIT_STORE", raising=False)
    write(tmp_path / "sweep.yaml", SWEEP)
    write(tmp_path / "train.py", TRAIN)
    made = cli(["sweep", "sweep.yaml", "--project", "team", "--store", pg_url], cwd=tmp_path, store=tmp_path / "local")
    assert made.returncode == 0, made.stderr
    sweep_id = made.stdout.strip().splitlines()[-1]
    out = io.StringIO()
    assert Agent(sweep_id, dir=pg_url, out=out, poll_s=0.2).run() == 2
    trials = SweepState(open_database(pg_url)).trials(sweep_id)
    assert [t["state"] for t in trials] == ["finished", "finished"], out.getvalue()
    store = open_store(pg_url)
    for t in trials:
        run = store.get_run(t["run_id"])
        assert run["project"] == "team" and run["group"] == sweep_id
        assert t["best"] == 1 - t["params"]["lr"]
    assert not any(p.name.startswith("postgresql") for p in tmp_path.iterdir())
    assert not (tmp_path / "own-dir").exists()  # the trial's own dir= does not take it out of the sweep's store
