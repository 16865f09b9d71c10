"""``kl_rising``'s range rule (issue 29): a KL that leaves its own range for good, judged in log units against the
run's own noise, where the band rule (above 0.1 and accelerating) does not look. A learning rate ramped up mid-run
lifts a 1-2 prompt run's KL from 0.02-0.05 to 0.1-0.2 and keeps it there: the lr-ramp collapses of the sixth CPU pass
(bench/detection_corpus README) were missed by every detector. A healthy KL that climbs from 0 and levels off, or
that wanders by a factor from step to step, is left alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def range_warnings(found: list) -> list[tuple[int, int, str]]:
    return [(f.step_start, f.step, f.title) for f in found
            if f.detector == "kl_rising" and f.severity == "warning" and "left its range" in f.title]


def test_lr_ramp_lifting_the_kl_out_of_its_range_is_found():
    """TRL, 2 prompts x 4 completions, beta 0.1, the learning rate ramped from step 211: the KL's 10-step mean left
    0.01-0.04 for good at step 226 (the label), for 0.09-0.6."""
    trace = real_run("collapse-llamas2-2prompt-4gen-beta01-lrramp100-400", source="trl_cpu_settings6")
    hits = range_warnings(replay(trace))
    assert hits and 221 <= hits[0][1] <= 241, hits


@pytest.mark.parametrize("source, suffix", [
    ("trl_cpu_settings2", "healthy-gpt2-2prompt-lr3e-4-400"),  # a KL of 0.15-0.6 that wanders by a factor of 4
    ("trl_cpu_settings4", "healthy-qwen2-1prompt-4gen-iter2-800-log1"),  # each batch's KL logged twice
    ("trl_cpu_settings6", "healthy-qwen2s2-2prompt-4gen-stepsper4-beta01-topent02-400"),
])
def test_healthy_kl_wandering_by_a_factor_is_left_alone(source, suffix):
    assert range_warnings(replay(real_run(suffix, source=source))) == []


def kl_stream(level_after: float, at: int = 240, steps: int = 320, seed: int = 0):
    """A small batch's KL: log-normal noise (a factor of ~1.7 per step) around a level that climbs from ~0 over the
    first 80 steps to 0.04, then holds — or moves to ``level_after`` x that from step ``at`` on."""
    rng = np.random.default_rng(seed)
    for step in range(1, steps + 1):
        level = 0.04 * min(1.0, step / 80) if step < at else 0.04 * level_after
        yield step, {"actor/kl_loss": max(level, 1e-4) * math.exp(0.5 * rng.standard_normal())}


@pytest.mark.parametrize("seed", range(5))
def test_kl_settling_four_times_higher_is_found_within_fifteen_steps(seed):
    mon = HealthMonitor()
    hits = range_warnings([f for step, m in kl_stream(4.0, seed=seed) for f in mon.observe(step, m)])
    assert hits and 240 <= hits[0][1] <= 255, hits


@pytest.mark.parametrize("seed", range(5))
def test_kl_climbing_from_zero_and_levelling_off_is_left_alone(seed):
    mon = HealthMonitor()
    found = [f for step, m in kl_stream(1.0, seed=seed) for f in mon.observe(step, m)]
    assert [(f.step, f.title) for f in found if f.detector == "kl_rising" and f.severity != "info"] == []


def lr_kl_stream(kl_after: float, lr_after: float, warmup: int = 0, at: int = 240, steps: int = 300, seed: int = 0):
    """A KL with log-normal noise (a factor of ~1.35 per step) around 0.04 that moves to ``kl_after`` x that over the
    10 steps from ``at``, beside a learning rate of 1e-4 (rising linearly from 0 over the first ``warmup`` steps)
    that ramps to ``lr_after`` x over the same 10 steps; the KL rises by ``kl_after`` over the warm-up too."""
    rng = np.random.default_rng(seed)
    for step in range(1, steps + 1):
        ramp = min(1.0, max(0.0, (step - at) / 10))
        warm = min(1.0, step / warmup) if warmup else 1.0
        kl = 0.04 * (kl_after ** ramp) * (kl_after ** (warm - 1.0))
        lr = 1e-4 * (lr_after ** ramp) * warm
        yield step, {"actor/kl_loss": kl * math.exp(0.3 * rng.standard_normal()), "actor/lr": lr}


@pytest.mark.parametrize("seed", range(8))
def test_kl_doubling_after_the_lr_was_raised_is_found_within_fifteen_steps(seed):
    """The learning rate raised 5x over steps 240-250 and the KL settling 2.2x higher with it: under the rule's
    2.5x, but the lr raised after the range was measured is the cause in sight, and the KL follows it by a factor
    before the full one. Found within 15 steps of where it reached its new level (250)."""
    mon = HealthMonitor()
    hits = range_warnings([f for step, m in lr_kl_stream(2.2, 5.0, seed=seed) for f in mon.observe(step, m)])
    assert hits and 245 <= hits[0][1] <= 265, hits
    assert "actor/lr rose to" in hits[0][2]


@pytest.mark.parametrize("seed", range(5))
def test_kl_doubling_with_the_lr_unchanged_is_left_alone(seed):
    """The same KL with the lr where it was: a factor of 2.2 is within what a small batch's KL wanders by."""
    mon = HealthMonitor()
    assert range_warnings([f for step, m in lr_kl_stream(2.2, 1.0, seed=seed) for f in mon.observe(step, m)]) == []


@pytest.mark.parametrize("seed", range(5))
def test_kl_doubling_through_a_long_lr_warm_up_is_left_alone(seed):
    """A warm-up over the first 150 steps lifts the lr from 0 and the KL 2.2x with it: an lr rising since the start
    of the reference window is the schedule, not an lr raised above it."""
    mon = HealthMonitor()
    found = [f for step, m in lr_kl_stream(2.2, 1.0, warmup=150, steps=200, seed=seed) for f in mon.observe(step, m)]
    assert range_warnings(found) == []


def test_k3_kl_loss_lifted_by_an_lr_ramp_is_found_near_its_onset():
    """Our trainer, `low_var_kl+` KL loss, the lr ramped from 1x at step 230 to 40x at 330 on a cosine schedule:
    `actor/kl_loss`'s 10-step mean left 0.002-0.065 for good at 247 (the label). Before the lr rule the range rule
    warned at 266, 19 steps late: the KL was 2.5x its median at 254 and dipped under the bar's gate for a step."""
    trace = real_run("collapse-llamas2-2prompt-4sample-kllossk3plus-lrramp40-400-val10",
                     source="rlcockpit_trainer_cpu6")
    hits = range_warnings(replay(trace))
    assert hits and 242 <= hits[0][1] <= 262, hits
