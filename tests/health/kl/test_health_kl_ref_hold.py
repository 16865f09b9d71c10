"""``kl_rising``'s range rule keeps its reference while a departure from it is being held (issue 29). The reference
(the 60 batches before the newest 10) is measured again every 10 batches and must be level (its newer half within
sqrt(2.5) of its older half). The tenth CPU pass's KL-sign-flip run (our trainer, KL-loss coefficient 0.01 -> -0.2 at
step 200; ``actor/kl_loss`` out of its 0.01-0.16 range for good from 231, the label) was out of range on two checks
at 238-240; at 242 the reference was re-measured with the KL's first steps out in its newer half, looked not level,
and the hold was reset: no collapse detector fired at all. While a departure is being held, a re-measured reference
now keeps the level verdict of the one the KL left (its median and spread are still re-measured: freezing them too
made a pre-fault KL bump of the TRL sign-flip run a warning at 194)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def range_warnings(found: list) -> list[int]:
    return [f.step for f in found
            if f.detector == "kl_rising" and f.severity == "warning" and "left its range" in f.title]


def test_the_kl_sign_flip_run_is_found_where_its_kl_leaves_its_range():
    trace = real_run("collapse-llamas3-2prompt-4sample-klloss-negcoef200-constlr1e-4-400-val20",
                     source="rlcockpit_trainer_cpu7")
    hits = range_warnings(replay(trace))
    assert hits and 226 <= hits[0] <= 246, hits  # onset 231


def test_a_kl_bump_before_the_sign_flip_stays_quiet():
    """TRL, beta 0.04 -> -0.2 at step 200: the KL's 0.1-0.5 bump at 184-198 is inside the spread the re-measured
    reference takes in."""
    trace = real_run("collapse-llamas3-2prompt-4gen-negbeta200-constlr1e-4-400", source="trl_cpu_settings7")
    assert [s for s in range_warnings(replay(trace)) if s < 200] == []


def bursts(seed: int, steps: int = 400) -> list:
    """A small batch's KL (log-normal, a factor of ~1.6 a step) around 0.04, with a 6-step burst to 3x every 60
    steps, each back to the level: a hold that starts in a burst ends with it."""
    rng = np.random.default_rng(seed)
    out = []
    for step in range(1, steps + 1):
        level = 0.04 * (3.0 if step > 100 and step % 60 < 6 else 1.0)
        out.append((step, {"actor/kl_loss": level * math.exp(0.45 * rng.standard_normal())}))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_kl_bursts_that_come_back_are_left_alone(seed):
    assert range_warnings(run(bursts(seed))) == []
