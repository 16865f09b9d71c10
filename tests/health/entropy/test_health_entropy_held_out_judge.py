"""``entropy_collapse``'s slow-fall rule and a held-out score (issue 29). Where the run evaluates on held-out data
(verl's ``val-core/*``, ``val/test_score/*``, TRL's evaluation reward), that score is read first, and against its
level before the entropy began to fall (every evaluation logged by the drift's start), not only the run's first
steps: up by ``held_out_z`` noise units, the fall is learning; at or under that level, the fall is warned of whatever
the training reward gained (a policy memorising the few prompts a stuck data loader feeds it raises its training
reward as its entropy falls, and gets no better on held-out prompts); up by at most ``held_out_flat_z`` (1) noise
units is flat, no gain either (branch h-entrise: any rise used to hand the verdict back to the training reward); up
by more than that and less than a gain, or not evaluated twice since the fall began, the training reward judges as
before.

The eighth CPU pass's trainer runs: a loader stuck on one batch from step 150 (found never: the training score's
gain exempted it), AdamW weight decay -200 from step 200 (found at 266, 58 steps after its onset: the held-out
accuracy's rise over the first 80 steps, 0.18 -> 0.29, exempted the fall that began at 194)."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run

FALL_AT, STEPS = 200, 320


def entropy_alerts(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.title) for f in found if f.detector == "entropy_collapse" and f.severity in ("warning", "critical")]


def sharpening(rng: random.Random, held_out: str | None, early_rise: bool = False, learns: bool = True) -> list:
    """verl's keys: entropy around 1.6 (noise 0.08) falling by 0.006 a step from ``FALL_AT``, the training score
    around 0.4 climbing by 0.004 a step from there; validation every 10 steps (a mean of 600 0/1 scores) flat at
    0.40, climbing with the training score (``"climbs"``) or falling a little (``"falls"``); with ``early_rise`` it
    first rises 0.25 -> 0.40 over the first 50 steps, then holds. ``learns=False``: the training score stays flat."""
    out = []
    for step in range(1, STEPS + 1):
        t = max(0, step - FALL_AT)
        metrics = {"actor/entropy": 1.6 - 0.006 * t + rng.gauss(0, 0.08),
                   "critic/score/mean": 0.4 + (0.004 * t if learns else 0.0) + rng.gauss(0, 0.05)}
        if held_out is not None and step % 10 == 0:
            level = 0.25 + 0.003 * min(step, 50) if early_rise else 0.40
            level += {"flat": 0.0, "climbs": 0.003 * t, "falls": -0.001 * t, "edges_up": 0.01 * (t > 0),
                      "creeps_up": 0.03 * (t > 0)}[held_out]
            metrics["val-core/arith/acc/mean@1"] = round((level + rng.gauss(0, 0.01)) * 600) / 600
        out.append((step, metrics))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_entropy_falling_while_the_training_score_climbs_and_held_out_falls_is_found(seed):
    hits = entropy_alerts(run(sharpening(random.Random(seed), "falls")))
    assert hits and FALL_AT + 20 <= hits[0][0] <= FALL_AT + 60, hits


@pytest.mark.parametrize("seed", range(4))
def test_entropy_falling_while_held_out_climbs_with_the_training_score_is_learning(seed):
    assert entropy_alerts(run(sharpening(random.Random(seed), "climbs"))) == []


@pytest.mark.parametrize("seed", range(4))
def test_entropy_falling_while_the_training_score_climbs_and_nothing_is_evaluated_is_learning(seed):
    """No held-out score: the training score's gain is all the run says about learning (unchanged)."""
    assert entropy_alerts(run(sharpening(random.Random(seed), None))) == []


@pytest.mark.parametrize("seed", range(6))
def test_a_held_out_rise_long_before_the_fall_does_not_exempt_it(seed):
    """The weight-decay case: the training score flat, validation up 0.25 -> 0.40 over the first 50 steps and flat
    from there, the entropy falling from step 200."""
    hits = entropy_alerts(run(sharpening(random.Random(seed), "flat", early_rise=True, learns=False)))
    assert hits and FALL_AT + 20 <= hits[0][0] <= FALL_AT + 60, hits


