"""Metrics logged more than once per event.

TRL's ``num_iterations=k`` reuses each generated batch for ``k`` optimiser steps and logs the KL, the loss and the
clip ratios at every one of them: the generating step and its reuse steps carry nearly the same value (one small
update apart). A detector that counts "logged steps" then sees one batch's spike as ``k`` steps that held. What
counts for persistence is distinct events, so the detectors that judge persistence divide by the period found here.
"""

from __future__ import annotations

import math

from rlcockpit.health.base import Track, median

MOST = 4  # the longest period looked for (num_iterations beyond 4 is rare)
TIGHT = 0.2  # within a group the changes are at most this share of the changes between groups
MIN_VALUES = 24  # values needed before a period is trusted
EVERY = 32  # observations between two measurements (the period of a run does not change)


def repeat_period(values: list[float], most: int = MOST) -> int:
    """How many consecutive values of a positive series (a KL) carry one event: the smallest ``k`` (2..``most``)
    for which, at some phase, the median change inside groups of ``k`` is below ``TIGHT`` x the median change
    between groups, changes in log units (a KL's noise is a factor). 1 when no period fits, with too few values,
    with more than a tenth of the values <= 0 (a series that is not a positive estimate: a loss, a k1 KL estimate)
    or a constant series. A change next to a value <= 0 (the KL of 0 before the first update) is left out. Also 2
    when no such ``k`` fits but batches are logged twice in turn (a b a' b': :func:`_interleaved`): ``n`` values
    then carry ``n / 2`` batches too."""
    if len(values) < MIN_VALUES or sum(1 for v in values if v <= 0.0) > 0.1 * len(values):
        return 1
    logs = [math.log(v) if v > 0.0 else math.nan for v in values]
    diffs = [abs(b - a) for a, b in zip(logs, logs[1:])]  # NaN next to a value <= 0: dropped below
    for k in range(2, most + 1):
        for phase in range(k):
            within = [d for i, d in enumerate(diffs) if (i - phase) % k != k - 1 and d == d]
            between = [d for i, d in enumerate(diffs) if (i - phase) % k == k - 1 and d == d]
            if len(between) < 6 or not within:
                return 1
            gap = median(between)
            if gap > 0.0 and median(within) < TIGHT * gap:
                return k
    return 2 if _interleaved(logs, most) else 1


def _interleaved(logs: list[float], most: int) -> bool:
    """Whether ``s`` (2..``most``) batches are each logged twice, in turn: a b a' b' (TRL's ``num_iterations=2``
    with ``steps_per_generation=s``). A value ``s`` back is then the same batch on the second half of each group
    of ``2s`` values, another one on the first half: the first changes at most ``TIGHT`` x the second."""
    for s in range(2, most + 1):
        diffs = [abs(b - a) for a, b in zip(logs, logs[s:])]  # diffs[i]: value i + s against value i
        for phase in range(2 * s):
            within = [d for i, d in enumerate(diffs) if (i + s - phase) % (2 * s) >= s and d == d]
            between = [d for i, d in enumerate(diffs) if (i + s - phase) % (2 * s) < s and d == d]
            if len(between) < 6 or not within:
                break
            gap = median(between)
            if gap > 0.0 and median(within) < TIGHT * gap:
                return True
    return False


class RepeatWatch:
    """The repeat period of one track, measured every ``EVERY`` observations over the last 96 values (cheap:
    a detector asks on every check). Detectors of other metrics logged at the same steps (the loss) ask with the
    KL's track: it is where the repeat shows clearly (a loss of exactly 0 on many steps repeats by chance)."""

    __slots__ = ("period", "_at")

    def __init__(self) -> None:
        self.period = 1
        self._at = 0

    def of(self, track: Track) -> int:
        if track.n - self._at >= EVERY or (self._at == 0 and track.n >= MIN_VALUES):
            self._at = track.n
            self.period = repeat_period(track.tail(96))
        return self.period
