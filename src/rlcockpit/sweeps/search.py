"""The next trial's parameters: grid (duplicates removed), random, and Bayesian search through Optuna.

Every suggestion is a pure function of the sweep's seed, the trial number and the trials so far, so a
sweep is reproducible and resumes after any crash: nothing but the trial table is state. Bayesian search
rebuilds an in-memory Optuna study from that table for each suggestion (TPE; a Gaussian process where it
fits: a few numeric dimensions), with failed trials imputed as W&B does (``metric.impute``, default the
worst value seen) and running trials passed as pending so parallel agents spread out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlcockpit.sweeps.config import Metric, SweepConfig
from rlcockpit.sweeps.params import Parameter

TERMINAL = ("finished", "failed", "crashed", "stopped", "killed")
SAMPLERS = ("auto", "tpe", "gp")
GP_MAX_DIMS = 6  # a GP's acquisition search and kernel fit stay fast and well-posed in a few dimensions


@dataclass
class TrialView:
    """What search needs to know about a trial."""

    number: int
    params: dict[str, Any]  # nested, as the program receives them
    state: str  # running | finished | failed | crashed | stopped | killed
    best: float | None = None  # the metric's best value over the trial's history (goal-wise)
    worst: float | None = None  # ... and its worst
    latest: float | None = None  # ... and its last value


def get_nested(d: Mapping[str, Any], path: Sequence[str]) -> Any:
    cur: Any = d
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            raise KeyError(".".join(path))
        cur = cur[part]
    return cur


def set_nested(d: dict[str, Any], path: Sequence[str], value: Any) -> None:
    cur = d
    for part in path[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[path[-1]] = value


def build_params(parameters: Sequence[Parameter], values: Mapping[str, Any]) -> dict[str, Any]:
    """Nested params from ``{Parameter.key: value}`` (constants filled in)."""
    out: dict[str, Any] = {}
    for p in parameters:
        set_nested(out, p.path, values[p.key] if p.searchable else p.spec["value"])
    return out


# ---- grid -------------------------------------------------------------------------------------------

def _value_key(value: Any) -> str:
    """A canonical text for dedup (W&B hashes YAML; ``3e6`` and ``3000000`` are one point)."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, Mapping):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v
    return json.dumps(norm(value), sort_keys=True, default=str) + ("#b" if isinstance(value, bool) else "")


def grid_size(cfg: SweepConfig) -> int:
    n = 1
    for p in cfg.parameters:
        n *= len({_value_key(v) for v in p.grid_values()})
    return n


def suggest_grid(cfg: SweepConfig, trials: Sequence[TrialView]) -> dict[str, Any] | None:
    """The first grid point (in W&B's order: parameters sorted by name, the last varying fastest) that no
    trial has taken, in any state; ``None`` when the grid is exhausted."""
    params = cfg.parameters
    axes = []
    for p in params:
        seen_vals: dict[str, Any] = {}
        for v in p.grid_values():
            seen_vals.setdefault(_value_key(v), v)
        axes.append(list(seen_vals.items()))
    taken = set()
    for t in trials:
        try:
            taken.add(tuple(_value_key(get_nested(t.params, p.path)) for p in params))
        except KeyError:
            continue
    import itertools

    for combo in itertools.product(*axes):
        keys = tuple(k for k, _ in combo)
        if keys not in taken:
            return build_params(params, {p.key: v for p, (_, v) in zip(params, combo)})
    return None


# ---- random -----------------------------------------------------------------------------------------

def suggest_random(cfg: SweepConfig, seed: int, number: int) -> dict[str, Any]:
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(number)])
    return build_params(cfg.parameters, {p.key: p.sample(rng) for p in cfg.searchable})


# ---- bayes ------------------------------------------------------------------------------------------

