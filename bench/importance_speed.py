"""Hyperparameter importance for 1,000 runs x 20 config keys.

    python bench/importance_speed.py [--runs 1000] [--keys 20] [--json]

Synthetic sweep-shaped configs (log-uniform and uniform floats, integers, categoricals, booleans) with a
metric that depends on three of the keys; timed: the whole computation (encoding, random forest, out-of-bag
permutation importance, correlations, PED-ANOVA), from configs in memory, and again from a store
(``rlcockpit importance --project``: runs listed, summaries parsed). Target: <= 2 s. The ranking's top 3
must be the three keys with effects.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def make_runs(n: int, keys: int, seed: int = 0) -> tuple[list[dict[str, Any]], list[float]]:
    rng = np.random.default_rng(seed)
    configs, values = [], []
    for _ in range(n):
        cfg: dict[str, Any] = {"actor": {"optim": {"lr": float(10 ** rng.uniform(-6, -3))}},
                               "algorithm": {"kl_ctrl": {"kl_coef": float(rng.choice([0.001, 0.01, 0.05, 0.1]))}},
                               "rollout": {"n": int(rng.choice([2, 4, 8, 16]))}}
        for k in range(keys - 3):
            kind = k % 4
            cfg[f"noise{k}"] = (float(rng.uniform()) if kind == 0 else int(rng.integers(0, 50)) if kind == 1
                                else str(rng.choice(["a", "b", "c", "d"])) if kind == 2 else bool(rng.integers(0, 2)))
        lr = np.log10(cfg["actor"]["optim"]["lr"])
        y = -((lr + 4.5) ** 2) + 3 * cfg["algorithm"]["kl_ctrl"]["kl_coef"] * 10 + 0.1 * np.log2(cfg["rollout"]["n"])
        configs.append(cfg)
        values.append(float(y + rng.normal(0, 0.05)))
    return configs, values


def bench(runs: int = 1000, keys: int = 20, repeats: int = 3) -> dict[str, Any]:
    from rlcockpit.store import open_store
    from rlcockpit.sweeps.importance import compute_importance, project_importance

    configs, values = make_runs(runs, keys)
    compute_importance(configs[:50], values[:50])  # imports (sklearn, optuna) outside the timing
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = compute_importance(configs, values)
        times.append(time.perf_counter() - t0)
    with tempfile.TemporaryDirectory(prefix="bench-importance-") as tmp:
        store = open_store(tmp)
        for cfg, v in zip(configs, values):
            rid = uuid.uuid4().hex[:8]
            store.create_run({"id": rid, "project": "bench", "name": rid, "config": cfg, "summary": {"score": v},
                              "status": "finished"})
        t0 = time.perf_counter()
        from_store = project_importance(open_store(tmp), "bench", "score")
        store_s = time.perf_counter() - t0
    top3 = sorted(r["key"] for r in res["parameters"][:3])
    return {"runs": runs, "keys": keys, "compute_s_median": round(float(np.median(times)), 3),
            "from_store_s": round(store_s, 3), "r2_oob": round(res["model"]["r2_oob"], 3), "top3": top3,
            "top3_are_the_effects": top3 == ["actor.optim.lr", "algorithm.kl_ctrl.kl_coef", "rollout.n"]
            and from_store["parameters"][0]["key"] == res["parameters"][0]["key"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--keys", type=int, default=20)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    r = bench(args.runs, args.keys)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        print(f"importance of {r['runs']} runs x {r['keys']} keys: {r['compute_s_median']:.2f} s (median of 3), "
              f"{r['from_store_s']:.2f} s from a store (target <= 2 s); forest R2 {r['r2_oob']}; top 3 {r['top3']}")
    return 0 if r["compute_s_median"] <= 2.0 and r["top3_are_the_effects"] else 1


if __name__ == "__main__":
    sys.exit(main())
