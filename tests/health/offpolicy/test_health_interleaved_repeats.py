"""Batches logged twice in turn (issue 29, branch h-detect16).

TRL's ``num_iterations=2`` with ``steps_per_generation=2`` trains on batch A, batch B, A again, B again: the KL reads
a b a' b' (``trl_cpu_settings8``'s healthy bnpo run: 0.378 0.039 0.391 0.036 at steps 261-264). The pairs are not
neighbours, so the consecutive-repeat test found period 1 and ``kl_rising``'s range rule took 10 logged values for 10
batches (5 in truth): a burst of two or three batches held 2.8x for 3 checks and warned at step 288.
"""
from __future__ import annotations

import math

import numpy as np
from health_corpus_runs import real_run, replay, replay_stream

from rlcockpit.health.repeats import repeat_period

BNPO = ("2prompt-4gen-bnpo-iter2-stepsper2-biaskl-400-eval20", "trl_cpu_settings8")


def _interleaved(levels, rng):
    """Two batches per generation, each logged twice in turn: a b a' b' (a' one small update from a)."""
    out = []
    for lvl in levels:
        a, b = (lvl * math.exp(rng.normal(0, 0.8)) for _ in range(2))
        out += [a, b, a * math.exp(rng.normal(0, 0.03)), b * math.exp(rng.normal(0, 0.03))]
    return out


def test_the_bnpo_runs_kl_repeats_in_turn_and_gets_no_kl_rising():
    trace = real_run(*BNPO)
    kl = [m["kl"] for _s, m in trace["metrics"] if "kl" in m]
    assert repeat_period(kl[200:296]) == 2
    assert [f.step for f in replay(trace) if f.detector == "kl_rising" and f.severity != "info"] == []


def test_interleaved_batches_count_once_and_plain_noise_does_not():
    rng = np.random.default_rng(1)
    assert repeat_period(_interleaved([0.05] * 24, rng)) == 2
    assert repeat_period([0.05 * math.exp(rng.normal(0, 0.8)) for _ in range(96)]) == 1


def test_an_interleaved_kl_that_jumps_for_good_is_still_caught_within_four_generations():
    """A KL 0.03 -> 0.4 at step 241 (batch noise a factor of 2.2): ``kl_spike`` now holds 3 batches (6 values), so
    it is later or, on a noisy draw, leaves it to ``kl_rising`` (as on main, a draw may get a warning only)."""
    for seed in range(4):
        kl = _interleaved([0.03] * 60 + [0.4] * 30, np.random.default_rng(seed))
        found = [(f.step, f.severity) for f in replay_stream([(i + 1, {"kl": v}) for i, v in enumerate(kl)])
                 if f.detector in ("kl_spike", "kl_rising") and f.severity in ("warning", "critical")]
        assert found and 240 < found[0][0] <= 256, (seed, found)
