"""The sharded parts of a data-parallel step: rollout, rewards and the no-grad policy passes.

Each wrapper gives rank ``r`` its contiguous share of the rows (:meth:`Dist.bounds`) and gathers the
results so every rank holds the whole batch in the global order.  With one process they only add the
per-row sampling seeds (:mod:`rollout_seeds`), so a single-process run draws the same samples as an
N-process one with the same seed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from rlcockpit.trainer.collect import pad_cat
from rlcockpit.trainer.distributed.group import Dist
from rlcockpit.trainer.rollout.engine import RolloutOutput, SamplingParams
from rlcockpit.trainer.rollout.seeds import base_seed, row_seed


class ShardedEngine:
    """Any rollout engine, generating this rank's rows with per-row seeds and gathering all ranks' rows.

    Attributes other than ``generate`` (``sync_weights``, ``pop_metrics``, vLLM's settings) are the
    wrapped engine's: each rank keeps its own engine colocated with its model copy."""

    def __init__(self, engine: Any, dist: Dist, *, pad_token_id: int) -> None:
        object.__setattr__(self, "_engine", engine)
        object.__setattr__(self, "_dist", dist)
        object.__setattr__(self, "_pad", pad_token_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._engine, name, value)  # settings (eos_ids...) and patches belong to the engine

    @property
    def wrapped(self) -> Any:
        return self._engine

    def generate(self, prompts: list[list[int]], params: SamplingParams, **mm: Any) -> RolloutOutput:
        """``mm``: a vision-language batch's ``mm=`` image tensors, row-aligned: each rank takes its rows'."""
        d = self._dist
        base = d.broadcast_object(base_seed())  # the same on every rank (and with one process)
        seeds = [row_seed(base, i) for i in range(len(prompts))]
        if not d.enabled:
            return self._engine.generate(prompts, dataclasses.replace(params, seeds=seeds), **mm)
        lo, hi = d.bounds(len(prompts))
        local = None
        if hi > lo:
            rows = {k: {name: t[lo:hi] for name, t in v.items()} for k, v in mm.items()}
            out = self._engine.generate(prompts[lo:hi], dataclasses.replace(params, seeds=seeds[lo:hi]), **rows)
            local = RolloutOutput(*(None if t is None else t.cpu() for t in dataclasses.astuple(out)))
            device = out.prompts.device
        parts = [p for p in d.all_gather_object(local) if p is not None]
        merged = pad_cat(parts, self._pad)
        device = device if local is not None else merged.prompts.device
        return RolloutOutput(*(None if t is None else t.to(device) for t in dataclasses.astuple(merged)))


class ShardedReward:
    """A :class:`~rlcockpit.trainer.reward.rewards.RewardManager` scoring this rank's rows; every rank gets all
    scores and extras, and the same (global) call/failure counts, so ``check()`` agrees on every rank."""

    def __init__(self, inner: Any, dist: Dist) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_dist", dist)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)  # restore() sets calls/failures on the manager itself

    def check(self) -> None:
        self._inner.check()

    @property
    def failure_rate(self) -> float:
        return self._inner.failure_rate

    def __call__(self, rows: list[Any], responses: list[str]) -> tuple[list[float], list[Any]]:
        inner, d = self._inner, self._dist
        if not d.enabled:
            return inner(rows, responses)
        lo, hi = d.bounds(len(rows))
        calls, failures = inner.calls, inner.failures
        scores, extras = inner(rows[lo:hi], responses[lo:hi]) if hi > lo else ([], [])
        parts = d.all_gather_object((list(scores), list(extras), inner.calls - calls, inner.failures - failures,
                                     inner.last_error))
        inner.calls = calls + sum(p[2] for p in parts)
        inner.failures = failures + sum(p[3] for p in parts)
        inner.last_error = next((p[4] for p in reversed(parts) if p[4]), inner.last_error)
        return [s for p in parts for s in p[0]], [e for p in parts for e in p[1]]


def unwrap_engine(engine: Any) -> Any:
    return engine.wrapped if isinstance(engine, ShardedEngine) else engine


def sharded_policy_passes(st: Any, batch: dict[str, torch.Tensor], rollout_log_probs: torch.Tensor | None,
                          timed: Any, timing: dict) -> None:
    """:func:`~rlcockpit.trainer.step_inputs.policy_passes` on this rank's rows, gathered into ``batch``."""
    from rlcockpit.trainer.step_inputs import policy_passes  # step_inputs -> state -> this module

    d: Dist = st.dist
    bs = batch["responses"].size(0)
    if not d.enabled:
        policy_passes(st, batch, rollout_log_probs, timed, timing)
        return
    lo, hi = d.bounds(bs)
    sub = {k: v[lo:hi] for k, v in batch.items()}
    policy_passes(st, sub, None if rollout_log_probs is None else rollout_log_probs[lo:hi], timed, timing,
                  global_bs=bs)
    for key in sorted(set(sub) - set(batch)):  # the same keys on every rank (same config)
        batch[key] = d.gather_rows(sub[key], bs)
