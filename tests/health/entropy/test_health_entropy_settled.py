"""entropy_collapse's slow-fall rule on real runs: an entropy that stepped down 15% and settled is a healthy run's new
level (no warning); one that keeps falling (a sampling temperature or an entropy penalty ramped) is still warned of
near where it left its range (issue 29, branch h-detect15)."""

from __future__ import annotations

import pytest
from health_corpus_runs import real_run, replay


def _entropy_warnings(trace):
    return [(f.step, f.severity) for f in replay(trace) if f.detector == "entropy_collapse"
            and f.severity in ("warning", "critical")]


@pytest.mark.parametrize("suffix", [
    # actor/entropy 1.2 -> 0.99 over steps 30-55, then flat for 150 steps (warned at 99 before)
    "rlcockpit_trainer_cpu3-healthy-tiny-2prompt-700-val25",
    # actor/entropy 1.60 -> 1.34 over 270 steps at a constant lr, reward and validation flat (warned at 271 before)
    "rlcockpit_trainer_cpu6-healthy-gpt2s2-2prompt-4sample-calclogprobs-constlr1e-4-400-val20",
])
def test_an_entropy_that_stepped_down_and_settled_is_no_collapse(suffix):
    assert _entropy_warnings(real_run(suffix)) == []


@pytest.mark.parametrize("suffix", [
    "rlcockpit_trainer_cpu4-entropy_collapse-llamas1-2prompt-tempramp02-450-val15",
    "trl_cpu_settings4-entropy_collapse-qwen2-1prompt-8gen-tempramp02-400",
    "rlcockpit_trainer_cpu5-entropy_collapse-gpt2-2prompt-entpenramp2-constlr1e-4-400-val20",
    "trl_cpu_settings6-entropy_collapse-llamas2-2prompt-6gen-digitvote160-lr3e-4-400",
])
def test_an_entropy_that_keeps_falling_is_still_caught_in_time(suffix):
    trace = real_run(suffix)
    first = _entropy_warnings(trace)[0][0]
    assert trace["onset"] - 5 <= first <= trace["onset"] + 15, first