def objective_values(metric: Metric, trials: Sequence[TrialView]) -> dict[int, float | None]:
    """Each trial's value for the optimiser: the best value of finished trials, imputed for failed,
    crashed and stopped ones (and for running ones with ``impute_while_running``), None = pending."""
    terminal_worst = [t.worst for t in trials if t.state in TERMINAL and _finite(t.worst)]
    if terminal_worst:
        worst = min(terminal_worst) if metric.maximize else max(terminal_worst)
    else:
        worst = 0.0  # W&B's value when nothing has been measured yet

    def impute(t: TrialView, how: str) -> float:
        if how == "best" and _finite(t.best):
            return float(t.best)
        if how == "latest" and _finite(t.latest):
            return float(t.latest)
        return worst if how == "worst" else 0.0

    out: dict[int, float | None] = {}
    for t in trials:
        if t.state == "finished":
            out[t.number] = float(t.best) if _finite(t.best) else impute(t, metric.impute)
        elif t.state in TERMINAL:
            out[t.number] = impute(t, metric.impute)
        elif metric.impute_while_running != "false":
            out[t.number] = impute(t, metric.impute_while_running)
        else:
            out[t.number] = None
    return out


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _distribution(p: Parameter) -> Any:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if p.categorical:
        return CategoricalDistribution(list(range(len(p.spec["values"]))))
    if p.kind == "int_uniform":
        return IntDistribution(p.spec["min"], p.spec["max"])
    return FloatDistribution(0.0, 1.0)  # the quantile; see params.py


def _to_internal(p: Parameter, value: Any) -> Any:
    if p.categorical:
        return p.index_of(value)
    if p.kind == "int_uniform":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return None
        return int(min(max(round(value), p.spec["min"]), p.spec["max"]))
    return p.cdf(value)


def _from_internal(p: Parameter, x: Any) -> Any:
    if p.categorical:
        return p.spec["values"][int(x)]
    if p.kind == "int_uniform":
        return int(x)
    return p.ppf(float(x))


def choose_sampler(cfg: SweepConfig, sampler: str = "auto") -> str:
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if sampler != "auto":
        return sampler
    dims = cfg.searchable
    numeric = all(not p.categorical for p in dims)
    return "gp" if numeric and len(dims) <= GP_MAX_DIMS else "tpe"


def suggest_bayes(cfg: SweepConfig, trials: Sequence[TrialView], seed: int, number: int,
                  sampler: str = "auto") -> dict[str, Any]:
    try:
        import optuna
        from optuna.trial import TrialState, create_trial
    except ImportError:
        raise ImportError("method: bayes needs optuna: pip install 'rlcockpit[sweeps]'") from None

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    assert cfg.metric is not None
    dims = cfg.searchable
    dists = {p.key: _distribution(p) for p in dims}
    kind = choose_sampler(cfg, sampler)
    trial_seed = (int(seed) * 1_000_003 + int(number)) & 0x7FFFFFFF
    startup = min(10, max(4, 2 * len(dims)))
    if kind == "gp":
        smp: Any = optuna.samplers.GPSampler(seed=trial_seed, n_startup_trials=startup)
    else:
        smp = optuna.samplers.TPESampler(seed=trial_seed, n_startup_trials=startup, multivariate=True,
                                         constant_liar=True)
    study = optuna.create_study(direction="maximize" if cfg.metric.maximize else "minimize", sampler=smp)
    values = objective_values(cfg.metric, trials)
    done = [v for v in values.values() if v is not None]
    liar = (min(done) if cfg.metric.maximize else max(done)) if done else None
    for t in trials:
        internal = {}
        for p in dims:
            try:
                x = _to_internal(p, get_nested(t.params, p.path))
            except KeyError:
                x = None
            if x is not None:
                internal[p.key] = x
        if not internal:
            continue
        value = values.get(t.number)
        if value is None and kind == "gp" and liar is not None:
            value = liar  # the GP sampler ignores pending trials: a constant liar keeps agents apart
        used = {k: dists[k] for k in internal}
        if value is None:
            study.add_trial(create_trial(params=internal, distributions=used, state=TrialState.RUNNING))
        else:
            study.add_trial(create_trial(params=internal, distributions=used, value=float(value)))
    trial = study.ask(dists)
    return build_params(cfg.parameters, {p.key: _from_internal(p, trial.params[p.key]) for p in dims})


def suggest(cfg: SweepConfig, trials: Sequence[TrialView], seed: int, number: int,
            sampler: str = "auto") -> dict[str, Any] | None:
    """The params of trial ``number`` (None: a grid with nothing left)."""
    if cfg.method == "grid":
        return suggest_grid(cfg, trials)
    if cfg.method == "random":
        return suggest_random(cfg, seed, number)
    return suggest_bayes(cfg, trials, seed, number, sampler)
