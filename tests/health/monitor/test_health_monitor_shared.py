"""Work shared across a step's detectors or skipped when it cannot change an answer (issue 29's cost bar): what is
derived from the run's key set is rebuilt when a key appears, the bottleneck split sees phases logged later, and
held_out_drop measures a held-out score's noise only when a value is under its range's floor."""

from __future__ import annotations

import pytest

from rlcockpit.health import HealthMonitor
from rlcockpit.health.base import DetectorContext, Track
from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.detectors import heldout
from rlcockpit.health.detectors.system import attribute_bottleneck


def _ctx() -> DetectorContext:
    return DetectorContext(RunConfigView({}))


def _push(ctx: DetectorContext, step: int, **values: float) -> None:
    for key, value in values.items():
        key = key.replace("__", "/")
        ctx.tracks.setdefault(key, Track(key)).push(step, value)


def test_per_keyset_is_rebuilt_only_when_a_key_appears():
    ctx, built = _ctx(), []
    build = lambda c: built.append(len(c.tracks)) or sorted(c.tracks)  # noqa: E731
    _push(ctx, 1, a=1.0)
    assert ctx.per_keyset("keys", build) == ["a"]
    _push(ctx, 2, a=2.0)  # a new value, no new key: the same answer, not built again
    assert ctx.per_keyset("keys", build) == ["a"] and built == [1]
    _push(ctx, 3, b=1.0)
    assert ctx.per_keyset("keys", build) == ["a", "b"] and built == [1, 2]


def test_bottleneck_split_sees_a_phase_first_logged_later_and_only_this_steps_phases():
    ctx = _ctx()
    _push(ctx, 1, timing_s__step=10.0, timing_s__gen=8.0)
    label, shares = attribute_bottleneck(ctx)
    assert label == "generation-bound" and shares["generation"] == pytest.approx(0.8)
    _push(ctx, 2, timing_s__step=10.0, timing_s__gen=2.0, timing_s__update_actor=7.0)  # a phase logged from step 2
    label, shares = attribute_bottleneck(ctx)
    assert label == "update-bound" and shares["update"] == pytest.approx(0.7)
    assert shares == attribute_bottleneck(_fresh(ctx))[1]  # the same split as a context that never cached one
    _push(ctx, 3, timing_s__step=10.0, timing_s__gen=9.0)  # the update phase not logged at step 3: not counted
    assert attribute_bottleneck(ctx)[0] == "generation-bound" and "update" not in attribute_bottleneck(ctx)[1]


def _fresh(ctx: DetectorContext) -> DetectorContext:
    fresh = _ctx()
    fresh.tracks.update(ctx.tracks)
    return fresh


def test_held_out_drop_measures_the_noise_only_under_the_range_floor(monkeypatch):
    calls = []
    real = heldout.held_out_range
    monkeypatch.setattr(heldout, "held_out_range", lambda *a: calls.append(a[0].last) or real(*a))
    mon = HealthMonitor()
    found = []
    for step in range(60):  # a steady accuracy, evaluated every step, then two evaluations far under its range
        acc = 0.6 + 0.01 * (step % 3) if step < 58 else 0.3
        found += mon.observe(step, {"critic/score/mean": 0.5, "val-core/math/acc/mean@1": acc})
    assert calls and all(v == 0.3 for v in calls), calls  # in-range evaluations never sort a window
    assert [f.detector for f in found if f.severity == "warning"] == ["held_out_drop"]
