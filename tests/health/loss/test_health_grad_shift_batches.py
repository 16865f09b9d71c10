"""``grad_spike``'s level-shift rule counts distinct batches (issue 29, trl_cpu_settings18). Under TRL's
``num_iterations=2`` each generated batch is trained on for two optimiser steps and logged at both, with nearly the
same gradient norm: on a healthy Llama run (clip epsilon 0 from step 100, stored healthy) two batches in a row had a
high norm (16.4, 14.4 and 14.0, 14.3 at steps 27-30, against a median of 3.0) and the rule read them as four steps
held at a new level, a warning at 30. The same two batches logged once each are two steps: no shift. Four batches
held at the new level (eight logged steps, 121-128) are one. Fails on dea7e66 (the warning at 30; the two doubled batches of
the synthetic run warned of)."""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay, replay_stream


def shift_alerts(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "grad_spike" and f.severity in ("warning", "critical")
            and f.title.startswith("Gradient norm shifted")]


def doubled(seed: int, high_batches: range) -> list:
    """TRL's keys, each batch logged on two consecutive steps (``num_iterations=2``): a norm around 3 (log noise 0.3)
    and 15 on the batches in ``high_batches``; the KL (logged with it, where the repeat is seen) around 0.02."""
    rng = random.Random(seed)
    out = []
    for batch in range(150):
        norm = (15.0 if batch in high_batches else 3.0) * math.exp(rng.gauss(0, 0.3))
        kl = 0.02 * math.exp(rng.gauss(0, 0.4))
        for i in range(2):
            out.append((2 * batch + i + 1, {"grad_norm": norm * (1 + 0.01 * i), "kl": kl * (1 + 0.02 * i),
                                            "reward": 0.4 + rng.gauss(0, 0.05)}))
    return out


def test_two_high_batches_logged_twice_each_are_no_level_shift():
    for seed in range(4):
        assert shift_alerts(replay_stream(doubled(seed, range(60, 62)))) == [], seed


def test_a_level_held_over_four_batches_is_still_a_shift():
    for seed in range(4):
        hits = shift_alerts(replay_stream(doubled(seed, range(60, 150))))
        assert hits and 128 <= hits[0] <= 135, (seed, hits)


def test_the_clip_epsilon_zero_run_has_no_level_shift_at_30():
    trace = real_run("healthy-llamas14-2prompt-4gen-numiter2-clipeps0-from100-250", source="trl_cpu_settings18")
    assert shift_alerts(replay(trace)) == []
