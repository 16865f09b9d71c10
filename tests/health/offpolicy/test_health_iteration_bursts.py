"""``update_size``'s clip-fraction range rule and ``kl_rising``'s acceleration warning stay quiet on what a run already
did a moment before (issue 29, h-entropyup).

``trl_cpu_settings9``'s iter3-eps10 run (three passes over each generation, constant lr 2e-4; clip epsilon 10 from
step 200, labelled collapse at 215) warned before its onset:

- ``update_size`` at 54 and 165: ``clip_ratio/region_mean`` is 0 on most steps and 0.04-0.25 on the later passes
  over a generation, so its median and spread are 0, and any 3 of 4 steps past the 0.05 floor read as "far larger
  than before", though a third of the 50 steps before were past it too;
- ``kl_rising`` at 152: the KL's 10-step medians 0.23 -> 0.25 -> 0.43 looked accelerating, but they had been 0.43-0.50
  at 51-80 and were back at 0.14 by 161: a burst within the run's own range.

Both rules still fire on what they were made for: a clip fraction that leaves a range of zeros, a KL that
accelerates past anything it did before.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def _alerts(found, detector):
    return [f.step for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_the_iter3_run_has_no_update_size_or_kl_warning_before_its_onset():
    found = replay(real_run("collapse-llamas5-2prompt-4gen-iter3-eps10from200-constlr2e-4-400", "trl_cpu_settings9"))
    assert [s for s in _alerts(found, "update_size") if s < 210] == []
    assert [s for s in _alerts(found, "kl_rising") if s < 210] == []


def _clip_stream(share: float, seed: int = 1):
    """A clip fraction past 0.05 on ``share`` of 200 steps (0 otherwise), then 0.2 on every step from 200."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 261):
        v = 0.2 if s >= 200 else (0.1 + 0.1 * rng.random() if rng.random() < share else 0.0)
        out.append((s, {"actor/pg_clipfrac": v}))
    return out


def test_clip_fraction_leaving_a_range_of_zeros_still_warns_and_a_frequent_one_does_not():
    assert [s for s in _alerts(run(_clip_stream(0.0)), "update_size") if 200 <= s <= 205]
    assert [s for s in _alerts(run(_clip_stream(0.35)), "update_size") if s < 200] == []


def _kl_stream(bump: bool, seed: int = 2):
    """KL 0.2 (10 % noise); a bump to 0.5 at 50-80 when ``bump``; 0.25 at 120-140, then 0.45 at 140-160 and back."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 181):
        v = 0.2
        if bump and 50 <= s < 80:
            v = 0.5
        if 120 <= s < 140:
            v = 0.25
        if 140 <= s < 160:
            v = 0.45
        out.append((s, {"actor/kl_loss": v * (1 + 0.1 * rng.gauss(0, 1))}))
    return out


def test_kl_acceleration_to_a_level_held_just_before_is_a_burst():
    assert [s for s in _alerts(run(_kl_stream(False)), "kl_rising") if 140 <= s <= 165]
    assert [s for s in _alerts(run(_kl_stream(True)), "kl_rising") if 140 <= s <= 165] == []
