"""Reward hacking as a divergence at one evaluation (issue 29, h-grader18): a held-out score under its range while
the training reward climbs past its own noise. A loader stuck on the batch it served at step 150 (the policy
memorises 4 prompts: ``rlcockpit_trainer_cpu17`` stuckloader, onset 163, validation every 16) was first flagged at
192, the second evaluation under the range; the rule warns at the first (176). One evaluation under its range is a
dip in a healthy run, and a reward that climbs is learning: only both at once, each past its own noise, is this."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream
from health_trace_shapes import binomial_share

UNDER = "Held-out score fell below its range while the reward rose"


def _raised(findings) -> list[int]:
    return [f.step for f in findings if f.detector == "reward_divergence" and f.title.startswith(UNDER)]


def _stuck(seed: int, reward_rises: bool, val_falls: bool, val_rises: bool = False, steps: int = 300,
           onset: int = 150) -> list:
    """Our trainer's keys, 4 prompts x 3 answers of 3 digits a step (each score a mean of 36 digit scores), validation
    on 200 prompts x 3 digits every 16 steps. From ``onset`` the reward climbs 0.4 -> 0.6 over 40 steps with
    ``reward_rises`` (else it holds at 0.4); validation holds at 0.45, or from ``onset`` + 20 falls to 0.38 with
    ``val_falls`` (one evaluation interval later it is still there), or rises to 0.55 with ``val_rises`` (learning)."""
    rng = random.Random(seed)
    out = []
    for s in range(steps + 1):
        up = min(1.0, max(0.0, (s - onset) / 40)) if reward_rises else 0.0
        m = {"critic/score/mean": binomial_share(rng, 0.4 + 0.2 * up, 36), "actor/entropy": 1.5 + rng.gauss(0, 0.05)}
        if s % 16 == 0:
            pv = 0.45
            if val_falls and s >= onset + 20:
                pv = 0.38
            if val_rises and s >= onset + 20:
                pv = 0.55
            m["val-core/arith/acc/mean@1"] = binomial_share(rng, pv, 600)
        out.append((s, m))
    return out


def _smooth_dip(seed: int, steps: int = 200) -> list:
    """A healthy run learning throughout: the reward climbs 0.4 -> 0.7 and a held-out score evaluated every 4 steps
    climbs 0.50 -> 0.56 with little noise (a continuous score: its noise is its small step-to-step change), and dips 5%
    once at step 140: many noise units under its range, but a fall too small to matter."""
    rng = random.Random(seed)
    out = []
    for s in range(steps + 1):
        m = {"critic/score/mean": 0.4 + 0.3 * s / steps + rng.gauss(0, 0.03), "actor/entropy": 1.5 + rng.gauss(0, 0.05)}
        if s % 4 == 0:
            m["val-core/arith/acc/mean@1"] = (0.50 + 0.06 * s / steps + rng.gauss(0, 0.002)) * (0.95 if s == 140 else 1)
        out.append((s, m))
    return out


def test_a_stuck_loader_is_seen_at_the_first_evaluation_under_its_range_while_the_reward_climbs():
    trace = real_run("gpt2s13-4prompt-3sample-stuckloader-from150-constlr1e-4-300-val16", source="rlcockpit_trainer_cpu17")
    hits = _raised(replay(trace))
    assert hits and 158 <= hits[0] <= 178, hits  # onset 163; the evaluation at 176 is the first under its range
    for seed in range(4):
        hits = _raised(replay_stream(_stuck(seed, True, True)))
        assert hits and 170 <= hits[0] <= 208, (seed, hits)  # at one of the first three evaluations under


def test_a_dip_without_the_reward_rising_or_a_reward_rising_with_validation_is_not_this_divergence():
    # healthy real runs with one evaluation far under its range while the reward wandered within its noise
    for suffix, source in (("gpt2s1-3prompt-2sample-500-val4", "rlcockpit_trainer_cpu3"),
                           ("healthy-gpt2s9-2prompt-5sample-advpermuted-from150-350-val12", "rlcockpit_trainer_cpu13")):
        assert _raised(replay(real_run(suffix, source=source))) == [], suffix
    for seed in range(6):
        assert _raised(replay_stream(_smooth_dip(seed))) == [], seed  # a 5% dip of a smooth held-out score while learning
        assert _raised(replay_stream(_stuck(seed, False, True))) == [], seed  # a held-out dip: held_out_drop's
        assert _raised(replay_stream(_stuck(seed, True, False))) == [], seed  # learning on a stuck batch, nothing lost
        assert _raised(replay_stream(_stuck(seed, True, False, val_rises=True))) == [], seed  # learning
