"""``throughput_drop`` does not warn when the speed only falls back to a level the run already held for a good share
of its earlier steps (issue 29, h-trlslow).

On the shared 2-core machine a run's speed goes up for a while when the other jobs leave; the reference (the 30 steps
before the dip) is then that fast stretch, and the return to the run's ordinary speed reads as a drop.
``rlcockpit_trainer_cpu5`` (qwen2 drgrpo, step 113: 70% of a fast stretch, a speed the run held at a third of its
earlier steps) and ``trl_cpu_settings5`` (llama bnpo, step 361: 0.16 s steps after a 0.03-0.05 s stretch, the run's
usual 0.15-0.20 s) were such warnings. A slowdown of the run's own making is slower than anything the run did before:
the slow generation / slow reward runs still warn at the same steps.
"""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

STEP = "timing_s/step"


def _warnings(found):
    return [f.step for f in found if f.detector == "throughput_drop" and f.severity in ("warning", "critical")]


@pytest.mark.parametrize("suffix,source", [
    ("healthy-qwen2-2prompt-drgrpo-cliphigh-overlong-len12-400-val20", "rlcockpit_trainer_cpu5"),
    ("healthy-llama-1prompt-8gen-bnpo-400-eval50", "trl_cpu_settings5"),
])
def test_a_return_to_the_runs_usual_speed_after_a_fast_stretch_is_not_a_drop(suffix, source):
    assert _warnings(replay(real_run(suffix, source))) == []


@pytest.mark.parametrize("suffix,first", [
    ("gpt2s3-2prompt-4sample-slowgen05at200-400-val25", 206),
    ("llamas4-2prompt-4sample-slowreward30ms200-400-val25", 206),
    ("qwen2s4-2prompt-4gen-slowrewardramp200-300-400", 221),
])
def test_a_slowdown_of_the_runs_own_making_still_warns_at_the_same_step(suffix, first):
    assert _warnings(replay(real_run(suffix)))[:1] == [first]


def _stream(fast: tuple[int, int] | None, slow_from: int | None, seed: int = 5):
    """0.2 s steps (5 % noise) on a CPU run; 0.07 s over ``fast`` (the other jobs gone); 0.5 s from ``slow_from``."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 401):
        t = 0.2
        if fast and fast[0] <= s < fast[1]:
            t = 0.07
        if slow_from and s >= slow_from:
            t = 0.5
        out.append((s, {STEP: t * (1 + 0.05 * rng.gauss(0, 1))}))
    return out


def test_synthetic_fast_stretch_then_back_is_info_and_a_real_slowdown_still_warns():
    assert _warnings(run(_stream((200, 260), None))) == []
    slow = _warnings(run(_stream((200, 260), 320)))
    assert slow and 320 <= slow[0] <= 335, slow
    plain = _warnings(run(_stream(None, 250)))
    assert plain and 250 <= plain[0] <= 265, plain
