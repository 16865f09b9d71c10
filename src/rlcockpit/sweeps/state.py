"""Sweep state in the store: the sweep, its trials and its agents, as rows of three tables.

This is the whole controller state: agents on any machine that reach the same database share a sweep,
and every decision (next trial, stop at ``run_cap`` or ``metric.target``) is taken inside one serialised
transaction, so two agents can never take the same trial number or grid point. SQL is portable (see
:mod:`rlcockpit.store.sql`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from rlcockpit.store.sql import Cursor, Database

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sweeps (
      id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT, method TEXT NOT NULL, config TEXT NOT NULL,
      state TEXT NOT NULL, reason TEXT, seed INTEGER NOT NULL, sampler TEXT NOT NULL,
      base_args TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL,
      updated_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS sweeps_project ON sweeps(project, created_at)",
    """CREATE TABLE IF NOT EXISTS sweep_trials (
      sweep_id TEXT NOT NULL, number INTEGER NOT NULL, run_id TEXT NOT NULL, params TEXT NOT NULL,
      state TEXT NOT NULL, agent_id TEXT, best DOUBLE PRECISION, worst DOUBLE PRECISION,
      latest DOUBLE PRECISION, n_values INTEGER, reason TEXT, exit_code INTEGER,
      created_at DOUBLE PRECISION NOT NULL, heartbeat_at DOUBLE PRECISION, ended_at DOUBLE PRECISION,
      PRIMARY KEY (sweep_id, number))""",
    "CREATE INDEX IF NOT EXISTS sweep_trials_run ON sweep_trials(run_id)",
    """CREATE TABLE IF NOT EXISTS sweep_agents (
      id TEXT PRIMARY KEY, sweep_id TEXT NOT NULL, host TEXT, pid INTEGER, state TEXT NOT NULL,
      started_at DOUBLE PRECISION NOT NULL, heartbeat_at DOUBLE PRECISION NOT NULL, trials INTEGER NOT NULL)""",
)
SWEEP_STATES = ("running", "paused", "finished", "stopped", "cancelled")
_SWEEP_COLS = ("id", "project", "name", "method", "config", "state", "reason", "seed", "sampler", "base_args",
               "created_at", "updated_at")
_TRIAL_COLS = ("sweep_id", "number", "run_id", "params", "state", "agent_id", "best", "worst", "latest",
               "n_values", "reason", "exit_code", "created_at", "heartbeat_at", "ended_at")


def _sweep_row(row: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(_SWEEP_COLS, row))
    d["config"] = json.loads(d["config"])
    d["base_args"] = json.loads(d["base_args"])
    return d


def _trial_row(row: Sequence[Any]) -> dict[str, Any]:
    d = dict(zip(_TRIAL_COLS, row))
    d["params"] = json.loads(d["params"])
    return d


class SweepState:
    """Typed access to the sweep tables of one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.ensure_schema("sweeps", SCHEMA)

    # ---- sweeps -----------------------------------------------------------------------------------
    def create(self, sweep_id: str, *, project: str, name: str | None, method: str, config: dict[str, Any],
               seed: int, sampler: str, base_args: Sequence[str]) -> None:
        now = time.time()
        with self.db.transaction() as cur:
            cur.execute(
                f"INSERT INTO sweeps ({', '.join(_SWEEP_COLS)}) VALUES ({', '.join('?' for _ in _SWEEP_COLS)})",
                (sweep_id, project, name, method, json.dumps(config), "running", None, int(seed), sampler,
                 json.dumps(list(base_args)), now, now))

    def get(self, sweep_id: str, cur: Cursor | None = None) -> dict[str, Any]:
        """A sweep by id (``project/id`` and ``entity/project/id`` as W&B prints them work too) or unique
        id prefix."""
        sweep_id = sweep_id.rsplit("/", 1)[-1]
        q = cur.query if cur is not None else self.db.query
        rows = q(f"SELECT {', '.join(_SWEEP_COLS)} FROM sweeps WHERE id = ?", (sweep_id,))
        if not rows:
            rows = q(f"SELECT {', '.join(_SWEEP_COLS)} FROM sweeps WHERE id LIKE ?",
                     (sweep_id.replace("%", "").replace("_", "") + "%",))
        if not rows:
            raise KeyError(f"no sweep {sweep_id!r} in this store (rlcockpit sweep SWEEP.yaml creates one)")
        if len(rows) > 1:
            raise KeyError(f"sweep id {sweep_id!r} is ambiguous: {', '.join(r[0] for r in rows[:5])}")
        return _sweep_row(rows[0])

    def list(self, project: str | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT {', '.join(_SWEEP_COLS)} FROM sweeps"
        params: tuple = ()
        if project is not None:
            sql, params = sql + " WHERE project = ?", (project,)
        return [_sweep_row(r) for r in self.db.query(sql + " ORDER BY created_at DESC", params)]

    def set_state(self, sweep_id: str, state: str, reason: str | None = None, cur: Cursor | None = None) -> None:
        if state not in SWEEP_STATES:
            raise ValueError(f"sweep state must be one of {', '.join(SWEEP_STATES)}")
        sql = "UPDATE sweeps SET state = ?, reason = ?, updated_at = ? WHERE id = ?"
        if cur is not None:
            cur.execute(sql, (state, reason, time.time(), sweep_id))
            return
        with self.db.transaction(lock=f"sweep:{sweep_id}") as c:
            c.execute(sql, (state, reason, time.time(), sweep_id))

    # ---- trials -----------------------------------------------------------------------------------
    def trials(self, sweep_id: str, cur: Cursor | None = None) -> list[dict[str, Any]]:
        q = cur.query if cur is not None else self.db.query
        rows = q(f"SELECT {', '.join(_TRIAL_COLS)} FROM sweep_trials WHERE sweep_id = ? ORDER BY number",
                 (sweep_id,))
        return [_trial_row(r) for r in rows]

    def trial_of_run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.db.query(f"SELECT {', '.join(_TRIAL_COLS)} FROM sweep_trials WHERE run_id = ?", (run_id,))
        return _trial_row(rows[0]) if rows else None

    def add_trial(self, cur: Cursor, sweep_id: str, number: int, run_id: str, params: dict[str, Any],
                  agent_id: str | None) -> None:
        now = time.time()
        cur.execute(
            "INSERT INTO sweep_trials (sweep_id, number, run_id, params, state, agent_id, created_at, heartbeat_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (sweep_id, number, run_id, json.dumps(params), "running", agent_id, now, now))

    def heartbeat(self, sweep_id: str, number: int, values: dict[str, Any] | None = None) -> None:
        """Keep a running trial alive (and record its metric so far)."""
        sets, params = ["heartbeat_at = ?"], [time.time()]
        for key, val in (values or {}).items():
            sets.append(f"{key} = ?")
            params.append(val)
        with self.db.transaction(lock=f"sweep:{sweep_id}") as cur:
            cur.execute(f"UPDATE sweep_trials SET {', '.join(sets)} WHERE sweep_id = ? AND number = ? "
                        "AND state = 'running'", (*params, sweep_id, number))

    def end_trial(self, sweep_id: str, number: int, *, state: str, best: float | None, worst: float | None,
                  latest: float | None, n_values: int, reason: str | None, exit_code: int | None) -> None:
        with self.db.transaction(lock=f"sweep:{sweep_id}") as cur:
            cur.execute(
                "UPDATE sweep_trials SET state = ?, best = ?, worst = ?, latest = ?, n_values = ?, reason = ?, "
                "exit_code = ?, ended_at = ?, heartbeat_at = ? WHERE sweep_id = ? AND number = ?",
                (state, best, worst, latest, n_values, reason, exit_code, time.time(), time.time(), sweep_id,
                 number))

    def mark_stale(self, cur: Cursor, sweep_id: str, older_than_s: float) -> list[int]:
        """Trials whose agent stopped sending heartbeats (killed machine, SIGKILL) become ``crashed``."""
        limit = time.time() - older_than_s
        rows = cur.query("SELECT number FROM sweep_trials WHERE sweep_id = ? AND state = 'running' "
                         "AND heartbeat_at < ?", (sweep_id, limit))
        for (number,) in rows:
            cur.execute("UPDATE sweep_trials SET state = 'crashed', reason = ?, ended_at = ? "
                        "WHERE sweep_id = ? AND number = ?",
                        (f"agent stopped sending heartbeats for {older_than_s:.0f}s", time.time(), sweep_id,
                         number))
        return [r[0] for r in rows]

    # ---- agents -----------------------------------------------------------------------------------
    def register_agent(self, agent_id: str, sweep_id: str, host: str, pid: int) -> None:
        now = time.time()
        with self.db.transaction() as cur:
            cur.execute("INSERT INTO sweep_agents (id, sweep_id, host, pid, state, started_at, heartbeat_at, trials)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (agent_id, sweep_id, host, pid, "running", now, now, 0))

    def agent_beat(self, agent_id: str, *, state: str | None = None, trials: int | None = None) -> None:
        sets, params = ["heartbeat_at = ?"], [time.time()]
        if state is not None:
            sets.append("state = ?")
            params.append(state)
        if trials is not None:
            sets.append("trials = ?")
            params.append(trials)
        with self.db.transaction() as cur:
            cur.execute(f"UPDATE sweep_agents SET {', '.join(sets)} WHERE id = ?", (*params, agent_id))

    def agents(self, sweep_id: str) -> list[dict[str, Any]]:
        cols = ("id", "sweep_id", "host", "pid", "state", "started_at", "heartbeat_at", "trials")
        rows = self.db.query(f"SELECT {', '.join(cols)} FROM sweep_agents WHERE sweep_id = ? ORDER BY started_at",
                             (sweep_id,))
        return [dict(zip(cols, r)) for r in rows]
