"""``kl_rising``'s accelerating-rise critical needs the KL *still climbing* when its hold is met (issue 29: a critical
needs magnitude plus persistence). The eleventh TRL CPU pass's healthy one-prompt beta-0.2 run (7 completions, a
40-step warm-up, logged every 4 steps) has its KL jump from 0.2-0.25 to 0.66-0.95 at step 112 and then settle at
0.5-0.9 for the rest of its 500 steps while its reward climbs: the three window medians read 0.16 -> 0.247 -> 0.737,
and the critical came at 160, when the newest window (0.95, 0.93 then 0.68, 0.55, 0.78) had already come down from
the jump. Now the critical also needs the newest median above the one on the hold's first check, or the newest
window's newer half above its older half: that run gets a warning, and a KL that keeps accelerating its critical."""

from __future__ import annotations

import math

import numpy as np
import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def kl_alerts(found: list, severity: str) -> list[int]:
    return [f.step for f in found if f.detector == "kl_rising" and f.severity == severity]


def test_the_one_prompt_beta_run_whose_kl_jumps_and_settles_gets_no_critical():
    trace = real_run("healthy-qwen2s7-1prompt-7gen-beta2095-wd01-constwarmup40-noshuffle-500-log4",
                     source="trl_cpu_settings11")
    found = replay(trace)
    assert kl_alerts(found, "critical") == []
    assert [f.step for f in found if f.severity == "critical"] == []


def jump_and_settle(seed: int, steps: int = 200) -> list:
    """A KL at 0.16, then 0.25 from step 40, that jumps to 0.9 at step 55 for 6 steps (less than a window) and comes
    down to 0.7, where it stays (a factor of ~1.1 of noise a step). Without the still-climbing test the critical came
    at 66 on every seed."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(1, steps + 1):
        level = 0.16 if step < 40 else 0.25 if step < 55 else 0.9 if step < 61 else 0.7
        out.append((step, {"actor/kl_loss": level * math.exp(0.1 * rng.standard_normal())}))
    return out


def accelerating(seed: int, steps: int = 120) -> list:
    """A KL at 0.15 that starts to grow by 6 % a step at step 60 (a policy drifting away, faster and faster)."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(1, steps + 1):
        level = 0.15 * math.exp(0.06 * max(step - 60, 0))
        out.append((step, {"actor/kl_loss": level * math.exp(0.1 * rng.standard_normal())}))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_kl_that_jumped_and_settled_within_the_hold_is_no_critical(seed):
    found = run(jump_and_settle(seed))
    assert kl_alerts(found, "critical") == []
    assert kl_alerts(found, "warning")  # still told, as a warning


@pytest.mark.parametrize("seed", range(4))
def test_a_kl_that_keeps_accelerating_is_still_critical(seed):
    assert kl_alerts(run(accelerating(seed)), "critical")
