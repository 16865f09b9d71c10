"""``lr_schedule``'s climb rule and cyclic schedules (issue 29). The fifteenth pass's healthy
``llamas6-1prompt-7sample-klk1plus003-warmup50-cos1.5cyc-800-val7`` (rlcockpit_trainer_cpu10) runs a cosine of 1.5
cycles: its lr decays to near 0 and climbs back to its peak, which the climb rule (3x the lowest since the peak)
called "not following its schedule" at 429. A cyclic schedule (cosine with restarts, several cycles) climbs back to
the peak it first fell from; an lr ramp bug climbs past it."""

from __future__ import annotations

import math

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def lr_alerts(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "lr_schedule"]


def test_the_real_one_and_a_half_cycle_cosine_is_quiet():
    trace = real_run("healthy-llamas6-1prompt-7sample-klk1plus003-warmup50-cos1.5cyc-800-val7",
                     source="rlcockpit_trainer_cpu10")
    assert lr_alerts(replay(trace)) == []


def cyclic(s: int, cycles: float = 2.0, steps: int = 600, peak: float = 1e-4) -> float:
    if s <= 30:
        return peak * s / 30
    return peak * 0.5 * (1 + math.cos(2 * math.pi * cycles * (s - 30) / (steps - 30)))


def test_cosine_restarts_are_quiet_and_a_climb_past_the_peak_is_not():
    quiet = [(s, {"actor/lr": cyclic(s), "actor/entropy": 1.0}) for s in range(1, 601)]
    assert lr_alerts(run(quiet)) == []
    # the same schedule with a bug from step 300: the lr ramps 1.03x a step on top of it, past the first peak
    ramp = [(s, {"actor/lr": cyclic(s) * (1.03 ** max(0, s - 300)), "actor/entropy": 1.0}) for s in range(1, 601)]
    hits = lr_alerts(run(ramp))
    assert hits and hits[0] > 300, hits
