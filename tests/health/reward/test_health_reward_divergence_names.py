"""Reward hacking in runs whose keys are not verl's (issue 29): the training reward climbs while a second measure of
quality the policy is not trained on gets worse (the samples' perplexity under the frozen base model, logged by an
evaluation every 10 steps) or stays where it started (the correctness part of the reward). Named as a hand-written
GRPO loop and the Tinker cookbook log them; flagged near the onset (the bench's rule: a warning or critical of
``reward_divergence`` / ``reward_hacking`` starting in [onset - 5, onset + 15]) and quiet on the matching healthy run.
The real files are the public ``grpo_loop_jsonl_public`` runs of bench/detection_corpus/real/."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_where

from rlcockpit.health import HealthMonitor

RESPONSIBLE = {"reward_divergence", "reward_hacking"}
ONSET = 30


def alerts(rows: list[tuple[int, dict[str, float]]]) -> list:
    mon = HealthMonitor()
    return [f for step, m in rows for f in mon.observe(step, m) if f.severity in ("warning", "critical")]


def detected(found: list, onset: int) -> bool:
    return any(f.detector in RESPONSIBLE and onset - 5 <= f.step <= onset + 15 for f in found)


def grpo_loop(seed: int, hacked: bool, steps: int = 90) -> list[tuple[int, dict[str, float]]]:
    """A hand-written GRPO loop's metrics: ``train_reward`` noisy around 0.6, climbing to ~0.99 from ``ONSET``;
    ``eval_perplexity`` every 10 steps, flat at ~4.4 (healthy) or climbing 3% a step from the onset (hacked)."""
    rng = random.Random(seed)
    rows = [(0, {"eval_perplexity": 4.4 * rng.lognormvariate(0, 0.02), "eval_reward": 0.55})]
    for s in range(1, steps):
        t = max(0, s - ONSET)
        reward = min(0.99, 0.6 + 0.04 * t) + rng.gauss(0, 0.1) * (1 - min(t, 10) / 12)
        m = {"train_reward": reward, "train_reward_std": 0.4, "kl": 0.001 + 0.01 * t, "pg_loss": rng.gauss(0, 0.1),
             "grad_norm": 10.0 * rng.lognormvariate(0, 0.1), "completion_tokens": 38.0 * rng.lognormvariate(0, 0.03)}
        if s % 10 == 0:
            m["eval_perplexity"] = 4.4 * (1 + (0.03 * t if hacked else 0.0)) * rng.lognormvariate(0, 0.02)
            m["eval_reward"] = min(0.99, 0.6 + 0.04 * t)
        rows.append((s, m))
    return rows


def tinker(seed: int, hacked: bool, steps: int = 70) -> list[tuple[int, dict[str, float]]]:
    """Tinker cookbook names: ``env/all/reward/total`` climbing from the onset, ``env/all/correct`` (the verifier's
    verdict, part of the reward) flat at ~0.05 (hacked: the rest of the reward pays) or climbing with it."""
    rng = random.Random(seed)
    rows = []
    for s in range(steps):
        t = max(0, s - ONSET)
        correct = 0.05 + (0.0 if hacked else 0.01 * t) + rng.gauss(0, 0.015)
        m = {"env/all/reward/total": 0.2 + 0.02 * t + rng.gauss(0, 0.03), "env/all/correct": max(0.0, correct),
             "optim/lr": 4e-5, "env/all/ac_tokens_per_turn": 200.0 * rng.lognormvariate(0, 0.03)}
        rows.append((s, m))
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_perplexity_under_the_frozen_model_rising_with_the_reward_is_flagged_at_the_first_evaluation(seed):
    found = alerts(grpo_loop(seed, hacked=True))
    assert detected(found, ONSET), [(f.step, f.detector, f.title) for f in found]
    first = next(f for f in found if f.detector == "reward_divergence")
    assert "eval_perplexity" in first.title and "train_reward" in first.title  # the run's own words
    assert first.step == 40  # the first evaluation after the onset, however sparse the series


@pytest.mark.parametrize("seed", range(4))
def test_the_reward_climbing_with_a_steady_perplexity_is_learning(seed):
    found = alerts(grpo_loop(seed, hacked=False))
    assert not [f for f in found if f.detector in RESPONSIBLE], [(f.step, f.detector, f.title) for f in found]


@pytest.mark.parametrize("seed", range(4))
def test_reward_climbing_while_its_correctness_part_stays_put_is_flagged(seed):
    found = alerts(tinker(seed, hacked=True))
    assert detected(found, ONSET), [(f.step, f.detector, f.title) for f in found]
    assert any("env/all/correct" in f.title for f in found if f.detector == "reward_divergence")


@pytest.mark.parametrize("seed", range(4))
def test_reward_climbing_with_its_correctness_is_learning(seed):
    found = alerts(tinker(seed, hacked=False))
    assert not [f for f in found if f.detector in RESPONSIBLE], [(f.step, f.detector, f.title) for f in found]


def grpo_loop_files() -> list[dict]:
    return real_where(lambda e: e["source"] == "grpo_loop_jsonl_public")


def test_the_public_grpo_loop_runs_hacked_are_flagged_near_their_onset_and_the_fixed_one_gets_no_critical():
    """Rohanjain2312/grpo-reward-hacking-demo: ``baseline`` (no KL; onset 13) and ``fixed_cap`` (onset 15) push the
    sentiment reward to 0.99 while eval_perplexity goes 4.4 -> 6.5 / 6.1 at the step-20 evaluation; ``fixed_kl``
    (beta 0.1, healthy, perplexity +20-40%) may get one warning, never a critical."""
    runs = {t["id"]: t for t in grpo_loop_files()}
    assert len(runs) == 3
    for trace in runs.values():
        found = alerts(trace["metrics"])
        if trace["class"] == "reward_hacking":
            assert detected(found, trace["onset"]), (trace["id"], [(f.step, f.detector, f.title) for f in found])
        else:
            assert not [f for f in found if f.severity == "critical"], trace["id"]
            assert len(found) <= 1, (trace["id"], [(f.step, f.detector, f.title) for f in found])
