"""The ninth-pass runs (bench/detection_corpus README "ninth pass, CPU"; issue 29), scored once held out and then
read: the rules they changed.

- ``length_collapse``'s "(nearly) empty" critical judged a fixed size (at most 2 tokens) without asking where the
  answers started: three healthy Qwen2 runs whose 2-digit answers are 2 tokens from the first step got a critical.
  Empty now also means at most half the run's starting length.
"""

from __future__ import annotations

import pytest
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor

TWO_TOKEN_HEALTHY = [
    ("rlcockpit_trainer_cpu6", "healthy-qwen2s2-gae-klreward-adaptive-2prompt-4sample-500-val25"),
    ("trl_cpu_settings6", "healthy-qwen2s2-2prompt-4gen-stepsper4-beta01-topent02-400"),
]


def criticals(found: list, detector: str) -> list[tuple[int, str]]:
    return [(f.step, f.title) for f in found if f.detector == detector and f.severity == "critical"]


@pytest.mark.parametrize("source, suffix", TWO_TOKEN_HEALTHY)
def test_answers_two_tokens_long_from_the_start_are_not_a_collapse_to_empty(source, suffix):
    trace = real_run(suffix, source=source)
    assert criticals(replay(trace), "length_collapse") == []


def lengths(start: float, after: float, at: int = 60, steps: int = 120) -> list:
    return [(s, {"response_length/mean": start if s < at else after, "response_length/min": 1.0})
            for s in range(1, steps + 1)]


@pytest.mark.parametrize("start, after, collapsed", [(2.0, 2.0, False), (2.0, 1.5, False), (4.0, 1.0, True),
                                                     (3.0, 1.0, True), (2.0, 1.0, True)])
def test_empty_is_judged_against_the_run_s_own_start(start, after, collapsed):
    mon = HealthMonitor()
    found = [f for step, m in lengths(start, after) for f in mon.observe(step, m)]
    hits = criticals(found, "length_collapse")
    assert bool(hits) is collapsed, hits
    if collapsed:
        assert 60 <= hits[0][0] <= 63