@pytest.mark.parametrize("seed", range(6))
def test_a_flat_held_out_score_does_not_hand_the_verdict_to_the_training_score(seed):
    """The training score climbing as the entropy falls. Validation 0.01 above its level (~0.7 noise units of the
    difference: a mean of 600 0/1 scores has a noise of ~0.02) is flat: no gain, the fall is warned of (the base let
    the training score's gain exempt it). Validation 0.03 above (~2 units) is up, not by enough to call a gain nor
    little enough to call flat: the training score judges, as before."""
    hits = entropy_alerts(run(sharpening(random.Random(seed), "edges_up")))
    assert hits and FALL_AT + 20 <= hits[0][0] <= FALL_AT + 60, hits
    assert entropy_alerts(run(sharpening(random.Random(seed), "creeps_up"))) == []


def test_a_trl_stuck_loader_with_an_evaluation_reward_inside_its_noise_is_found():
    """TRL, Llama seed 4, 2 prompts x 6, every generation from step 150's two prompts, evaluation every 25 steps:
    entropy's 10-step mean out for good from 189 (the label; medians 1.64-1.72 -> 1.60, 1.38, 1.15), the training
    reward 0.36-0.42 -> 0.56 -> 0.72-0.86, the evaluation reward 0.34-0.39 -> 0.385-0.389 at 200 and 225 (up 0.017,
    under its noise). Found at the second evaluation after the fall began (225, 36 steps after the label: the
    window closes at 204, where the fall is ~10% of its level and the training reward's climb has begun, so it is
    still a miss by the bar); never found on the base."""
    trace = real_run("entropy_collapse-llamas4-2prompt-6gen-stuckloader150-constlr1e-4-450-eval25",
                     source="trl_cpu_settings8")
    hits = entropy_alerts(replay(trace))
    assert hits and 215 <= hits[0][0] <= 235, hits


def test_a_stuck_loader_memorising_two_prompts_is_found_inside_the_window():
    """verl trainer, GPT-2 seed 4, 2 prompts x 6, the loader returning step 150's batch from there on: entropy's
    10-step mean out for good from 216 (the label; medians 1.60-1.69 -> 1.54, 1.42, 1.24), the training score
    0.36-0.42 -> 0.53 -> 0.72-0.89, greedy validation 0.415-0.447 -> 0.38-0.413."""
    trace = real_run("entropy_collapse-gpt2s4-2prompt-6sample-stuckloader150-constlr1e-4-450-val15",
                     source="rlcockpit_trainer_cpu8")
    hits = entropy_alerts(replay(trace))
    assert hits and 211 <= hits[0][0] <= 231, hits


def test_negative_weight_decay_is_found_though_validation_rose_early():
    """verl trainer, Qwen2 seed 4, weight decay -200 from step 200: entropy's 10-step mean out for good from 208
    (the label); validation 0.18 -> 0.29 over steps 0-80, then 0.28-0.31 (no gain while the entropy falls)."""
    trace = real_run("entropy_collapse-qwen2s4-2prompt-4sample-wdneg200at200-constlr1e-4-400-val20",
                     source="rlcockpit_trainer_cpu8")
    hits = entropy_alerts(replay(trace))
    assert hits and 203 <= hits[0][0] <= 223, hits


def trl_sharpening(rng: random.Random, held_out: str) -> list:
    """TRL's keys (as logged: ``eval_reward``, imported as ``eval/reward``): entropy and reward as in
    :func:`sharpening`, evaluation every 25 steps on 384 prompts, at 0.38 falling a little or climbing with the
    reward."""
    out = []
    for step in range(1, STEPS + 1):
        t = max(0, step - FALL_AT)
        metrics = {"entropy": 1.6 - 0.006 * t + rng.gauss(0, 0.08), "reward": 0.4 + 0.004 * t + rng.gauss(0, 0.05)}
        if step % 25 == 0:
            level = 0.38 + (0.003 * t if held_out == "climbs" else -0.001 * t)
            metrics["eval_reward"] = metrics["eval_rewards/accuracy/mean"] = round((level + rng.gauss(0, 0.01)) * 384) / 384
        out.append((step, metrics))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_trl_evaluation_judges_the_fall_too(seed):
    hits = entropy_alerts(run(trl_sharpening(random.Random(seed), "falls")))
    assert hits and FALL_AT + 20 <= hits[0][0] <= FALL_AT + 60, hits
    assert entropy_alerts(run(trl_sharpening(random.Random(seed), "climbs"))) == []
