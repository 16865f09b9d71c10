"""Two derived run panels: the step-phase timeline and the train/rollout mismatch panel.

**Step phases** come from verl's ``timing_s/<stage>`` keys (rlcockpit's trainer logs the same names).
Only top-level stages are summed — verl also logs nested timers (``timing_s/generate_sequences``
inside ``gen``, ``timing_s/agent_loop/...``), which would count twice; those are listed as
``unassigned``. ``idle`` is what the step's wall time (``timing_s/step``) leaves after the phases.
Shares are taken of ``max(step, sum of phases)`` because some trainers time validation outside the
step timer, so shares never exceed 100 %.

**Mismatch** keys are verl's ``training/rollout_probs_diff_*`` /
``training/rollout_actor_probs_pearson_corr`` (rollout engine vs. actor probabilities) and the
``rollout_corr/*`` diagnostics of verl's Rollout Correction. Thresholds are the ones verl documents in
``docs/algo/rollout_corr.md`` (its "Conditional Alerting" and "Troubleshooting" sections); the
``rollout_probs_diff`` bounds are rlcockpit's metric guide (verl documents none), labelled as such.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlcockpit.metrics.guide import threshold
from rlcockpit.metrics.headline import HEADLINE_KEYS
from rlcockpit.metrics.phases import PHASES, V1_MARKER
from rlcockpit.store.base import Store
from rlcockpit.store.downsample import minmax_downsample

# verl's V1 trainer: its timing_s/gen is a wait for samples (see metrics.phases.V1_MARKER)
V1_PHASES = tuple((name, ("gen", *names) if name == "sample_wait" else tuple(n for n in names if n != "gen"))
                  for name, names in PHASES)
# verl times the profiler's start and stop outside timing_s/step (0 on steps not profiled): known, no phase
OUTSIDE_STEP = ("timing_s/start_profile", "timing_s/stop_profile")
STEP_KEYS = HEADLINE_KEYS["step_time"]
THROUGHPUT_KEYS = ("perf/throughput",)

VERL_DOC = "verl"  # verl's docs/algo/rollout_corr.md (the UI names the source in the user's language)
GUIDE_DOC = "guide"  # rlcockpit's metric guide: verl documents no bound for this key


def _guide_band(key: str, source: str, **extra: Any) -> dict[str, Any]:
    """The panel's band for ``key``: the sides of the metric guide's ``healthy`` range (None = unbounded), the one
    home of these numbers (the guide took verl's documented bounds where verl documents them)."""
    def side(name: str) -> float | None:
        try:
            return threshold(key, name)
        except KeyError:
            return None
    return {"low": side("healthy_low"), "high": side("healthy_high"), **extra, "source": source}


# key -> (low, high, source, note); None = unbounded on that side. "abs" keys compare |value|. Bounds the guide
# holds are read from it; the two keys below without a guide range keep verl's documented bound here.
MISMATCH_THRESHOLDS: dict[str, dict[str, Any]] = {
    "rollout_corr/rollout_is_mean": _guide_band("rollout_corr/rollout_is_mean", VERL_DOC, ideal=1.0),
    "rollout_corr/rollout_is_eff_sample_size": _guide_band("rollout_corr/rollout_is_eff_sample_size", VERL_DOC),
    "rollout_corr/rollout_is_veto_fraction": {"low": None, "high": 0.1, "source": VERL_DOC},
    "rollout_corr/rollout_is_std": _guide_band("rollout_corr/rollout_is_std", VERL_DOC),
    "rollout_corr/kl": _guide_band("rollout_corr/kl", VERL_DOC, abs=True),
    "rollout_corr/chi2_token": _guide_band("rollout_corr/chi2_token", VERL_DOC),
    "rollout_corr/chi2_seq": {"low": None, "high": 1.0, "source": VERL_DOC},
    "rollout_corr/ppl_ratio": _guide_band("rollout_corr/ppl_ratio", GUIDE_DOC, ideal=1.0),
    "training/rollout_probs_diff_mean": _guide_band("training/rollout_probs_diff_mean", GUIDE_DOC),
}
MISMATCH_PREFIXES = ("training/rollout_probs_diff_", "training/rollout_actor_probs_pearson_corr", "rollout_corr/")


def _joined(store: Store, rid: str, key: str, grid: np.ndarray) -> np.ndarray:
    """``key``'s last value per step at each step of ``grid`` (NaN where not logged)."""
    steps, vals, _ts = store.series(rid, key)
    out = np.full(len(grid), np.nan)
    if len(steps):
        rev_s, rev_i = np.unique(steps[::-1], return_index=True)
        pos = np.searchsorted(rev_s, grid)
        pos = np.clip(pos, 0, len(rev_s) - 1)
        hit = rev_s[pos] == grid
        out[hit] = vals[::-1][rev_i][pos[hit]]
    return out


def _bucket_mean(grid: np.ndarray, cols: dict[str, np.ndarray], max_points: int) -> tuple[np.ndarray, dict]:
    if len(grid) <= max_points:
        return grid, cols
    edges = np.linspace(0, len(grid), max_points + 1).astype(int)
    starts = edges[:-1][np.diff(edges) > 0]
    out = {}
    for name, col in cols.items():
        filled = np.nan_to_num(col, nan=0.0)
        counts = np.add.reduceat((~np.isnan(col)).astype(float), starts)
        with np.errstate(all="ignore"):
            out[name] = np.where(counts > 0, np.add.reduceat(filled, starts) / np.maximum(counts, 1), np.nan)
    return grid[starts], out


def _series(store: Store, rid: str, key: str, max_points: int) -> dict[str, Any]:
    s, v, _t = store.series(rid, key, max_points=max_points)
    return {"steps": s.tolist(), "values": [float(x) if np.isfinite(x) else None for x in v]}


def _lst(a: np.ndarray) -> list[float | None]:
    return [float(x) if np.isfinite(x) else None for x in a]


def timeline(store: Store, rid: str, max_points: int = 600) -> dict[str, Any]:
    """Per-step seconds and shares of each phase, idle time, MFU and throughput series."""
    keys = store.keys(rid)
    present = {k[len("timing_s/"):] for k in keys if k.startswith("timing_s/")}
    step_key = next((k for k in STEP_KEYS if k in keys), None)
    table = V1_PHASES if any(k.startswith(V1_MARKER) for k in keys) else PHASES
    phases = [(name, [f"timing_s/{t}" for t in names if t in present]) for name, names in table]
    phases = [(n, ks) for n, ks in phases if ks]
    assigned = {k for _n, ks in phases for k in ks} | {"timing_s/step", *OUTSIDE_STEP}
    unassigned = sorted(f"timing_s/{t}" for t in present if f"timing_s/{t}" not in assigned)
    mfu = {k: _series(store, rid, k, max_points) for k in keys if k.startswith("perf/mfu/")}
    throughput = {k: _series(store, rid, k, max_points) for k in THROUGHPUT_KEYS if k in keys}
    if not phases:
        return {"available": False, "phases": [], "unassigned": unassigned, "mfu": mfu, "throughput": throughput}
    grid_src = step_key or phases[0][1][0]
    grid = np.unique(store.series(rid, grid_src)[0])
    cols: dict[str, np.ndarray] = {}
    for name, ks in phases:
        stack = np.vstack([_joined(store, rid, k, grid) for k in ks])
        with np.errstate(all="ignore"):
            col = np.nansum(stack, axis=0)
        col[np.all(np.isnan(stack), axis=0)] = np.nan
        cols[name] = col
    phase_sum = np.nansum(np.vstack(list(cols.values())), axis=0)
    total = _joined(store, rid, step_key, grid) if step_key else phase_sum
    cols["idle"] = np.where(np.isfinite(total), np.maximum(total - phase_sum, 0.0), np.nan)
    cols["_total"] = np.fmax(total, phase_sum)
    grid, cols = _bucket_mean(grid, cols, max_points)
    denom = np.where(cols["_total"] > 0, cols["_total"], np.nan)
    names = [n for n, _ks in phases] + ["idle"]
    # the mean over every timed step, a phase absent from a step counting 0 there: validation timed on the
    # last step only is a small share of the run, not its share of that one step (the shares sum to 100 %)
    timed = np.isfinite(denom)
    mean_share: dict[str, float | None] = {}
    with np.errstate(all="ignore"):
        for n in names:
            share = np.nan_to_num(cols[n][timed], nan=0.0) / denom[timed]
            mean_share[n] = float(share.mean()) if share.size and np.isfinite(cols[n][timed]).any() else None
    return {
        "available": True, "step_key": step_key, "steps": grid.tolist(), "total": _lst(cols["_total"]),
        "phases": [{"name": n, "keys": dict(phases).get(n, []), "seconds": _lst(cols[n]),
                    "share": _lst(cols[n] / denom)} for n in names],
        "mean_share": mean_share, "unassigned": unassigned, "mfu": mfu, "throughput": throughput,
    }


def _status(value: float | None, t: dict[str, Any]) -> str:
    if value is None or not np.isfinite(value):
        return "unknown"
    v = abs(value) if t.get("abs") else value
    lo, hi = t.get("low"), t.get("high")
    if t.get("abs"):
        lo = None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        return "out"
    return "ok" if lo is not None or hi is not None else "info"


def mismatch(store: Store, rid: str, max_points: int = 800) -> dict[str, Any]:
    """Each mismatch metric present in the run: series, latest value, verl's bound and its verdict."""
    keys = [k for k in store.keys(rid) if k.startswith(MISMATCH_PREFIXES)]
    out = []
    for key in keys:
        steps, vals, _ts = store.series(rid, key)
        t = MISMATCH_THRESHOLDS.get(key, {})
        finite = vals[np.isfinite(vals)]
        latest = float(finite[-1]) if len(finite) else None
        if t:
            check = np.abs(finite) if t.get("abs") else finite
            lo = None if t.get("abs") else t.get("low")
            hi = t.get("high")
            bad = np.zeros(len(check), bool)
            if lo is not None:
                bad |= check < lo
            if hi is not None:
                bad |= check > hi
            n_out = int(bad.sum())
        else:
            n_out = 0
        ds, dv, _dt = minmax_downsample(steps, vals, _ts, max_points)
        out.append({"key": key, "steps": ds.tolist(), "values": _lst(dv), "latest": latest,
                    "threshold": t or None, "status": _status(latest, t) if t else "info",
                    "steps_out_of_bounds": n_out, "points": int(len(steps))})
    return {"available": bool(out), "metrics": out,
            "documented": sorted(MISMATCH_THRESHOLDS), "source": VERL_DOC}
