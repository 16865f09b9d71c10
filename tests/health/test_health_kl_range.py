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
