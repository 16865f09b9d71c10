"""Validation metrics under verl's names and with verl's statistics (``process_validation_metrics`` and
``RayPPOTrainer._val_metrics_update`` in verl 0.9.1).

With ``val_kwargs.n`` responses per prompt verl logs, per data source and variable, the mean and spread over the
n responses and bootstrap estimates of best-of-k, worst-of-k and majority vote (when the reward function returns
a ``pred``), each averaged over prompts; users compare runs by ``val-core/<src>/acc/best@8/mean`` or
``maj@8/mean``, so a drop-in trainer has to write them, with the same numbers for the same samples (the
bootstrap draws the same indices: a ``RandomState(42)`` per estimate, as verl's reseeded global generator).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

N_BOOTSTRAP = 1000
SEED = 42


def subset_sizes(n_resps: int) -> list[int]:
    """The k of best@k / worst@k / maj@k: powers of two below n, then n itself (verl's choice)."""
    if n_resps <= 1:
        return []
    ks, k = [], 2
    while k < n_resps:
        ks.append(k)
        k *= 2
    return [*ks, n_resps]


def _bootstrap_indices(n_data: int, k: int) -> np.ndarray:
    return np.random.RandomState(SEED).choice(n_data, size=(N_BOOTSTRAP, k), replace=True)


def _mean_std(values: np.ndarray) -> tuple[float, float]:
    return float(np.mean(values)), float(np.std(values))


def _majority_value(vals: Sequence[float], preds: Sequence[Any]) -> float:
    """The value of the first response that gave the most common prediction (verl's ``calc_maj_val``)."""
    counts = Counter(preds)
    top = max(counts.values())
    winner = next(p for p in counts if counts[p] == top)  # first-seen among the most common, as verl's max()
    return next(v for v, p in zip(vals, preds) if p == winner)


def prompt_statistics(vals: Sequence[float], preds: Sequence[Any] | None) -> dict[str, float]:
    """mean@n, std@n and the bootstrap estimates for one prompt's n responses of one variable."""
    n = len(vals)
    out = {f"mean@{n}": float(np.mean(vals))}
    if n <= 1:
        return out
    out[f"std@{n}"] = float(np.std(vals))
    arr = np.asarray(vals, dtype=np.float64)
    for k in subset_sizes(n):
        idx = _bootstrap_indices(n, k)
        out[f"best@{k}/mean"], out[f"best@{k}/std"] = _mean_std(arr[idx].max(axis=1))
        out[f"worst@{k}/mean"], out[f"worst@{k}/std"] = _mean_std(arr[idx].min(axis=1))
        if preds is not None:
            maj = np.array([_majority_value(arr[row], [preds[i] for i in row]) for row in idx])
            out[f"maj@{k}/mean"], out[f"maj@{k}/std"] = _mean_std(maj)
    return out


def validation_metrics(sources: Sequence[str], uids: Sequence[Any],
                       infos: Mapping[str, Sequence[Any]]) -> dict[str, float]:
    """``val-core/<src>/<var>/<stat>`` and ``val-aux/...`` from per-response values.

    ``infos`` maps a variable (``reward``, ``acc``, the reward function's other keys, ``pred``) to one value per
    response; string variables other than ``pred`` are skipped. The core variable is ``acc`` when present, else
    ``reward``; its mean/maj/best at the largest n are ``val-core``, everything else ``val-aux``.
    """
    grouped: dict[str, dict[Any, dict[str, list[Any]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for i, (src, uid) in enumerate(zip(sources, uids)):
        for var, values in infos.items():
            grouped[src][uid][var].append(values[i])
    metrics: dict[str, float] = {}
    for src, by_uid in grouped.items():
        per_var: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for var2vals in by_uid.values():
            preds = var2vals.get("pred")
            for var, raw in var2vals.items():
                vals = [v for v in raw if v is not None]
                if not vals or isinstance(vals[0], str):
                    continue
                usable = preds if preds is not None and len(preds) == len(vals) and None not in preds else None
                for stat, value in prompt_statistics([float(v) for v in vals], usable).items():
                    per_var[var][stat].append(value)
        core = "acc" if "acc" in per_var else "reward"
        for var, stats in per_var.items():
            n_max = max(int(name.split("@")[-1].split("/")[0]) for name in stats)
            for stat, values in stats.items():
                is_core = var == core and stat.startswith(("mean", "maj", "best")) and f"@{n_max}" in stat
                metrics[f"{'val-core' if is_core else 'val-aux'}/{src}/{var}/{stat}"] = float(np.mean(values))
    return metrics
