"""``entropy_collapse``'s low-level warning (issue 29): an entropy under ``warn_ratio`` x its warm-up level while
learning stalls. That level is what the mean of its last ``drift_smooth`` values says, not a 3-step mean: a
policy that sharpened early and settled near a third of its warm-up entropy, noisy at that level, dips its 3-step
mean under a quarter now and then and is no lower than it was. trl_csv_public13's healthy Qwen2.5-1.5B GSM8K run
(entropy 0.63 in its warm-up, 0.17-0.28 from step 40 on, per-step noise ~0.045) was warned of at 136 and 337."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def entropy_alerts(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.title) for f in found if f.detector == "entropy_collapse" and f.severity in ("warning", "critical")]


def settled(rng: random.Random, level: float) -> list:
    """TRL's keys: entropy 0.6 over the first 20 steps, then a fall over 20 steps to ``level`` (noise 0.045), held
    for 400 steps; the reward flat at 0.8 (noise 0.1): learning done, nothing climbing."""
    out = []
    for step in range(1, 441):
        mean = 0.6 if step <= 20 else max(level, 0.6 - (0.6 - level) * (step - 20) / 20)
        out.append((step, {"entropy": max(0.0, mean + rng.gauss(0, 0.045)), "reward": 0.8 + rng.gauss(0, 0.1)}))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_a_noisy_entropy_settled_above_the_bar_is_not_warned_of(seed):
    """Settled at 0.23 (38% of 0.6, about a third of a warm-up median raised by its first value): 3-step means dip under a quarter every few dozen steps. (The fall itself,
    0.6 -> 0.23 in 20 steps, is the fast-fall rule's: only the 400 settled steps after it are asserted on.)"""
    assert [hit for hit in entropy_alerts(run(settled(random.Random(seed), 0.23))) if hit[0] > 150] == []


@pytest.mark.parametrize("seed", range(5))
def test_an_entropy_settled_under_the_bar_while_stalling_is_warned_of(seed):
    """Settled at 0.11 (18% of 0.6), above the critical 10%: the low-level warning, by step 60."""
    hits = entropy_alerts(run(settled(random.Random(seed), 0.11)))
    assert hits and hits[0][0] <= 60, hits


def test_the_healthy_gsm8k_run_gets_no_low_level_warning():
    trace = real_run("healthy-grpo-math-qwen1.5b-base-gsm8k-full-lr2e-6-500", source="trl_csv_public13")
    assert [step for step, _title in entropy_alerts(replay(trace)) if step > 100] == []
