"""``rollout_mismatch`` judges its warning rules against the level the gap settles at (issue 29, h-detect20).

TRL 1.13 + vLLM (``trl_csv_public13``): ``sampling/sampling_logp_difference/mean`` steps up ~1.5x over the first
updates and then holds for 450 steps: the engine/trainer numerical floor of the setup, not a growing mismatch.
A real mismatch still jumps far above its level (the engine's temperature doubled at step 200) or keeps growing.
"""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

KEY = "sampling/sampling_logp_difference/mean"


@pytest.mark.parametrize("suffix", ["base-gsm8k-lora-lr1e-5-500", "base-gsm8k-lora-lr1e-5-seed43-500"])
def test_a_vllm_gap_that_settles_after_the_first_updates_is_not_a_mismatch(suffix):
    trace = real_run(suffix, "trl_csv_public13")
    found = [(f.step, f.title) for f in replay(trace) if f.detector == "rollout_mismatch" and f.severity != "info"]
    assert found == []


@pytest.mark.parametrize("suffix,onset", [("enginetemp2at200-calclogprobs-400-val20", 200),
                                          ("staleweights190-constlr1e-4-400-val20", 191)])
def test_a_real_mismatch_is_still_caught_at_its_onset(suffix, onset):
    trace = real_run(suffix)
    found = [f.step for f in replay(trace) if f.detector == "rollout_mismatch" and f.severity != "info"]
    assert found and onset <= found[0] <= onset + 5, found


def test_a_gap_that_settles_then_keeps_growing_is_still_a_drift():
    """Steps up 1.5x over the first 40 steps and holds (absorbed: no warning before 250), then creeps 1.7% a step
    from step 250: warned once it is ~1.3x its settled level."""
    rng = random.Random(3)

    def gap(step: int) -> float:
        level = 0.015 * (1 + 0.5 * min(step, 40) / 40) * (1 + max(0, step - 250) / 60)
        return level * (1 + 0.05 * rng.gauss(0, 1))

    found = [f.step for f in run([(s, {KEY: gap(s)}) for s in range(1, 401)]) if f.detector == "rollout_mismatch"
             and f.severity != "info"]
    assert found and 250 <= found[0] <= 275, found
