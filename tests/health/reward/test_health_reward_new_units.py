"""``reward_cliff`` and a reward in new units (issue 29, trl_cpu_settings18). From step 100 a TRL run's paid reward
was the digit overlap divided by the completion's token count (a normalisation meant for log-probs applied to the
reward): every completion is about 3 tokens, so the paid reward became a third of the accuracy logged beside it
(0.375 -> 0.12, the ratio 0.28-0.34 on every step), and under group-scaled advantages the policy was trained as
before (stored healthy: nothing else moved in 150 steps). The drop rule warned at 106. The ground truth read
backwards from step 100 on a sibling run (stored collapse) drops the paid reward as far, 0.41 -> 0.16, but it scores
something else: its ratio to the accuracy swings 0.1-0.7 from step to step, and it is still found by the fell-under
rule at 109. Fails on dea7e66 (the warning at 106; the synthetic third-of-the-score reward warned of)."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

SOURCE = "trl_cpu_settings18"


def cliff_alerts(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.title) for f in found if f.detector == "reward_cliff" and f.severity in ("warning", "critical")]


def stream(seed: int, factor: float, score_factor: float = 1.0, n: int = 8) -> list:
    """TRL's keys: the accuracy a mean of ``n`` 0/1 scores around 0.4, the paid reward equal to it until step 100 and
    ``factor`` x it after (the accuracy itself x ``score_factor`` from then: a policy that got worse)."""
    rng = random.Random(seed)
    out = []
    for step in range(1, 201):
        acc = sum(rng.random() < 0.4 * (score_factor if step >= 100 else 1.0) for _ in range(n)) / n
        out.append((step, {"reward": acc * (factor if step >= 100 else 1.0), "rewards/accuracy/mean": acc,
                           "entropy": 1.6 + rng.gauss(0, 0.05)}))
    return out


def test_a_reward_that_became_a_third_of_its_score_is_no_cliff():
    for seed in range(5):
        for n in (8, 32):
            assert cliff_alerts(run(stream(seed, 1 / 3, n=n))) == [], (seed, n)


def test_a_third_of_a_score_that_fell_too_is_still_found():
    """The accuracy over 32 samples a step falls 0.4 -> 0.12 with it: the policy got worse, whatever the units."""
    for seed in range(5):
        hits = cliff_alerts(run(stream(seed, 1 / 3, score_factor=0.3, n=32)))
        assert hits and 100 <= hits[0][0] <= 115, (seed, hits)


def test_the_length_normalised_reward_run_is_quiet_and_the_backwards_truth_run_still_found():
    quiet = replay(real_run("healthy-gpt2s14-2prompt-4gen-lengthnormalisedreward-from100-constlr1e-4-250", SOURCE))
    assert cliff_alerts(quiet) == []
    found = cliff_alerts(replay(real_run("collapse-llamas14-2prompt-4gen-backwardstruth-from100-250", SOURCE)))
    assert found and found[0][0] == 109 and "fell under" in found[0][1], found
