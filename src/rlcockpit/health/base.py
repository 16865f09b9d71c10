"""Detector plumbing: per-metric tracks, robust statistics, the ``DETECTORS`` registry and the base class.

Cost model: ``HealthMonitor.observe`` runs on the tracking writer thread for every logged step, with a budget
of ~50 µs for all detectors together. So a detector's per-step work is a handful of float operations on its
:class:`Track`; anything that sorts (medians over a trailing window) runs behind a cheap gate (the value is
already past a fixed threshold or far from an EMA) or every ``every`` steps.

Baselines are the run's own: detectors compare against a robust median/MAD of the values at warm-up end
(frozen) or of a trailing window. A fixed threshold (a blog-post number such as "KL > 0.1") may only raise a
*warning*; a *critical* always needs a change relative to the run's own baseline, or a non-finite value.

A detector carries everything about itself: its thresholds (``defaults``), the metrics that trigger it
(``triggers``), its advice (:meth:`Detector.advise`: causes ranked from the finding's evidence, config changes),
and its place in root-cause stories (``story``, ``role``, :meth:`Detector.chain_text`). A detector a user
registers is therefore as complete as a built-in one: it runs live, in ``diagnose``, and appears in the
root-cause chain with its own story and advice.
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any, ClassVar

from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.findings import Action, Cause, Finding, checked_last, severity_rank
from rlcockpit.health.stories import Story, resolve_story
from rlcockpit.registry import Registry

EVIDENCE_POINTS = 30  # points per metric kept in a finding's evidence
GPU_HINTS = ("system/gpu/", "perf/max_memory_allocated_gb", "perf/max_memory_reserved_gb")  # logged only with a GPU
ADAPT_AT = 5  # observations after which a warm-up is fitted to the run's logging cadence
COOLDOWN_LOGS = 5  # logging intervals of quiet at least, before an event's end (``Detector.quiet_span``)


class Track:
    """Recent finite values of one canonical metric (non-finite values are reported, never stored). ``raw`` is
    the name the run logged it under (``kl`` for TRL's KL): evidence cites what the user logged."""

    __slots__ = ("key", "raw", "values", "steps", "n", "last", "last_step")

    def __init__(self, key: str, maxlen: int = 256, raw: str | None = None) -> None:
        self.key = key
        self.raw = raw or key
        self.values: deque[float] = deque(maxlen=maxlen)
        self.steps: deque[int] = deque(maxlen=maxlen)
        self.n = 0
        self.last = math.nan
        self.last_step = -1

    def push(self, step: int, value: float) -> None:
        self.values.append(value)
        self.steps.append(step)
        self.n += 1
        self.last = value
        self.last_step = step

    def mean_last(self, k: int) -> float:
        """Mean of the last ``k`` values (fewer if fewer exist) — the smoothed current value. Detectors call
        this ~15 times per step, mostly with k <= 3: those sums index the deque directly (same result, a third
        of the cost of an iterator)."""
        v = self.values
        n = len(v)
        if k >= n:
            if n == 0:
                return math.nan
            k = n
        if k == 3:
            return (v[-1] + v[-2] + v[-3]) / 3
        if k == 2:
            return (v[-1] + v[-2]) / 2
        if k == 1:
            return v[-1] + 0.0
        return sum(islice(reversed(v), k)) / k

    def tail(self, k: int, skip: int = 0) -> list[float]:
        """Up to ``k`` values ending ``skip`` values before the newest."""
        out = list(islice(reversed(self.values), skip, skip + k))
        out.reverse()
        return out

    def ago(self, k: int) -> float:
        """The value ``k`` observations before the newest (NaN if not that many)."""
        return self.values[-1 - k] if len(self.values) > k else math.nan

    def mean_steps(self, steps: int, most: int = 3) -> float:
        """Mean of the values logged within the last ``steps`` steps (at least the newest, at most ``most``):
        smoothing over the same time span whether a run logs every step or every tenth."""
        v, st = self.values, self.steps
        if not v:
            return math.nan
        if len(st) >= most and st[-1] - st[-most] < steps:  # a dense log: the plain mean of the last ``most``
            return (v[-1] + v[-2] + v[-3]) / 3 if most == 3 else self.mean_last(most)  # mean_last(3), one call less
        k, total, cut = 0, 0.0, self.last_step - steps
        for i in range(len(v) - 1, max(len(v) - 1 - most, -1), -1):
            if k and st[i] <= cut:
                break
            total += v[i]
            k += 1
        return total / k

    def back(self, steps: int) -> float:
        """The newest value logged at least ``steps`` *steps* (not observations) before the newest one: lags
        mean the same time span whether a run logs every step or every tenth (NaN if none is that old)."""
        if not self.steps:
            return math.nan
        target = self.last_step - steps
        for i in range(len(self.steps) - 2, -1, -1):
            if self.steps[i] <= target:
                return self.values[i]
        return math.nan

    def mean_back(self, steps: int, span: int, most: int = 3) -> float:
        """The mean of the values logged within ``span`` steps up to the one :meth:`back` returns (at most
        ``most``): the level ``steps`` ago smoothed as :meth:`mean_steps` smooths the newest one (NaN if none is
        that old)."""
        if not self.steps:
            return math.nan
        target = self.last_step - steps
        for i in range(len(self.steps) - 2, -1, -1):
            if self.steps[i] <= target:
                cut, total, k = self.steps[i] - span, 0.0, 0
                for j in range(i, max(i - most, -1), -1):
                    if k and self.steps[j] <= cut:
                        break
                    total += self.values[j]
                    k += 1
                return total / k
        return math.nan

    def points(self, k: int = EVIDENCE_POINTS) -> list[list[float]]:
        """The last ``k`` (step, value) pairs as JSON-ready lists (values are floats already: the monitor
        converts on the way in)."""
        steps = self.tail_steps(k)
        if steps and type(steps[-1]) is not int:
            steps = [int(s) for s in steps]
        return list(map(list, zip(steps, self.tail(k))))

    def tail_steps(self, k: int) -> list[int]:
        out = list(islice(reversed(self.steps), k))
        out.reverse()
        return out


def median(values: list[float]) -> float:
    if not values:
        return math.nan
    s = sorted(values)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def smallest_step(values: list[float]) -> float:
    """The smallest step between distinct ``values`` (0.0 when they are all equal): the size of one sample's
    difference in a mean over a few 0/1 scores (1/24 for a reward over 24 completions, 1/400 for an accuracy on
    400 questions). A series that is exactly 0 or constant most of the time has a MAD of 0; a change of one or two
    such steps is still no more than one or two samples answering differently."""
    s = sorted(set(values))
    tol = 1e-6 * max(abs(s[0]), abs(s[-1]), 1e-12) if s else 0.0  # float32 round-off is not a step
    return min((b - a for a, b in zip(s, s[1:]) if b - a > tol), default=0.0)


def count_noise(values: list[float]) -> float:
    """A floor for the noise of one value of a series that is a mean of 0/1 scores (an accuracy, a pass rate): the
    binomial standard error sqrt(p(1-p)/N) at its median p, with N = 1 / :func:`smallest_step` (the number of scores it
    is a mean of), and at least one such step (only that step when the values leave [0, 1]). 0.0 when they are all equal (nothing to infer N
    from), or when they are not whole multiples of that step (a continuous series: its smallest gap is chance, not a
    sample). A validation accuracy of 4 right of 400 falling to 3 is one answer, not 2499999x its noise."""
    q = smallest_step(values)
    if q <= 0.0 or any(abs(v / q - round(v / q)) > 0.02 for v in values):
        return 0.0
    if min(values) < 0.0 or max(values) > 1.0:
        return q
    p = median(values)
    return max(q, math.sqrt(max(p * (1.0 - p), q * (1.0 - q)) * q))


def tie_safe(values: list[float], rel_floor: float = 0.05, abs_floor: float = 1e-12) -> tuple[float, float]:
    """:func:`robust`, with the scale at least 1.2533 x the mean absolute deviation from the median (the normal
    distribution's standard deviation): a reward that is a mean over a few dozen 0/1 scores takes few distinct
    values, many of them equal to the median, and its MAD then says "no noise" where there is plenty."""
    med, scale = robust(values, rel_floor, abs_floor)
    if values and med == med:
        scale = max(scale, 1.2533 * sum(abs(v - med) for v in values) / len(values))
    return med, scale


def robust(values: list[float], rel_floor: float = 0.05, abs_floor: float = 1e-12) -> tuple[float, float]:
    """(median, scale) with scale = 1.4826·MAD, floored at ``rel_floor``·|median| and ``abs_floor``.

    The floors stop a perfectly flat baseline (a constant metric) from making any later wiggle look like
    an infinite z-score.
    """
    med = median(values)
    if math.isnan(med):
        return med, math.nan
    mad = median([abs(v - med) for v in values]) * 1.4826
    return med, max(mad, rel_floor * abs(med), abs_floor)


def recent_count(track: Track, n: int, above: float) -> int:
    """How many of the last ``n`` values of ``track`` exceed ``above``: persistence, "k of the last n logged
    steps", so one noisy step is not a trend."""
    v = track.values
    count = 0
    for i in range(1, min(n, len(v)) + 1):  # a plain loop: a third of the cost of sum() over a generator
        if v[-i] > above:
            count += 1
    return count


def far_above(track: Track, window: int, n: int, k: int, z: float, rise: float, floor: float,
              scale_floor: float, rel_floor: float = 0.05) -> tuple[float, float, list[int]] | None:
    """A series leaving its own range upward: ``k`` of the last ``n`` values above the median of the ``window``
    values before them by more than ``z`` robust scale units (1.4826 x MAD, at least ``rel_floor`` x that median and
    ``scale_floor``), by ``rise`` x that median and by ``floor``. Returns (median, scale, positions among the last
    ``n`` of the values above), or None. It sorts the window: callers gate it behind a cheap test."""
    if len(track.values) < n + window // 2:
        return None
    med, scale = robust(track.tail(window, skip=n), rel_floor, scale_floor)
    bar = med + max(z * scale, rise * med, floor)
    above = [i for i, v in enumerate(track.tail(n)) if v > bar]
    return (med, scale, above) if len(above) >= k else None


def newest_far_above(track: Track, p: dict[str, Any], rise: float, floor: float, scale_floor: float,
                     rel_floor: float = 0.05) -> tuple[float, float, list[int], float, int, int] | None:
    """:func:`far_above` with the detector's ``window``/``n``/``k``/``z``, only when the newest value is one of
    those above (an alert starts with the value that makes it, not later): (median, scale, positions above, their
    median, how many values the median was taken over, the step of the first value above)."""
    out = far_above(track, p["window"], p["n"], p["k"], p["z"], rise, floor, scale_floor, rel_floor)
    if out is None or out[2][-1] != p["n"] - 1:
        return None
    med, scale, above = out
    recent = track.tail(p["n"])
    before = min(p["window"], len(track.values) - p["n"])
    return med, scale, above, median([recent[i] for i in above]), before, track.steps[len(track.steps) - p["n"] + above[0]]


def log_scale(values: list[float], floor: float = 0.05) -> tuple[float, float] | None:
    """(median, robust scale of log values) of the positive ``values``, or None with fewer than 5 of them. For
    a positive, heavy-tailed series (a gradient norm): a step with no gradient (0, every advantage zero) says
    nothing about the size of the others, and a noisy run's ordinary swings are a factor, not a difference."""
    logs = [math.log(v) for v in values if v > 1e-12]
    if len(logs) < 5:
        return None
    mid = median(logs)
    return math.exp(mid), max(1.4826 * median([abs(x - mid) for x in logs]), floor)


def kendall_tau(values: list[float]) -> float:
    """Kendall's tau of ``values`` against their order (the Mann-Kendall trend statistic, normalised to [-1, 1]):
    +1 when every later value is above every earlier one. Ranks only, so one outlier moves it little and a
    multiplicative noise needs no log; O(n^2), for the short stretches a rule reads (tens of values)."""
    n = len(values)
    if n < 2:
        return 0.0
    s = sum((b > a) - (b < a) for i, a in enumerate(values) for b in values[i + 1:])
    return s / (n * (n - 1) / 2)


class Cusum:
    """Page's one-sided CUSUM of standardised deviations above a frozen early baseline: a slow drift adds up step
    by step and shows near its start, while noise around the baseline drains back to 0. ``start`` is where the
    current excursion began (the change point's estimate); :meth:`update` is True once the sum passes ``h``.
    ``k`` is the allowance per step, in noise units (drifts smaller than it are ignored)."""

    __slots__ = ("k", "h", "s", "start")

    def __init__(self, k: float = 0.5, h: float = 8.0) -> None:
        self.k, self.h, self.s = k, h, 0.0
        self.start: int | None = None

    def update(self, z: float, step: int) -> bool:
        s = self.s + z - self.k
        if s <= 0.0:
            self.s, self.start = 0.0, None
            return False
        if self.start is None:
            self.start = step
        self.s = s
        return s > self.h



def diff_noise(values: list[float]) -> float:
    """Robust noise of one value from the step-to-step changes of ``values`` (their median change taken out, so a
    series already drifting does not widen its own noise band): 1.4826 x MAD of the changes / sqrt(2)."""
    diffs = [b - a for a, b in zip(values, values[1:])]
    if not diffs:
        return 0.0
    mid = median(diffs)
    return 1.4826 * median([abs(d - mid) for d in diffs]) / math.sqrt(2)


class FallBar:
    """A bar under a series' own recent level, for rules that ask "did it fall out of its range?": the median of the
    ``window`` values before the newest ``skip`` less max(``z`` x their noise, ``drop`` x the median), refreshed
    every ``every`` values while the series stays above it (a comparison per step, a sort now and then) and frozen
    once it falls below, so the fall is judged against the range it left. ``scale`` gives a window's (median,
    noise); ``ref`` is the pair the bar came from. The settings are fixed when the rule is built: the per-step call
    is one comparison and a countdown (it runs for every logged step of a run).

    A refreshed bar is measured only when a value comes near it: for a window of non-negative values (with ``z`` >= 0
    and 0 <= ``drop`` <= 1) the bar is at most (1 - ``drop``) x the window's largest value, since its median is at
    most that value and its noise is not negative; a value above that bound is above the bar whatever the noise,
    so the sorts wait until a value falls under the bound or a rule reads ``bar`` / ``ref``."""

    __slots__ = ("_bar", "_ref", "_pending", "_upper", "_age", "_scale", "_window", "_skip", "_min_window", "_z",
                 "_drop", "_every", "_lazy")

    def __init__(self, scale: Callable[[list[float]], tuple[float, float]], *, window: int, skip: int,
                 min_window: int, z: float, drop: float, every: int) -> None:
        self._bar = math.nan
        self._ref: tuple[float, float] = (math.nan, math.nan)
        self._pending: list[float] | None = None  # the window of a refresh not measured yet
        self._upper = math.inf  # a bound the pending bar is at most
        self._age = 0
        self._scale, self._window, self._skip, self._min_window = scale, int(window), int(skip), int(min_window)
        self._z, self._drop, self._every = z, drop, int(every)
        self._lazy = z >= 0 and 0 <= drop <= 1

    @property
    def bar(self) -> float:
        if self._pending is not None:
            self._settle()
        return self._bar

    @property
    def ref(self) -> tuple[float, float]:
        if self._pending is not None:
            self._settle()
        return self._ref

    def _settle(self) -> None:
        """Measure the pending window: the bar and its (median, noise)."""
        med, noise = self._scale(self._pending)
        self._pending = None
        self._bar, self._ref = med - max(self._z * noise, self._drop * med), (med, noise)

    def above(self, track: Track) -> bool:
        """Whether the newest value is not under the bar (true while there is no bar yet); refreshes the bar when due."""
        last = track.last
        if self._pending is not None and not last >= self._upper:
            self._settle()
        if last < self._bar and self._pending is None:
            return False
        self._age -= 1
        if self._age <= 0:
            self._age = self._every
            ref = track.tail(self._window, skip=self._skip)
            if len(ref) >= self._min_window:
                self._pending = ref
                if self._lazy and min(ref) >= 0.0:  # a relative margin far above float round-off
                    self._upper = (1.0 - self._drop) * max(ref) * (1.0 + 1e-9)
                else:
                    self._settle()
        return True


class Drift:
    """A slow upward drift of one series away from its frozen early level: a :class:`Cusum` of the values in units
    of the series' own noise (the larger of its step-to-step noise and its spread around the level, floored at ``rel_floor`` x |level| and ``abs_floor``, for a series that is
    constant early on). ``start`` is where the drift began; ``level`` and ``noise`` say what it is relative to."""

    __slots__ = ("level", "noise", "cusum", "_takeoff", "_quarter")

    def __init__(self, values: list[float], k: float, h: float, rel_floor: float, abs_floor: float) -> None:
        self.level, spread = robust(values, rel_floor, abs_floor)  # a series that wanders: its spread, not its steps
        self.noise = max(diff_noise(values), spread)
        self.cusum = Cusum(k, h)
        self._takeoff: int | None = None
        self._quarter = 0.25 * h

    def update(self, value: float, step: int) -> bool:
        """Add one observation; True while the accumulated drift is past ``h``. (:meth:`Cusum.update`, inlined:
        this runs for several series on every logged step.)"""
        c = self.cusum
        s = c.s + (value - self.level) / self.noise - c.k
        if s <= 0.0:
            c.s, c.start, self._takeoff = 0.0, None, step
            return False
        if c.start is None:
            c.start = step
        c.s = s
        if s <= self._quarter:
            self._takeoff = step
        return s > c.h

    @property
    def start(self) -> int | None:
        """Where the drift took off: the last step its sum was within a quarter of the alarm level (a small
        excursion that lingered before the drift began is not its start)."""
        if self.cusum.start is None:
            return None
        return max(self.cusum.start, self._takeoff) if self._takeoff is not None else self.cusum.start


def climb(track: Track, windows: tuple[int, ...], z: float, floor: float, since: int = 0
          ) -> tuple[float, float, float, int, float] | None:
    """A steady climb of ``track``: ``(a, b, c, window, noise)`` for the first of ``windows`` (observations)
    whose thirds' medians rise a < b < c, each step by at least a quarter of the rise, and by ``z`` noise units
    of a third's median — the noise measured inside the window (robust, floored at ``floor``), so a jittery and
    a smooth series are each judged on their own scale. Windows longer than the observations since ``since``
    (the warm-up) are not tried. A single jump is not a climb."""
    for window in windows:
        if window > track.n - since:
            break
        vals = track.tail(window)
        third = window // 3
        parts = (vals[:third], vals[third : 2 * third], vals[2 * third :])
        a, b, c = (median(list(part)) for part in parts)
        rise = c - a
        if not (a < b < c) or b - a < 0.25 * rise or c - b < 0.25 * rise:
            continue
        resid = [abs(v - m) for part, m in zip(parts, (a, b, c)) for v in part]
        noise = max(1.4826 * median(resid) / math.sqrt(third), floor)
        if rise >= z * noise:
            return a, b, c, window, noise
    return None


def span(track: Track, steps: float, lo: int = 2, hi: int = 10) -> int:
    """How many recent observations of ``track`` cover ``steps`` steps (between ``lo`` and ``hi``): windows
    meant in steps, whatever the run's logging cadence."""
    st = track.steps
    if len(st) < 2:
        return lo
    spacing = max((st[-1] - st[0]) / (len(st) - 1), 1e-9)
    return max(lo, min(hi, math.ceil(steps / spacing)))


def turn_up(values: list[float], w: int, min_rise: float, accel: float = 1.5, z: float = 3.0,
            sigma: float = 0.0) -> tuple[float, float, float, float] | None:
    """``(a, b, c, noise)`` when the last ``w`` values (median ``c``) rose above the ``w`` before (``b``) by more
    than ``min_rise`` and by more than ``accel`` x the rise of the ``w`` before those (``a`` -> ``b``) plus ``z``
    noise units: a series that *turned* upwards. A series that has been climbing at a steady or slowing pace all
    along (a healthy KL, a reasoning run's length) does not turn. The rise is counted from the higher of the two
    earlier windows (a series that dipped and came back to where it was has not turned), and ``noise`` is the
    standard error of a difference of two window medians (:func:`median_diff_noise`), so ``z`` means what it
    says however few values a window holds. ``sigma``: the noise of one value measured over a longer stretch
    (a MAD of 30 values is itself noisy and now and then says "quiet" of a noisy series); the larger one counts."""
    if len(values) < 3 * w:
        return None
    parts = (values[-3 * w : -2 * w], values[-2 * w : -w], values[-w:])
    a, b, c = (median(part) for part in parts)
    noise = max(median_diff_noise(parts, (a, b, c)), sigma * 1.2533 * math.sqrt(2.0 / w))
    rise = c - max(a, b)
    if rise > min_rise and rise > accel * max(b - a, 0.0) + z * noise:
        return a, b, c, noise
    return None


def median_diff_noise(parts: tuple[list[float], ...], medians: tuple[float, ...]) -> float:
    """Standard error of the difference of two medians of windows like ``parts``: the values' robust spread
    (1.4826 x MAD around each window's median, pooled) x 1.2533 (a median's efficiency) x sqrt(2 / window).
    What a noisy series' window medians wander by with nothing happening."""
    resid = [abs(v - m) for part, m in zip(parts, medians) for v in part]
    w = min(len(part) for part in parts)
    return 1.4826 * median(resid) * 1.2533 * math.sqrt(2.0 / max(w, 1))


LR_KEY = "actor/lr"  # the learning rate's canonical key (TRL's ``learning_rate``): the critical gate reads its warm-up
LEVEL_JUMP = 30.0  # a one-time change of a series' level by this factor or more: a new unit or a new setting
SETTLE_STEPS = 50  # the most steps after the lr warm-up's peak that still count as its settling (:func:`lr_unsettled`)
REGIME_VALUES = 20  # values a series must have kept its new level for, after such a change, to have settled there


def lr_unsettled(lr: Track | None, step: int) -> str | None:
    """Why ``step`` is still in the run's lr warm-up or its settling (None if it is not): the lr started under half its
    peak and reached that peak less than one warm-up's length before ``step``. KL and update sizes move most while
    the lr climbs and in the first steps at its peak; a run's level there is no failure yet (a warning may say so)."""
    if lr is None or lr.n < 3 or lr.n > len(lr.values):  # no lr, or its first values are no longer kept
        return None
    v = lr.values
    peak = max(v)
    if not peak > 0.0 or not v[0] < 0.5 * peak:
        return None
    top = next(i for i, x in enumerate(v) if x >= 0.99 * peak)
    ramp = [b - a for a, b in zip(list(v)[:top], list(v)[1:top + 1])]
    # a warm-up climbs from the first step in small steps; an lr that jumps, or sat flat and then rose, is no warm-up
    if not ramp or max(ramp) > 0.25 * peak or sum(d > 0.0 for d in ramp) < 0.8 * len(ramp):
        return None
    reached = lr.steps[top]
    if step > reached + min(max(reached - lr.steps[0], 1), SETTLE_STEPS):
        return None
    return f"the lr warm-up (the lr reached its peak at step {reached}) is not settled yet"


def unit_factor(before: list[float], after: list[float], ratio: float) -> bool:
    """Whether ``after`` is ``before`` in other units: both means of counts on a grid (:func:`smallest_step`, the
    values whole multiples of it), the grid's step grown by a power of ten (or 1024) to within 2 %, and the level by
    about as much (``ratio``, within 1.5x). A score logged in percent from some step on; a KL or a gradient norm that
    jumps 100x has no grid and stays a failure."""
    qb, qa = smallest_step(before), smallest_step(after)
    if qb <= 0.0 or qa <= 0.0 or any(abs(x / qb - round(x / qb)) > 0.02 for x in before) \
            or any(abs(x / qa - round(x / qa)) > 0.02 for x in after):
        return False
    grid = max(qa / qb, qb / qa)
    decades = math.log10(grid)
    return (abs(decades - round(decades)) <= 0.01 or abs(grid / 1024 - 1) <= 0.02) and grid > 1.5 \
        and grid / 1.5 <= ratio <= grid * 1.5


def level_jump(track: Track) -> str | None:
    """Why ``track``'s departure looks like a change of units or settings rather than a failure (None if it does not):
    its values changed level once, at once (the first values after the change already at the new level), by
    ``LEVEL_JUMP`` x or more, and then behaved: either the same counts in other units (:func:`unit_factor`: a score
    logged in percent from some step on), or a level kept for ``REGIME_VALUES`` values or more without
    rising further (a setting switched mid-run: clipping switched off). A failure keeps moving; a new unit does not.
    O(n) in the kept values: called only when a detector asks for a critical."""
    v = list(track.values)
    n = len(v)
    if n < 8:
        return None
    acc = [0.0]
    for x in v:
        acc.append(acc[-1] + x)
    j = max(range(5, n - 2), key=lambda i: abs((acc[n] - acc[i]) / (n - i) - acc[i] / i) * math.sqrt(i * (n - i)))
    before, after = v[max(0, j - 30):j], v[j:]
    mb, ma = sum(before) / len(before), sum(after) / len(after)
    lo, hi = sorted((abs(mb), abs(ma)))
    mid = 0.5 * (mb + ma)
    side = 1.0 if ma > mb else -1.0
    if not hi >= LEVEL_JUMP * lo or side * (sum(after[:3]) / len(after[:3]) - mid) <= 0 \
            or side * (sum(before[-3:]) / len(before[-3:]) - mid) >= 0:
        return None
    where = f"{track.raw} changed level at once at step {track.steps[j]}, {fmt(mb)} -> {fmt(ma)}"
    third = max(len(after) // 3, 1)
    first, last = sum(after[:third]) / third, sum(after[-third:]) / third
    if len(after) >= REGIME_VALUES and 0.5 * abs(first) <= abs(last) <= 2.0 * abs(first):
        return f"{where}, and has kept that level since (a setting or unit changed, not a failure building up)"
    if lo > 0.0 and len(after) >= 3 and unit_factor(before, after, hi / lo):
        return f"{where} ({fmt(hi / lo)}x, its values on a grid as many times coarser): a change of units, not a failure"
    return None


class DetectorContext:
    """What every detector of one monitor shares: tracks, the run config and recent sample excerpts."""

    def __init__(self, view: RunConfigView) -> None:
        self.view = view
        self.tracks: dict[str, Track] = {}
        self.excerpts: list[dict[str, Any]] = []  # worst samples of the latest analysed sample step
        self.excerpt_step: int | None = None
        self.sample_rewards: deque[float] = deque(maxlen=512)  # individual rewards of recent samples
        self._prefix_memo: dict[tuple[str, ...], tuple[int, bool]] = {}
        self._keyset_memo: dict[str, tuple[int, Any]] = {}

    def track(self, key: str) -> Track | None:
        return self.tracks.get(key)

    def logs_prefix(self, prefixes: tuple[str, ...]) -> bool:
        """Whether the run logged a key starting with one of ``prefixes``; looked up again only when a new key
        appears (tracks are never removed), since detectors ask this on every step."""
        seen = self._prefix_memo.get(prefixes)
        if seen is not None and seen[0] == len(self.tracks):
            return seen[1]
        found = any(k.startswith(prefixes) for k in self.tracks)
        self._prefix_memo[prefixes] = (len(self.tracks), found)
        return found

    def per_keyset(self, name: str, build: Callable[[DetectorContext], Any]) -> Any:
        """``build(self)``, built again only when a new key appears (tracks are never removed): for what detectors
        derive from which keys the run logs (the tracks of a family of keys), asked on every step."""
        seen = self._keyset_memo.get(name)
        if seen is not None and seen[0] == len(self.tracks):
            return seen[1]
        value = build(self)
        self._keyset_memo[name] = (len(self.tracks), value)
        return value

    def max_response_length(self) -> float | None:
        return self.view.number("data.max_response_length")

    def has_gpu(self) -> bool:
        """Whether this run shows a GPU: a GPU series logged (utilisation, memory; CUDA's peak-memory counters) or
        ``trainer.device=cuda``. Texts never talk about a GPU on a run that has none."""
        if str(self.view.get("trainer.device") or "").lower() == "cuda":
            return True
        if self.view.framework == "verl" and (self.view.number("trainer.n_gpus_per_node") or 0) > 0:
            return True  # a verl job: verl trains on accelerators only
        return self.logs_prefix(GPU_HINTS)


class Detector:
    """Base class. Subclasses set ``name``, ``keys`` (canonical metrics it reads), ``defaults`` (documented
    thresholds) and implement :meth:`check`; optionally ``triggers`` (the keys whose logging runs ``check``;
    default ``keys[0]``), ``story``/``role`` (see :mod:`rlcockpit.health.stories`), ``cause`` (the generic
    probable cause) and :meth:`advise` / :meth:`chain_text`.

    Common settings: ``enabled`` (default true), ``warmup`` (observations of the trigger metric before the
    detector may fire) and ``cooldown`` (quiet steps that end an event). An event is reported once: while the
    detector's condition keeps holding (no gap longer than ``cooldown`` steps, nor than ``COOLDOWN_LOGS`` logging
    intervals of its trigger metric, between two steps where it held) the
    same or a lower severity is not repeated, and an escalation (warning -> critical) is reported with the
    event's first step as its start, so its step range grows instead of a new finding every ``cooldown`` steps.
    """

    name: ClassVar[str] = ""
    keys: ClassVar[tuple[str, ...]] = ()
    triggers: ClassVar[tuple[str, ...] | None] = None  # None: keys[0] alone
    prefixes: ClassVar[tuple[str, ...]] = ()  # metric families tracked for this detector (``timing_s/``)
    common: ClassVar[dict[str, Any]] = {"enabled": True, "warmup": 10, "cooldown": 30}
    defaults: ClassVar[dict[str, Any]] = {}
    story: ClassVar[str | Story] = "other"  # the root-cause story this detector's findings belong to
    role: ClassVar[str] = "mechanism"  # "outcome" (what the user sees) or "mechanism" (what led there)
    cause: ClassVar[str] = ""  # generic probable cause, ranked below evidence- and config-based ones
    # a new warning event needs the trigger metric above the peak of the events before it (:meth:`fire`)
    recurrence_gate: ClassVar[bool] = False
    # the setting (``"every"``) whose value N lets :meth:`check` run on one observation in N only (:meth:`gate`)
    due_every: ClassVar[str] = ""

    def __init__(self, params: Mapping[str, Any] | None, ctx: DetectorContext) -> None:
        merged = {**self.common, **self.defaults}
        for key, value in (params or {}).items():
            if key not in merged:
                known = ", ".join(sorted(merged))
                raise ValueError(f"health setting {self.name}.{key} is unknown; known settings: {known}")
            merged[key] = value
        self.p = merged
        self.ctx = ctx
        self.enabled = bool(merged["enabled"])
        self.warmup = int(merged["warmup"])
        self.cooldown = int(merged["cooldown"])
        self.seen = 0
        self._last_fire_step: int | None = None
        self._last_rank = -1
        self._last_start: int | None = None
        self._episode: int | None = None  # first step of the event now being reported
        self._event_peak = -math.inf  # the trigger metric's highest value at a step the current event held
        self._past_peak: float | None = None  # ... and over the events before it (``recurrence_gate``)
        self._streak = 0
        self._doubts: dict[str, tuple[int, str | None]] = {}  # :meth:`critical_doubt`'s verdict per series and length
        # detectors that do their expensive work every N steps are staggered by a fixed per-name phase, so
        # they do not all sort their windows on the same step (that made every 5th/10th step the slow one)
        self._phase = zlib.crc32(self.name.encode()) & 0xFFFF
        self.plain_observe = type(self).observe is Detector.observe  # the monitor may inline observe()

    @classmethod
    def trigger_keys(cls) -> tuple[str, ...]:
        """The canonical keys whose logging at a step runs this detector's check."""
        return cls.triggers if cls.triggers is not None else cls.keys[:1]

    @classmethod
    def story_of(cls) -> Story:
        return resolve_story(cls.story)

    @classmethod
    def chain_text(cls, finding: Finding) -> str:
        """This finding as one link of a root-cause chain."""
        return f"{finding.title} (step {finding.step_start})"

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        """Ranked probable causes and config changes for ``finding``. The default: the config causes of this
        detector's story, then the generic ``cause``; no actions. Built-in detectors rank causes from the
        finding's evidence (what else moved in this run at the same time) and suggest overrides."""
        from rlcockpit.health.advice import ranked, story_causes

        causes = story_causes(self.ctx.view, self.story_of().config)
        if self.cause:
            causes.append(Cause(self.cause, 0.4))
        return ranked(causes), []

    def due(self, every: int) -> bool:
        """True on one of every ``every`` observations (phase-shifted per detector)."""
        return every <= 1 or (self.seen + self._phase) % every == 0

    def gate(self) -> int:
        """The ``every`` of a detector whose whole :meth:`check` runs on one observation in ``every`` (its
        ``due_every`` setting; 1: every observation). :meth:`observe` asks :meth:`due` before it calls
        :meth:`check`, and the monitor does the same inline: a detector that is not due costs no call."""
        return max(1, self.p[self.due_every]) if self.due_every else 1

    def observe(self, step: int) -> Finding | None:
        """Called by the monitor when ``keys[0]`` was logged at ``step``. (For detectors that keep this method,
        the monitor runs the same lines inline: one Python call less per detector and step.)"""
        self.seen += 1
        if self.seen <= self.warmup + 1 and not self.warming(self.seen):
            return None
        if self.due_every and not self.due(self.gate()):
            return None
        return self.check(step)

    def warming(self, seen: int) -> bool:
        """:meth:`observe` on the ``seen``-th observation, ``seen`` at most ``warmup`` + 1: fits the warm-up to the
        logging cadence on the ``ADAPT_AT``-th, calls :meth:`on_warm` on the first after the warm-up; whether
        :meth:`check` runs (False during the warm-up)."""
        warmup = self.warmup
        if seen <= warmup:
            if seen == ADAPT_AT:
                self.adapt_warmup()
                warmup = self.warmup
            if seen <= warmup:
                return False
        if seen == warmup + 1:
            self.on_warm()
        return True

    def adapt_warmup(self) -> None:
        """Called on the ``ADAPT_AT``-th observation: a warm-up of N observations means N steps of a run that
        logs every step, but N x 10 steps of one that logs every tenth — past the failure onsets of a short run.
        So the warm-up is capped at the observations covering ``warmup`` steps (never fewer than ``ADAPT_AT``)."""
        track = self.ctx.tracks.get(self.keys[0]) if self.keys else None
        if track is None or track.n < 2 or self.warmup <= ADAPT_AT:
            return
        spacing = (track.last_step - track.steps[0]) / (len(track.steps) - 1)
        if spacing > 1.0:
            self.warmup = max(ADAPT_AT, min(self.warmup, math.ceil(self.warmup / spacing)))

    def on_warm(self) -> None:
        """Called once, on the first observation after the warm-up, before that step's :meth:`check`."""

    def check(self, step: int) -> Finding | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self, step: int) -> Finding | None:
        """End of run: detectors that judge whole windows may report here."""
        return None

    def sustained(self, condition: bool, needed: int) -> bool:
        """True once ``condition`` held on ``needed`` consecutive checks."""
        self._streak = self._streak + 1 if condition else 0
        return self._streak >= needed

    def quiet_span(self) -> int:
        """The steps without the condition that end an event: ``cooldown``, and at least ``COOLDOWN_LOGS`` of the
        trigger metric's logging intervals. A run that logs every tenth step shows a 30-step gap as two quiet
        points: one logged value of a long episode dipping under a bar is no end of the episode, and raising it
        again would report one event as many."""
        track = self.ctx.tracks.get(self.keys[0]) if self.keys else None
        if track is None or len(track.steps) < 2:
            return self.cooldown
        st = track.steps
        spacing = (st[-1] - st[0]) / (len(st) - 1)
        return max(self.cooldown, math.ceil(COOLDOWN_LOGS * spacing))

    def repeats(self, step: int, severity: str, step_start: int | None = None) -> bool:
        """Whether :meth:`fire` with these arguments would say nothing (the same event, raised already); if so it
        records the step as that call of :meth:`fire` would, so the caller returns None instead. A rule that fires
        on every step of a long event asks this before it formats a title: its repeats (most calls) then cost no
        string formatting. When it says False, nothing is recorded: the caller's :meth:`fire` does it all."""
        if self._repeat(step, severity_rank(severity), step_start):
            self._last_fire_step = step
            if self.recurrence_gate:
                self._event_peak = max(self._event_peak, self._gate_level())
            return True
        return False

    def _gate_level(self) -> float:
        """The trigger metric's newest value (the recurrence gate's measure)."""
        track = self.ctx.tracks.get(self.keys[0]) if self.keys else None
        return track.last if track is not None and track.n else math.nan

    def _recurs(self, severity: str, new_event: bool) -> bool:
        """The recurrence gate (``recurrence_gate``): whether a new warning event is one the run already had and
        recovered from, the trigger metric no higher than the peak of the events before (said nothing; nothing is
        recorded, so the event is raised once it goes past that peak, or escalates to a critical). A run whose
        answers ran long for 60 steps and came back has shown that episode as its own noise: a smaller one later is
        not news. Updates the peaks otherwise. An info (a standing setting noted once) is no episode: not judged,
        not counted."""
        if severity == "info":
            return False
        level = self._gate_level()
        if not new_event:
            self._event_peak = max(self._event_peak, level)
            return False
        if self._last_fire_step is not None:  # an event ended before this one: its peak joins the past
            self._past_peak = max(self._past_peak if self._past_peak is not None else -math.inf, self._event_peak)
        if severity == "warning" and self._past_peak is not None and level <= self._past_peak:
            return True
        self._event_peak = level
        return False

    def _repeat(self, step: int, rank: int, step_start: int | None) -> bool:
        """The suppression rule of :meth:`fire` (the class docstring's "an event is reported once")."""
        last = self._last_fire_step  # the last step this detector's condition held (raised or not)
        if last is None:
            return False
        if step - last <= self.quiet_span() and self._episode is not None:
            return rank <= self._last_rank  # the same still-running event: raised once, re-raised on escalation
        # the same event, reported again after a pause
        return rank <= self._last_rank and step_start is not None and step_start == self._last_start

    def critical_doubt(self, step: int, metric: str | None = None) -> str | None:
        """Why a critical this detector asks for at ``step`` is not yet one (None: it is). The one gate every
        detector's critical passes (issue 29: a critical needs magnitude plus persistence, or an unambiguous event;
        each detector's own rule holds the magnitude and persistence against the run's noise): not during the lr
        warm-up or its settling (:func:`lr_unsettled`), nor on a series of this detector that changed level once and
        then behaved (:func:`level_jump`: a new unit or setting). Judged once per new value of a series."""
        tracks = self.ctx.tracks
        why = lr_unsettled(tracks.get(LR_KEY), step)
        if why is not None:
            return why
        for key in dict.fromkeys((metric, *self.keys)):
            track = tracks.get(key) if key else None
            if track is None or track.n < 8:
                continue
            memo = self._doubts.get(key)
            if memo is None or memo[0] != track.n:
                memo = self._doubts[key] = (track.n, level_jump(track))
            if memo[1] is not None:
                return memo[1]
        return None

    def fire(
        self,
        step: int,
        severity: str,
        title: str,
        summary: str = "",
        *,
        metric: str | None = None,
        values: Mapping[str, Any] | None = None,
        step_start: int | None = None,
        extra_keys: tuple[str, ...] = (),
        samples: bool = False,
        event: bool = False,
    ) -> Finding | None:
        """Build a finding unless the cooldown suppresses it (cheap when suppressed). A critical goes through
        :meth:`critical_doubt` unless ``event`` says it is an unambiguous event (a non-finite value, output or
        entropy collapsed to near nothing): one in doubt is raised as a warning saying why."""
        doubt = None
        if severity == "critical" and not event:
            doubt = self.critical_doubt(step, metric)
            if doubt is not None:
                severity = "warning"
                summary = f"{summary} Held at a warning: {doubt}.".strip()
                values = {**(values or {}), "critical_withheld": doubt}
        rank = severity_rank(severity)
        if self._repeat(step, rank, step_start):
            self._last_fire_step = step
            if self.recurrence_gate:
                self._event_peak = max(self._event_peak, self._gate_level())
            return None
        last = self._last_fire_step
        continuing = last is not None and step - last <= self.quiet_span() and self._episode is not None
        if self.recurrence_gate and self._recurs(severity, not continuing):
            return None
        self._last_fire_step = step
        if continuing:
            step_start = min(self._episode, step_start if step_start is not None else step)  # its range grows
        else:
            self._episode = step_start if step_start is not None else step
        self._last_rank, self._last_start = rank, step_start
        metrics: dict[str, list[list[float]]] = {}
        for key in (*self.keys, *extra_keys):
            track = self.ctx.tracks.get(key)
            if track is not None and track.n:
                metrics[track.raw] = track.points()  # under the name the run logged
        evidence: dict[str, Any] = {"metrics": metrics, "values": dict(values or {})}
        if samples and self.ctx.excerpts:
            evidence["samples"] = list(self.ctx.excerpts)
            evidence["samples_step"] = self.ctx.excerpt_step
        finding = Finding(
            detector=self.name,
            severity=severity,
            step=step,
            title=title,
            summary=summary,
            step_start=step_start if step_start is not None else step,
            metric=_logged_name(self.ctx.tracks, metric or next((k for k in self.keys if k in self.ctx.tracks),
                                                                self.keys[0] if self.keys else None)),
            evidence=evidence,
        )
        self.ctx.view.revalidate()
        finding.causes, actions = self.advise(finding)
        finding.actions = checked_last(actions)
        return finding


def _logged_name(tracks: Mapping[str, Track], key: str | None) -> str | None:
    """``key`` as the run logged it (``reward`` for TRL's critic/score/mean): findings speak the run's words."""
    track = tracks.get(key) if key else None
    return track.raw if track is not None else key


class FrozenBaseline(Detector):
    """A detector whose baseline is the robust median/scale of the trigger metric at warm-up end."""

    base_rel_floor = 0.05

    def __init__(self, params: Mapping[str, Any] | None, ctx: DetectorContext) -> None:
        super().__init__(params, ctx)
        self.base: float | None = None
        self.scale = math.nan

    def on_warm(self) -> None:
        track = self.ctx.tracks[self.keys[0]]
        self.base, self.scale = robust(track.tail(self.warmup, skip=1), self.base_rel_floor)



class StartReferenced(Detector):
    """A detector that also judges its warm-up, against the run's first logged value of its trigger metric
    (``self._start``: the policy before any update). Why: a collapse within the first steps (a far too high lr)
    would otherwise become the baseline the rest of the run is judged by. Subclasses implement
    :meth:`check_early` (the warm-up observations after the first) and :meth:`check` (after the warm-up)."""

    def __init__(self, params: Mapping[str, Any] | None, ctx: DetectorContext) -> None:
        super().__init__(params, ctx)
        self._start = math.nan

    def observe(self, step: int) -> Finding | None:
        self.seen += 1
        if self.seen == ADAPT_AT:
            self.adapt_warmup()
        if self.seen > self.warmup:
            return self.check(step)
        track = self.ctx.tracks[self.keys[0]]
        if self._start != self._start:
            self._start = track.last
            return None
        return self.check_early(step, track)

    def check_early(self, step: int, track: Track) -> Finding | None:  # pragma: no cover - abstract
        raise NotImplementedError

DETECTORS: Registry[type[Detector]] = Registry("detector")


def fmt(value: float) -> str:
    """Compact number for titles: 3 significant digits."""
    if value != value or value in (math.inf, -math.inf):
        return str(value)
    return f"{value:.3g}"


def versus(ref: float, actual: float, what: str, over: str = "") -> str:
    """The reference a ratio was taken against, in words a person checks in one look: ``its <what> <actual><over>``,
    or, where the reference was floored above the run's own level (a series at or near 0 has no level a ratio means
    anything against), ``<ref>, the floor of the reference: its <what> <actual><over> is below it``: never "1884x its
    earlier level" of a 0."""
    if ref <= actual:
        return f"its {what} {fmt(actual)}{over}"
    return f"{fmt(ref)}, the floor of the reference: its {what} {fmt(actual)}{over} is below it"


def register_detector(name: str, *aliases: str):
    """Class decorator: registers a :class:`Detector` in ``DETECTORS`` and sets its ``name``.

    Users add their own detectors the same way; they run in every ``HealthMonitor`` created afterwards.
    """

    def deco(cls: type[Detector]) -> type[Detector]:
        cls.name = name
        DETECTORS.add(name, cls, *aliases)
        return cls

    return deco
