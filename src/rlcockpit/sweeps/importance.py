"""Which hyperparameters matter: W&B's parameter-importance panel, plus importances that can be trusted.

For each config key that varies across the runs (config flattened to dotted keys; booleans as 0/1,
strings and lists as categories, one-hot encoded; missing values kept as missing), we report:

* ``importance`` — a random forest's impurity importance (scikit-learn), what W&B shows. It favours keys
  with many distinct values (a continuous ``lr`` beats a 3-valued ``kl_coef`` even when both matter
  equally), so it is not used for the ranking;
* ``permutation`` — Breiman's out-of-bag permutation importance of the same forest, grouped per key (all
  one-hot columns of a category permuted together): the share of the metric's variance the forest loses
  when the key is scrambled on runs it did not train on. This is the ranking;
* ``correlation`` — Pearson correlation with the metric (numeric keys; per level for categories), as W&B;
* ``ped_anova`` — Optuna's PED-ANOVA importance for reaching the top 10% of runs (goal-aware), as shares
  summing to 1 over the keys it was computed for.

Keys that are identical across all runs (a sweep's ``lr`` and the trainer's ``actor.optim.lr``) are one
row with aliases; string keys that differ in every run (names, paths) are skipped and listed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlcockpit.tracking.runinfo import flatten_config

MAX_LEVELS = 20  # more levels than this: the rarest are pooled as "(other)"
N_TREES = 64
TREE_ROWS = 500  # each tree's bootstrap sample is capped at this many runs (1,000 runs fit in < 1 s)
PED_RUNS, PED_KEYS = 200, 10  # PED-ANOVA on a seeded sample of runs, for the best-ranked keys only
MIN_RUNS = 3


@dataclass
class Column:
    key: str
    kind: str  # numeric | categorical
    values: np.ndarray  # float (NaN = missing) or object codes
    levels: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


def _encode(key: str, raw: Sequence[Any]) -> Column | str:
    """A column, or the reason the key is left out."""
    present = [v for v in raw if v is not None]
    if not present:
        return "never set"
    if all(isinstance(v, (bool, int, float, np.integer, np.floating)) for v in present):
        vals = np.array([np.nan if v is None else float(v) for v in raw], dtype=float)
        finite = vals[np.isfinite(vals)]
        if len(np.unique(finite)) < 2:
            return "constant"
        return Column(key, "numeric", vals)
    text = [None if v is None else (v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
            for v in raw]
    distinct = {t for t in text if t is not None}
    if len(distinct) < 2:
        return "constant"
    if len(distinct) == len(text) and len(text) > MIN_RUNS:
        return "different in every run (a name or path, not a hyperparameter)"
    counts: dict[str, int] = {}
    for t in text:
        if t is not None:
            counts[t] = counts.get(t, 0) + 1
    keep = sorted(counts, key=lambda t: (-counts[t], t))[:MAX_LEVELS]
    coded = np.array(["(missing)" if t is None else (t if t in keep else "(other)") for t in text], dtype=object)
    return Column(key, "categorical", coded, sorted(set(coded.tolist())))


def _signature(col: Column) -> tuple:
    if col.kind == "numeric":
        return ("n", tuple(np.nan_to_num(col.values, nan=np.inf).tolist()))
    first: dict[str, int] = {}
    return ("c", tuple(first.setdefault(v, len(first)) for v in col.values.tolist()))


def build_columns(configs: Sequence[Mapping[str, Any]]) -> tuple[list[Column], list[dict[str, str]], int]:
    """Encoded varying keys (identical ones merged), skipped keys with why, and the number of constant keys."""
    flat = [flatten_config(c) for c in configs]
    keys = sorted({k for f in flat for k in f})
    cols: list[Column] = []
    skipped: list[dict[str, str]] = []
    constant = 0
    for key in keys:
        enc = _encode(key, [f.get(key) for f in flat])
        if isinstance(enc, str):
            if enc in ("constant", "never set"):
                constant += 1
            else:
                skipped.append({"key": key, "why": enc})
            continue
        cols.append(enc)
    merged: dict[tuple, Column] = {}
    for col in sorted(cols, key=lambda c: (len(c.key), c.key)):  # the shortest name leads its aliases
        sig = _signature(col)
        if sig in merged:
            merged[sig].aliases.append(col.key)
        else:
            merged[sig] = col
    return list(merged.values()), skipped, constant


def _design(cols: Sequence[Column]) -> tuple[np.ndarray, list[list[int]]]:
    parts, groups, at = [], [], 0
    for col in cols:
        if col.kind == "numeric":
            parts.append(col.values[:, None])
            groups.append([at])
            at += 1
        else:
            onehot = np.stack([(col.values == lv).astype(float) for lv in col.levels], axis=1)
            parts.append(onehot)
            groups.append(list(range(at, at + onehot.shape[1])))
            at += onehot.shape[1]
    return np.concatenate(parts, axis=1), groups


def _oob_permutation(model: Any, X: np.ndarray, y: np.ndarray, groups: Sequence[Sequence[int]],
                     seed: int) -> np.ndarray:
    """Mean increase of out-of-bag squared error per key group when that group is permuted."""
    rng = np.random.default_rng(seed)
    inc = np.zeros(len(groups))
    used = 0
    X32 = X.astype(np.float32)
    for tree, inbag in zip(model.estimators_, model.estimators_samples_):
        oob = np.ones(len(y), bool)
        oob[inbag] = False
        if oob.sum() < 2:
            continue
        Xo, yo = X32[oob], y[oob]
        predict = tree.tree_.predict  # the fitted tree itself: no input validation per call (20x faster)
        base = np.mean((predict(Xo)[:, 0] - yo) ** 2)
        for g, cols in enumerate(groups):
            Xp = Xo.copy()
            Xp[:, cols] = Xo[rng.permutation(len(Xo))][:, cols]
            inc[g] += np.mean((predict(Xp)[:, 0] - yo) ** 2) - base
        used += 1
    return inc / max(used, 1)


def _ped_anova(cols: Sequence[Column], y: np.ndarray, maximize: bool, seed: int = 0) -> dict[str, float] | None:
    """Optuna's PED-ANOVA on the runs that have every key (None when it cannot be computed).

    Optuna copies every trial it is given, so building a study of 1,000 runs x 20 keys costs seconds: a
    seeded sample of :data:`PED_RUNS` runs keeps the top-10% comparison meaningful at a fraction of that."""
    if len(y) > PED_RUNS:
        keep = np.sort(np.random.default_rng(seed).choice(len(y), PED_RUNS, replace=False))
        y = y[keep]
        cols = [Column(c.key, c.kind, c.values[keep], c.levels) for c in cols]
    try:
        import optuna
        from optuna.distributions import CategoricalDistribution, FloatDistribution
        from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances
        from optuna.trial import create_trial
    except ImportError:
        return None
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    dists: dict[str, Any] = {}
    for col in cols:
        if col.kind == "numeric":
            finite = col.values[np.isfinite(col.values)]
            uniq = np.unique(finite)
            if len(uniq) <= 8:  # a few values (a grid, a flag): as categories, or the Parzen estimate smears them
                dists[col.key] = CategoricalDistribution([float(u) for u in uniq])
            else:
                dists[col.key] = FloatDistribution(float(finite.min()), float(finite.max()))
        else:
            dists[col.key] = CategoricalDistribution(col.levels)
    study = optuna.create_study(direction="maximize" if maximize else "minimize")
    added = 0
    for i in range(len(y)):
        params = {c.key: (float(c.values[i]) if c.kind == "numeric" else c.values[i]) for c in cols}
        if any(isinstance(v, float) and not math.isfinite(v) for v in params.values()):
            continue
        study.add_trial(create_trial(params=params, distributions=dists, value=float(y[i])))
        added += 1
    if added < 10:
        return None
    try:
        return dict(get_param_importances(study, evaluator=PedAnovaImportanceEvaluator()))  # shares summing to 1
    except Exception:  # noqa: BLE001 - an optional column; the forest's numbers stand without it
        return None


def compute_importance(configs: Sequence[Mapping[str, Any]], values: Sequence[float], *, goal: str = "max",
                       seed: int = 0, ped_anova: bool = True) -> dict[str, Any]:
    """Importance of each varying config key for the metric ``values`` (one per config)."""
    try:
        from sklearn.ensemble import RandomForestRegressor
    except ImportError:
        raise ImportError("importance needs scikit-learn: pip install 'rlcockpit[sweeps]'") from None

    if goal not in ("max", "min"):
        raise ValueError(f"goal must be max or min, got {goal!r}")
    y = np.asarray(values, dtype=float)
    if len(y) < MIN_RUNS:
        raise ValueError(f"importance needs at least {MIN_RUNS} runs with the metric, got {len(y)}")
    cols, skipped, constant = build_columns(configs)
    result: dict[str, Any] = {"n_used": int(len(y)), "skipped": skipped, "constant_keys": constant,
                              "parameters": [], "model": None}
    if not cols or float(np.var(y)) == 0.0:
        result["note"] = "no config key varies" if not cols else "the metric is the same in every run"
        return result
    X, groups = _design(cols)
    model = RandomForestRegressor(n_estimators=N_TREES, min_samples_leaf=1, max_features=1.0, bootstrap=True,
                                  max_samples=None if len(y) <= TREE_ROWS else TREE_ROWS / len(y),
                                  oob_score=len(y) >= 8, random_state=seed, n_jobs=1).fit(X, y)
    impurity = np.array([model.feature_importances_[g].sum() for g in groups])
    perm = _oob_permutation(model, X, y, groups, seed) / float(np.var(y))
    ranked = [cols[i] for i in np.argsort(-perm)[:PED_KEYS]]
    ped = _ped_anova(ranked, y, goal == "max", seed) if ped_anova else None
    result["model"] = {"kind": "random_forest", "n_estimators": N_TREES,
                       "r2_oob": float(model.oob_score_) if len(y) >= 8 else None}
    rows = []
    for col, imp, p in zip(cols, impurity, perm):
        row: dict[str, Any] = {"key": col.key, "aliases": col.aliases, "kind": col.kind,
                               "importance": float(imp), "permutation": float(p),
                               "ped_anova": None if ped is None or col.key not in ped else float(ped[col.key])}
        row.update(_correlations(col, y, goal))
        rows.append(row)
    rows.sort(key=lambda r: (-r["permutation"], -r["importance"], r["key"]))
    result["parameters"] = rows
    return result


def _correlations(col: Column, y: np.ndarray, goal: str) -> dict[str, Any]:
    if col.kind == "numeric":
        m = np.isfinite(col.values)
        r = _pearson(col.values[m], y[m])
        direction = None
        if r is not None and abs(r) >= 0.1:  # a weaker linear trend says nothing about the sign
            direction = "higher is better" if (r > 0) == (goal == "max") else "lower is better"
        return {"correlation": r, "n_values": int(m.sum()), "levels": None, "direction": direction}
    levels = []
    for lv in col.levels:
        ind = (col.values == lv).astype(float)
        levels.append({"value": lv, "n": int(ind.sum()), "mean": float(y[ind == 1].mean()),
                       "correlation": _pearson(ind, y)})
    best = (max if goal == "max" else min)(levels, key=lambda lv: lv["mean"])
    return {"correlation": None, "n_values": int(len(y)), "levels": levels, "direction": f"best: {best['value']}"}


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def metric_value(run: Mapping[str, Any], metric: str, store: Any = None) -> float | None:
    """The run's value of ``metric`` (or of the key the metric guide says means the same): its summary
    (the last logged value), else the last point stored."""
    from rlcockpit.sweeps.metric_key import resolve_key

    summary = run.get("summary") or {}
    key = resolve_key(metric, [k for k, v in summary.items() if isinstance(v, (int, float))])
    if key is not None and not isinstance(summary[key], bool):
        return float(summary[key])
    if store is not None:
        try:
            key = resolve_key(metric, store.keys(run["id"]))
            vals = store.series(run["id"], key)[1] if key else []
        except KeyError:
            return None
        return float(vals[-1]) if len(vals) else None
    return None


def importance_goal(metric: str, goal: str | None = None,
                    sweep_metric: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """``("max" | "min", why)``: which way is better for ``metric``, the one rule the CLI and the sweep page share.

    An explicit ``goal`` wins; else the sweep's ``metric.goal`` when ``metric`` is the sweep's metric (the same
    key or, through the metric guide, the same canonical name); else the guide's direction for the metric
    (``higher`` / ``lower``); else ``max``. ``why`` says which of these decided, so reports can show it."""
    from rlcockpit.metrics.guide import lookup
    from rlcockpit.sweeps.metric_key import resolve_key

    if goal is not None:
        if goal not in ("max", "min"):
            raise ValueError(f"goal must be max or min, got {goal!r}")
        return goal, "given"
    if sweep_metric and sweep_metric.get("name") and resolve_key(metric, [sweep_metric["name"]]) is not None:
        return ("max" if sweep_metric.get("goal") == "maximize" else "min"), "the sweep's metric.goal"
    info = lookup(metric)
    if info is not None and info.direction in ("higher", "lower"):
        return ("max" if info.direction == "higher" else "min"), "the metric guide"
    return "max", "default (give --goal)"


def project_importance(store: Any, project: str, metric: str, *, sweep: str | None = None,
                       goal: str | None = None, sweep_metric: Mapping[str, Any] | None = None,
                       seed: int = 0) -> dict[str, Any]:
    """Importance over the runs of ``project`` (only trials of ``sweep`` when given); the goal as
    :func:`importance_goal` decides from ``goal`` and the sweep's ``sweep_metric`` (``{"name", "goal"}``)."""
    goal, goal_source = importance_goal(metric, goal, sweep_metric)
    runs = store.list_runs(project)
    if sweep is not None:
        runs = [r for r in runs if r.get("group") == sweep]
    if not runs:
        where = f"sweep {sweep!r} of project {project!r}" if sweep else f"project {project!r}"
        raise KeyError(f"no runs in {where}")
    configs, values, missing, nonfinite = [], [], 0, 0
    for run in runs:
        v = metric_value(run, metric, store)
        if v is None:
            missing += 1
        elif not math.isfinite(v):
            nonfinite += 1
        else:
            configs.append(run.get("config") or {})
            values.append(v)
    if len(values) < MIN_RUNS:
        raise ValueError(f"importance needs at least {MIN_RUNS} runs with {metric!r}; {len(values)} of "
                         f"{len(runs)} runs have it ({missing} never logged it, {nonfinite} ended non-finite)")
    result = compute_importance(configs, values, goal=goal, seed=seed)
    result.update({"project": project, "sweep": sweep, "metric": metric, "goal": goal, "goal_source": goal_source,
                   "n_runs": len(runs),
                   "excluded_missing_metric": missing, "excluded_nonfinite": nonfinite})
    return result
