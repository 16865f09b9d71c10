"""``lr_schedule``'s jump rule and cosine schedules with hard restarts (issue 29, branch h-quiet17). TRL's
``cosine_with_restarts`` decays each cycle to near 0 and starts the next at the peak in one step: the twenty-second
pass's healthy ``llamas12-1prompt-16gen-bnpo-cosrestarts2-warm10-300`` (trl_cpu_settings16) goes 5.87e-9 -> 5e-5 at
156, and the seventeenth pass's healthy ``gpt2s7-4prompt-4gen-iter3-cosinerestarts3-warmup20-600-log3-eval20``
(trl_cpu_settings11) 5.87e-9 -> 5e-5 at 216 and 2.35e-8 -> 5e-5 at 408: each was warned of as "lr jumped up after it
had decayed". A restart from a trough under 1% of the peak back to the peak the lr first fell from is the schedule;
a jump from the middle of a decay (a scheduler reset by a resume), or past the peak, is still warned of."""

from __future__ import annotations

import math

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def lr_alerts(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "lr_schedule"]


def test_the_real_hard_restart_runs_are_quiet():
    for suffix, source in (("healthy-llamas12-1prompt-16gen-bnpo-cosrestarts2-warm10-300", "trl_cpu_settings16"),
                           ("healthy-gpt2s7-4prompt-4gen-iter3-cosinerestarts3-warmup20-600-log3-eval20",
                            "trl_cpu_settings11")):
        assert lr_alerts(replay(real_run(suffix, source=source), samples=False)) == [], suffix


def hard_restarts(s: int, cycles: int = 3, steps: int = 600, peak: float = 5e-5, warm: int = 20) -> float:
    if s <= warm:
        return peak * s / warm
    length = (steps - warm) / cycles
    phase = ((s - warm) % length) / length
    return peak * 0.5 * (1 + math.cos(math.pi * phase))


def test_cosine_with_hard_restarts_is_quiet():
    assert lr_alerts(run([(s, {"actor/lr": hard_restarts(s), "actor/entropy": 1.0}) for s in range(1, 601)])) == []


def test_a_jump_back_to_the_peak_from_the_middle_of_the_decay_is_still_warned():
    def reset(s: int) -> float:  # a one-cycle cosine whose scheduler is reset at 450 (lr ~8e-6 there, 16% of the peak)
        return hard_restarts(s if s < 450 else s - 430, cycles=1)
    hits = lr_alerts(run([(s, {"actor/lr": reset(s), "actor/entropy": 1.0}) for s in range(1, 601)]))
    assert hits and hits[0] == 450, hits


def test_a_restart_from_the_trough_past_the_peak_is_still_warned():
    def doubled(s: int) -> float:  # each restart at twice the peak of the cycle before
        return hard_restarts(s) * 2 ** int((s - 20) // ((600 - 20) / 3)) if s > 20 else hard_restarts(s)
    hits = lr_alerts(run([(s, {"actor/lr": doubled(s), "actor/entropy": 1.0}) for s in range(1, 601)]))
    assert hits and hits[0] == 214, hits
