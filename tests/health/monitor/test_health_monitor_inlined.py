"""``HealthMonitor.observe`` runs ``Track.push`` and ``Detector.observe`` inline (they run for every logged key
and every detector of every step). These tests hold the copies to the originals: the same stream fed through the
inlined paths and through the methods themselves leaves the same tracks and detector state and fires the same
findings, on healthy and failing runs, with non-finite and non-numeric values and irregular logging."""

from __future__ import annotations

import math

import pytest

from rlcockpit.health import HealthMonitor
from rlcockpit.health.base import Track
from rlcockpit.health.synthetic import make_trace

KINDS = ("healthy_grpo", "healthy_ppo", "collapse", "entropy_collapse", "grad_spike", "oom_creep", "loss_divergence",
         "throughput_drop")


def _stream(kind: str) -> list[tuple[int, dict[str, object]]]:
    """A synthetic trace, logged every step at first and every third step later (warm-ups adapt to the cadence),
    with a NaN, an infinity and a string slipped in."""
    out: list[tuple[int, dict[str, object]]] = []
    for step, metrics in make_trace(kind, seed=3, steps=160).metrics:
        if step > 60 and step % 3:
            continue
        row: dict[str, object] = dict(metrics)
        if step == 70:
            row["actor/grad_norm"] = math.nan
        if step == 90:
            row["actor/pg_loss"] = math.inf
        if step == 99:
            row["actor/entropy"] = "n/a"
        out.append((step, row))
    return out


def _findings(mon: HealthMonitor) -> list[tuple[str, str, int, str]]:
    return [(f.detector, f.severity, f.step, f.title) for f in mon.findings]


def _track_state(track: Track) -> tuple:
    return tuple(getattr(track, name) if name not in ("values", "steps") else list(getattr(track, name))
                 for name in Track.__slots__)


@pytest.mark.parametrize("kind", KINDS)
def test_inlined_detector_observe_matches_the_method(kind):
    """A monitor whose detectors all go through ``Detector.observe`` (``plain_observe`` off) gives the same
    findings, seen counts, warm-ups and checks as the one running the inlined copy."""
    inlined, reference = HealthMonitor(), HealthMonitor()
    for det in reference.detectors:
        det.plain_observe = False
    assert any(det.plain_observe for det in inlined.detectors), "nothing is inlined any more: drop this test"
    for step, row in _stream(kind):
        assert _findings_of(inlined.observe(step, row)) == _findings_of(reference.observe(step, row)), (kind, step)
    assert _findings(inlined) == _findings(reference)
    assert [(d.name, d.seen, d.warmup) for d in inlined.detectors] == \
           [(d.name, d.seen, d.warmup) for d in reference.detectors]
    if not kind.startswith("healthy"):
        assert inlined.findings, f"{kind}: the stream should fire something, or this test compares nothing"


def _findings_of(found) -> list[tuple[str, str, int, str]]:
    return [(f.detector, f.severity, f.step, f.title) for f in found]


@pytest.mark.parametrize("kind", KINDS[:4])
def test_inlined_track_push_matches_the_method(kind):
    """Every track the monitor filled inline holds what ``Track.push`` would have put there: the same values,
    steps, count, last value and step (every slot of ``Track``)."""
    mon = HealthMonitor()
    reference: dict[str, Track] = {}
    for step, row in _stream(kind):
        mon.observe(step, row)
        plan = mon._plans[tuple(row)]
        for raw, key, track, agg_key in plan.entries:
            value = row[raw]
            try:
                value = float(value)
            except (TypeError, ValueError):
                continue
            if agg_key is None and math.isfinite(value):
                ref = reference.setdefault(key, Track(key, maxlen=track.values.maxlen, raw=track.raw))
                Track.push(ref, step, value)
    assert reference, "no key went through the inlined push"
    for key, ref in reference.items():
        assert _track_state(mon.ctx.tracks[key]) == _track_state(ref), key


@pytest.mark.parametrize("name", ["kl_stuck", "loss_plateau", "reward_stagnation", "explained_variance"])
def test_a_detector_that_is_not_due_is_not_called(name):
    """A detector whose whole check runs on one observation in ``every`` (``due_every``) is called only when due:
    the monitor asks the stagger test inline (the copies in each check are gone), and ``Detector.observe`` asks it
    the same way, so both paths call ``check`` on the same observations."""
    inlined, reference = HealthMonitor(), HealthMonitor()
    calls: dict[str, list[int]] = {"inlined": [], "reference": []}
    for label, mon in (("inlined", inlined), ("reference", reference)):
        det = next(d for d in mon.detectors if d.name == name)
        if label == "reference":
            det.plain_observe = False
        check = det.check

        def counted(step, check=check, into=calls[label]):
            into.append(step)
            return check(step)

        det.check = counted
        every = det.p["every"]
        assert every > 1
    rows = make_trace("healthy_ppo", seed=3, steps=200).metrics
    for step, row in rows:
        inlined.observe(step, row)
        reference.observe(step, row)
    det = next(d for d in inlined.detectors if d.name == name)
    assert calls["inlined"], f"{name} was never called: this test compares nothing"
    assert calls["inlined"] == calls["reference"]
    # one call in ``every`` observations after the warm-up, not one per observation
    assert len(calls["inlined"]) <= (det.seen - det.warmup) // det.p["every"] + 1
