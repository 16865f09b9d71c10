"""Bayesian search (Optuna GP and TPE, through the sweep's own search code) vs random search on a known
3-parameter function, over 10 seeds side by side.

    python bench/bayes_vs_random.py [--seeds 10] [--budget 100] [--json]

The function is Hartmann-3 on [0, 1]^3 (minimum -3.86278), the classic 3-dimensional test of Bayesian
optimisation; a sweep config with three `uniform` parameters and `metric.goal: minimize`. A run "reaches"
the optimum when a trial is within 5% of it (f <= 0.95 * f*). Reported per method: how many seeds reach it
within the budget and the median number of trials it took. Target: bayes reaches it in fewer trials.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

F_STAR = -3.86278
ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
P = 1e-4 * np.array([[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]])
SWEEP = {"program": "hartmann.py", "method": "bayes", "metric": {"name": "f", "goal": "minimize"},
         "parameters": {f"x{i}": {"min": 0.0, "max": 1.0} for i in range(3)}}


def hartmann3(x: np.ndarray) -> float:
    return float(-np.sum(ALPHA * np.exp(-np.sum(A * (x - P) ** 2, axis=1))))


def trials_to_reach(method: str, sampler: str, seed: int, budget: int) -> tuple[int | None, float]:
    from rlcockpit.sweeps.config import parse_sweep
    from rlcockpit.sweeps.search import TrialView, suggest

    cfg = parse_sweep({**SWEEP, "method": method})
    trials: list[TrialView] = []
    t0 = time.perf_counter()
    for n in range(budget):
        p = suggest(cfg, trials, seed=seed, number=n, sampler=sampler)
        y = hartmann3(np.array([p["x0"], p["x1"], p["x2"]]))
        trials.append(TrialView(n, p, "finished", best=y, worst=y, latest=y))
        if y <= 0.95 * F_STAR:
            return n + 1, time.perf_counter() - t0
    return None, time.perf_counter() - t0


def compare(seeds: int = 10, budget: int = 100) -> list[dict[str, Any]]:
    out = []
    for method, sampler in (("random", "auto"), ("bayes", "gp"), ("bayes", "tpe")):
        reached, secs = [], []
        for seed in range(seeds):
            n, s = trials_to_reach(method, sampler, seed, budget)
            reached.append(n)
            secs.append(s / (n or budget))
        ok = [n for n in reached if n is not None]
        out.append({"method": method if method == "random" else f"bayes-{sampler}", "seeds": seeds,
                    "budget": budget, "reached": len(ok),
                    "median_trials": float(np.median([n if n is not None else budget + 1 for n in reached])),
                    "trials_per_seed": reached, "suggest_s_per_trial": round(float(np.mean(secs)), 4)})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--budget", type=int, default=100)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rows = compare(args.seeds, args.budget)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['method']:<10} reached within 5% of f* on {r['reached']}/{r['seeds']} seeds; median "
                  f"{r['median_trials']:.0f} trials (budget {r['budget']}; unreached counted as {r['budget'] + 1}); "
                  f"{r['suggest_s_per_trial'] * 1000:.0f} ms per suggestion; per seed {r['trials_per_seed']}")
    rand, gp = rows[0], rows[1]
    return 0 if gp["median_trials"] < rand["median_trials"] and gp["reached"] >= rand["reached"] else 1


if __name__ == "__main__":
    sys.exit(main())
