"""The sweep controller, as functions over the state tables: register a sweep, hand out the next trial,
decide when the sweep is done, and summarise a trial's metric history.

There is no controller process: each agent calls :func:`next_trial`, which reads the trials, computes
the suggestion outside any lock (a Gaussian-process fit can take a few hundred ms), then inserts the
trial in a short transaction only if no other agent added one meanwhile (optimistic concurrency; it
retries otherwise). A sweep is therefore as resumable as its table: start agents again and it goes on.
"""

from __future__ import annotations

import math
import os
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rlcockpit.sweeps.config import Metric, SweepConfig, parse_sweep
from rlcockpit.sweeps.search import TrialView, choose_sampler, grid_size, suggest
from rlcockpit.sweeps.state import SweepState

STALE_ENV = "RLCOCKPIT_SWEEP_STALE_S"
STALE_S = 120.0  # a running trial whose agent has been silent this long is marked crashed
MAX_CLAIM_RETRIES = 20


def stale_after_s() -> float:
    raw = os.environ.get(STALE_ENV)
    return float(raw) if raw else STALE_S


@dataclass(frozen=True)
class Claim:
    """A trial handed to an agent."""

    sweep_id: str
    number: int
    run_id: str
    params: dict[str, Any]


def create_sweep(state: SweepState, cfg: SweepConfig, *, project: str, seed: int | None = None,
                 sampler: str = "auto", base_args: Sequence[str] = ()) -> str:
    """Register a validated sweep; returns its id."""
    sweep_id = uuid.uuid4().hex[:8]
    choose_sampler(cfg, sampler)  # validates the name
    seed = random.SystemRandom().randrange(2**31) if seed is None else int(seed)
    if not 0 <= seed < 2**31:
        raise ValueError(f"seed must be in [0, 2**31), got {seed}")
    state.create(sweep_id, project=project, name=cfg.name, method=cfg.method, config=cfg.raw, seed=seed,
                 sampler=sampler, base_args=list(base_args))
    return sweep_id


def views(trials: Sequence[dict[str, Any]]) -> list[TrialView]:
    return [TrialView(t["number"], t["params"], t["state"], t["best"], t["worst"], t["latest"]) for t in trials]


def done_reason(cfg: SweepConfig, trials: Sequence[dict[str, Any]]) -> str | None:
    """Why no new trial may start (``run_cap`` reached, ``metric.target`` reached), else None."""
    if cfg.run_cap is not None and len(trials) >= cfg.run_cap:
        return f"run_cap {cfg.run_cap} reached"
    metric = cfg.metric
    if metric is not None and metric.target is not None:
        for t in trials:
            if metric.reached(t["best"]):
                return f"metric.target {metric.target:g} reached by trial {t['number']} ({metric.name} = {t['best']:g})"
    return None


def next_trial(state: SweepState, sweep_id: str, agent_id: str | None) -> Claim | str:
    """The next trial for an agent, or a string saying why there is none (``paused`` means: wait)."""
    for _ in range(MAX_CLAIM_RETRIES):
        sweep = state.get(sweep_id)
        sweep_id = sweep["id"]
        if sweep["state"] == "paused":
            return "paused"
        if sweep["state"] != "running":
            return f"sweep {sweep['state']}" + (f": {sweep['reason']}" if sweep["reason"] else "")
        cfg = parse_sweep(sweep["config"])
        trials = state.trials(sweep_id)
        reason = done_reason(cfg, trials)
        number = len(trials)
        params = None if reason else suggest(cfg, views(trials), sweep["seed"], number, sweep["sampler"])
        if params is None and reason is None:
            reason = f"grid exhausted ({grid_size(cfg)} points)"
        with state.db.transaction(lock=f"sweep:{sweep_id}") as cur:
            state.mark_stale(cur, sweep_id, stale_after_s())
            row = cur.one("SELECT state, (SELECT COUNT(*) FROM sweep_trials WHERE sweep_id = ?) FROM sweeps "
                          "WHERE id = ?", (sweep_id, sweep_id))
            if row is None or row[0] != "running" or row[1] != number:
                continue  # the sweep changed under us: decide again
            if reason is not None:
                state.set_state(sweep_id, "finished", reason, cur=cur)
                return f"sweep finished: {reason}"
            run_id = uuid.uuid4().hex[:8]
            state.add_trial(cur, sweep_id, number, run_id, params, agent_id)
            return Claim(sweep_id, number, run_id, params)
        time.sleep(0.05)
    return "busy: other agents kept adding trials; try again"


def summarize(values: Sequence[float], metric: Metric) -> dict[str, Any]:
    """``best``/``worst``/``latest`` of a metric history (finite values only), as the trial row keeps them."""
    clean = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not clean:
        return {"best": None, "worst": None, "latest": None, "n_values": 0}
    hi, lo = max(clean), min(clean)
    best, worst = (hi, lo) if metric.maximize else (lo, hi)
    return {"best": best, "worst": worst, "latest": clean[-1], "n_values": len(clean)}


def best_trial(cfg: SweepConfig, trials: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    metric = cfg.metric
    if metric is None:
        return None
    scored = [t for t in trials if t["state"] == "finished" and t["best"] is not None]
    if not scored:
        return None
    return max(scored, key=lambda t: t["best"] if metric.maximize else -t["best"])
