"""``lr_schedule``: a learning rate that climbs again after it decayed, in steps each under ``jump_ratio`` x the
one before (issue 29, branch h-ramp). The corpus's lr-ramp runs multiply the scheduled lr by 1 -> 40-100x over
120 steps from step 200: each logged step is 1.1-1.8x the one before, under the 3x one-step jump rule, and nothing
said the lr had left its schedule. The lr now counts against the lowest it had decayed to since its peak: 3x that
low (and a tenth of the peak) for 3 observations is a schedule climbing again. It is a cause, not the collapse:
the warning comes 5-12 steps before each run's labelled onset and is not credited as a detection."""

from __future__ import annotations

import math

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def climbs(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "lr_schedule" and "climbed again" in f.title]


@pytest.mark.parametrize(("suffix", "source", "onset"), [
    ("collapse-llama-2prompt-remax-lrramp100-400-val10", "rlcockpit_trainer_cpu5", 210),  # logs actor/lr
    ("collapse-llamas1-1prompt-12gen-lrramp60-450", "trl_cpu_settings4", 216),  # logs learning_rate (TRL)
    ("collapse-qwen2-2prompt-drgrpo-gradacc2-lrramp100-400", "trl_cpu_settings5", 218),
])
def test_an_lr_ramp_after_the_decay_is_flagged_before_the_collapse(suffix, source, onset):
    hits = climbs(replay(real_run(suffix, source=source)))
    assert hits and 200 < hits[0] < onset, hits


def schedule(lr_at, steps: int = 400) -> list:
    return [(s, {"actor/lr": lr_at(s), "actor/entropy": 1.0}) for s in range(1, steps + 1)]


def warmup_cosine(s: int) -> float:
    return 1e-4 * s / 40 if s <= 40 else 1e-4 * 0.5 * (1 + math.cos(math.pi * (s - 40) / 360))


def warmup_linear(s: int) -> float:
    return 1e-4 * s / 40 if s <= 40 else 1e-4 * (400 - s) / 360


def step_decay(s: int) -> float:
    return 1e-4 * 0.3 ** (s // 100)


def warmup_constant_jitter(s: int) -> float:
    return min(1e-4 * s / 20, 1e-4) * (1 + 1e-7 * (s % 3))  # a float's wobble around a constant lr


@pytest.mark.parametrize("lr_at", [warmup_cosine, warmup_linear, step_decay, warmup_constant_jitter])
def test_planned_schedules_stay_quiet(lr_at):
    assert [f for f in run(schedule(lr_at)) if f.detector == "lr_schedule"] == []


def test_a_slow_ramp_after_a_decay_is_flagged():
    def ramped(s: int) -> float:
        return warmup_linear(s) * (1 + 99 * min(max(s - 200, 0), 120) / 120)
    hits = climbs(run(schedule(ramped)))
    assert hits and 200 < hits[0] <= 210, hits
