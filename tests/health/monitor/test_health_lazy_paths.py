"""Work the per-step path defers until it is needed gives the answers the eager path gave: a :class:`FallBar` measured
only when a value comes near it, and :meth:`Detector.repeats`, asked before a rule formats a finding it may not raise
(issue 29, detector cost)."""

from __future__ import annotations

import math
import random

import pytest

from rlcockpit.health.base import Detector, DetectorContext, FallBar, Track, robust, tie_safe
from rlcockpit.health.config_view import RunConfigView


class _EagerBar:
    """The bar as it was measured before: at every refresh, whatever the next values are."""

    def __init__(self, scale, *, window, skip, min_window, z, drop, every):
        self.bar, self.ref, self.age = math.nan, (math.nan, math.nan), 0
        self.scale, self.window, self.skip, self.min_window = scale, window, skip, min_window
        self.z, self.drop, self.every = z, drop, every

    def above(self, track):
        if track.last < self.bar:
            return False
        self.age -= 1
        if self.age <= 0:
            self.age = self.every
            ref = track.tail(self.window, skip=self.skip)
            if len(ref) >= self.min_window:
                med, noise = self.scale(ref)
                self.bar, self.ref = med - max(self.z * noise, self.drop * med), (med, noise)
        return True


def _series(seed: int, n: int = 400) -> list[float]:
    """A positive noisy level with sudden falls, a slow slide and recoveries: values near and far from the bar."""
    rng = random.Random(seed)
    out, level = [], 1.0
    for i in range(n):
        if rng.random() < 0.02:
            level *= rng.choice([0.3, 0.6, 1.5, 2.0])
        level *= 0.999
        out.append(max(0.0, level * (1 + rng.gauss(0, rng.choice([0.01, 0.1, 0.3])))) if i % 50 else 0.0)
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("scale,z,drop", [(lambda r: robust(r, 0.02), 8.0, 0.3), (lambda r: tie_safe(r, 0.0), 3.0, 0.1),
                                          (lambda r: robust(r, 0.02), 2.0, 0.0), (lambda r: robust(r), 1.0, 1.5)])
def test_fall_bar_answers_as_the_eager_bar(seed, scale, z, drop):
    settings = {"window": 30, "skip": 3, "min_window": 15, "z": z, "drop": drop, "every": 5}
    lazy, eager, track = FallBar(scale, **settings), _EagerBar(scale, **settings), Track("x")
    values = _series(seed)
    if seed % 3 == 0:  # a series that goes negative: no bound, measured at every refresh as before
        values = [v - 0.5 for v in values]
    for step, v in enumerate(values):
        track.push(step, v)
        assert lazy.above(track) == eager.above(track), step
        if step % 23 == 0:  # reading the bar measures it: the same bar, from the same window
            assert _same((lazy.bar, *lazy.ref), (eager.bar, *eager.ref)), step


def _same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(x == y or (x != x and y != y) for x, y in zip(a, b))


def test_fall_bar_does_not_sort_a_window_no_value_comes_near():
    calls = []

    def scale(ref):
        calls.append(len(ref))
        return robust(ref, 0.02)

    bar, track = FallBar(scale, window=30, skip=3, min_window=15, z=8.0, drop=0.3, every=5), Track("entropy")
    for step in range(200):
        track.push(step, 1.0 + 0.01 * (step % 3))
        assert bar.above(track)
    assert calls == []  # every value stayed above 0.7 x the window's largest: no bar needed
    med, noise = robust(track.tail(30, skip=3), 0.02)  # every window of this series holds the same values
    assert bar.bar == med - max(8.0 * noise, 0.3 * med)  # read: measured now
    assert len(calls) == 1


class _Rule(Detector):
    name = "lazy_paths_probe"
    keys = ("x",)


@pytest.mark.parametrize("seed", range(20))
def test_repeats_says_what_fire_would_do(seed):
    """A rule that asks ``repeats`` first raises the same findings as one that always calls ``fire``, and leaves the
    detector in the same state after every call."""
    rng = random.Random(seed)
    ctx = DetectorContext(RunConfigView(None))
    ctx.tracks["x"] = Track("x")
    plain, gated = _Rule({"cooldown": 5}, ctx), _Rule({"cooldown": 5}, ctx)
    step = 0
    for _ in range(300):
        step += rng.choice([1, 1, 1, 2, 4, 9])
        ctx.tracks["x"].push(step, rng.random())
        severity = rng.choice(["info", "warning", "warning", "critical"])
        start = rng.choice([None, step, step - 3, 7])
        a = plain.fire(step, severity, "t", step_start=start)
        b = None if gated.repeats(step, severity, start) else gated.fire(step, severity, "t", step_start=start)
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.severity, a.step, a.step_start) == (b.severity, b.step, b.step_start)
        state = ("_last_fire_step", "_last_rank", "_last_start", "_episode")
        assert [getattr(plain, s) for s in state] == [getattr(gated, s) for s in state]
