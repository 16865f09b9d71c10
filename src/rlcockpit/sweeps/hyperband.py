"""Hyperband early termination with W&B's band semantics.

W&B's variant is a successive-halving rule on *iterations*, where an iteration is the k-th logged value of
the sweep metric (not the step): at each band ``b`` (0-based index into the metric's history) a running
trial is stopped when it is outside the best ``1/eta`` of all trials that reached that band. Bands come
from ``min_iter`` (``min_iter * eta**i``) or from ``max_iter`` and ``s`` (``max_iter / eta**i`` for
``i = 1..s``). ``strict`` (W&B's default since 2024) compares the trial's value *at* the band; the
older, permissive rule compares its best value so far.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rlcockpit.sweeps.params import SweepConfigError, is_int, is_number

MAX_BAND = 10**12


def hyperband_bands(*, min_iter: object = None, max_iter: object = None, s: object = None,
                    eta: object = 3) -> list[int]:
    """The sorted band iterations for an ``early_terminate`` block (errors name the key)."""
    if not is_number(eta) or float(eta) <= 1:
        raise SweepConfigError(f"early_terminate.eta must be a number > 1, got {eta!r}")
    eta_f = float(eta)
    if max_iter is not None:
        if not is_int(max_iter) or max_iter < 1:
            raise SweepConfigError(f"early_terminate.max_iter must be a positive integer, got {max_iter!r}")
        if s is None or not is_number(s) or s < 1:
            raise SweepConfigError(f"early_terminate: max_iter needs s (the number of bands, >= 1), got {s!r}")
        bands = []
        band = float(max_iter)
        for _ in range(int(s)):
            band /= eta_f
            if band < 1:
                break
            bands.append(int(band))
        if not bands:
            raise SweepConfigError("early_terminate: no band >= 1 (increase max_iter or decrease eta)")
        return sorted(set(bands))
    if min_iter is not None:
        if not is_int(min_iter) or min_iter < 1:
            raise SweepConfigError(f"early_terminate.min_iter must be an integer >= 1, got {min_iter!r}")
        bands, band = [], float(min_iter)
        while band <= MAX_BAND and len(bands) < 100:
            bands.append(int(band))
            band *= eta_f
        return sorted(set(bands))
    raise SweepConfigError("early_terminate: hyperband needs min_iter, or max_iter and s")


@dataclass(frozen=True)
class Decision:
    stop: bool
    band: int | None = None
    threshold: float | None = None
    value: float | None = None

    def reason(self, metric: str, maximize: bool) -> str:
        shown = -self.value if maximize and self.value is not None else self.value
        limit = -self.threshold if maximize and self.threshold is not None else self.threshold
        word = "below" if maximize else "above"
        return (f"hyperband: {metric} = {shown:.6g} at iteration {self.band} is {word} the band threshold "
                f"{limit:.6g} (keeps the best 1/eta of the trials that reached it)")


def _clean(history: Sequence[float], maximize: bool) -> list[float]:
    """Finite values only, negated when maximising so that lower is always better."""
    sign = -1.0 if maximize else 1.0
    return [sign * float(v) for v in history if v is not None and math.isfinite(float(v))]


def thresholds(histories: Sequence[Sequence[float]], bands: Sequence[int], eta: float,
               maximize: bool) -> list[float]:
    """Per band, the value a trial must not exceed (lower-is-better space) to continue."""
    clean = [_clean(h, maximize) for h in histories]
    clean = [h for h in clean if h]
    out = []
    for band in bands:
        at_band = sorted(h[band] for h in clean if len(h) > band)
        out.append(at_band[int((1.0 / eta) * len(at_band))] if at_band else math.inf)
    return out


def decide(history: Sequence[float], all_histories: Sequence[Sequence[float]], bands: Sequence[int],
           eta: float, maximize: bool, strict: bool = True) -> Decision:
    """Whether a running trial with ``history`` should stop, judged against every trial of the sweep
    (``all_histories`` includes this one, finished and running trials alike)."""
    mine = _clean(history, maximize)
    limits = thresholds(all_histories, bands, eta, maximize)
    band, limit = None, None
    for b, t in zip(bands, limits):
        if b < len(mine):
            band, limit = b, t
        else:
            break
    if band is None or limit is None:
        return Decision(False)
    value = mine[band] if strict else min(mine)
    return Decision(value > limit, band, limit, value)
