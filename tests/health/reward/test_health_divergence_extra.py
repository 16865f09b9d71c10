"""``reward_divergence``'s *pulling away* rule reads verl's correctness field too (issue 29, fifteenth pass): the
reward function's ``reward_extra/acc/mean``, scored on the training batch the paid ``critic/score/mean`` is, is as much
a task score on the same samples as TRL's ``rewards/accuracy/mean``. The held-out CPU run whose reward model grew a
bias toward answers starting with '1' (ramped in over steps 150-350, 2 prompts x 4 samples) paid exactly its accuracy
for 150 steps, then led it on nearly every batch: the *lead opened* rule leaves a lead on most batches to the graded
rules, and the graded rule judged ``critic/score/<fn>`` parts only, so the run waited for *correctness flat* (the
reward's 3-step mean 6 noise units up, 0.375 -> 0.685) until step 268; the onset is 192.

And the *length bonus* rule does not judge a task score the reward equals on every step of its window: the reward's
rise is then that score's rise, nothing is paid for length (a healthy TRL run paying its accuracy alone, whose
completions grew 2 -> 3.4 tokens, warned at 516)."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

BIAS_RUN = "reward_hacking-llamas6-2prompt-4sample-leading1bias-150-350-450-val25"
HEALTHY_TRL = "healthy-qwen2s6-6prompt-2gen-syncref10-warmup70-temp12-maxlen16-700-log3-eval15"


def divergence(found: list) -> list[tuple[int, str, str]]:
    return [(f.step, f.severity, f.title) for f in found
            if f.detector == "reward_divergence" and f.severity in ("warning", "critical")]


def test_the_leading1_bias_run_is_seen_pulling_away_from_its_accuracy_near_its_onset():
    hits = divergence(replay(real_run(BIAS_RUN, source="rlcockpit_trainer_cpu10")))
    assert hits, hits
    step, severity, title = hits[0]
    assert 187 <= step <= 207 and severity == "warning", hits  # onset 192, window [187, 207]
    assert "reward_extra/acc/mean" in title, title


def test_the_healthy_trl_run_that_pays_its_accuracy_alone_owes_no_length_bonus():
    assert divergence(replay(real_run(HEALTHY_TRL, source="trl_cpu_settings10"))) == []


def verl(rng: random.Random, bias: float, learn: float = 0.0, part: float = 0.0, steps: int = 300,
         onset: int = 120) -> list:
    """verl's keys for 2 prompts x 12 samples: the accuracy a mean of 24 0/1 verdicts at 0.4 (+ ``learn`` ramped in
    over 100 steps from ``onset``: the task learned), the paid score that accuracy, plus ``part`` x a format verdict
    right on 80% of the samples, plus a bias paid on a share of the samples that ramps 0 -> ``bias`` over the same
    steps."""
    out = []
    for step in range(steps):
        ramp = min(max(step - onset, 0) / 100, 1.0)
        acc = sum(rng.random() < 0.4 + learn * ramp for _ in range(24)) / 24
        paid = sum(rng.random() < bias * ramp for _ in range(24)) / 24
        form = sum(rng.random() < 0.8 for _ in range(24)) / 24
        out.append((step, {"critic/score/mean": acc + part * form + paid, "reward_extra/acc/mean": acc,
                           "response_length/mean": 12.0 + rng.gauss(0, 0.5)}))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_a_bias_ramped_in_beside_verls_accuracy_is_found(seed):
    hits = divergence(run(verl(random.Random(seed), bias=0.6)))
    # main: 181-214 or none. A bias paid on whole samples leads by one scored item or more, on half the batches and
    # never under the accuracy, from early in the ramp: the *lead opened* rule may see it first (h-grader18)
    assert hits and 120 <= hits[0][0] <= 165 and ("pulling away" in hits[0][2] or "paid beyond" in hits[0][2]), hits


@pytest.mark.parametrize("seed", range(3))
def test_a_score_that_is_its_accuracy_stays_quiet(seed):
    assert divergence(run(verl(random.Random(seed), bias=0.0))) == []


@pytest.mark.parametrize("seed", range(3))
def test_a_score_paying_a_steady_format_part_beside_an_accuracy_being_learned_stays_quiet(seed):
    assert divergence(run(verl(random.Random(seed), bias=0.0, learn=0.3, part=0.2))) == []
