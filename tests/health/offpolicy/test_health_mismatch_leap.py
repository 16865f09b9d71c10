"""``rollout_mismatch`` warns of a mismatch that leaps off its early level and keeps growing from where it landed
(issue 29, h-lag18).

rlcockpit_trainer_cpu17 ``partialsync-lastblock``: from step 151 only part of the weights reach the rollout engine;
``training/rollout_probs_diff_mean`` leaves its bit-exact floor (5e-8) at 6e-5 and climbs to 8e-4 by step 158, still
under the ratio rules' floor (1e-3), which found it at 174. rlcockpit_trainer_cpu14 ``bf16rolloutlogits`` (healthy)
steps from 5e-8 to 5-9e-4 at step 150 and holds there: a new numerical floor, not a mismatch.
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

KEY = "training/rollout_probs_diff_mean"


def _mismatch(findings: list) -> list:
    return [f for f in findings if f.detector == "rollout_mismatch" and f.severity != "info"]


def test_weights_that_reach_the_engine_in_part_are_warned_near_the_leap():
    found = _mismatch(replay(real_run("partialsync-lastblock-from150-300-val22", "rlcockpit_trainer_cpu17")))
    assert found and 151 <= found[0].step <= 166, [(f.step, f.title) for f in found]
    assert found[0].step_start == 151 and "keeps growing" in found[0].title


def test_a_new_numerical_floor_that_holds_is_not_a_mismatch():
    trace = real_run("bf16rolloutlogits-from150-350-val20", "rlcockpit_trainer_cpu14")
    assert _mismatch(replay(trace)) == []


def _leap(grow: bool, seed: int = 5) -> list[tuple[int, dict[str, float]]]:
    """Bit-exact (5e-8) for 150 steps, then a leap: to 6e-4 held, or to 6e-5 growing ~15% a step up to 8e-4 (under
    the ratio rules' 1e-3 floor throughout)."""
    rng = random.Random(seed)

    def gap(step: int) -> float:
        if step < 150:
            level = 5e-8
        elif grow:
            level = min(6e-5 * 1.15 ** (step - 150), 8e-4)
        else:
            level = 6e-4
        return level * math.exp(0.3 * rng.gauss(0, 1))  # multiplicative noise, as the real runs' gap

    return [(s, {KEY: gap(s)}) for s in range(1, 301)]


def test_a_leap_that_keeps_growing_is_warned_from_the_leap():
    found = _mismatch(run(_leap(grow=True)))
    assert found and 150 <= found[0].step <= 165, [(f.step, f.title) for f in found]
    assert found[0].step_start == 150


def test_a_leap_that_holds_is_not_warned():
    assert _mismatch(run(_leap(grow=False))) == []
