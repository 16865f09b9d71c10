"""Reward hacking as a divergence, judged on each run's own noise (issue 29, ninth-pass CPU runs):

- a held-out score leaving its range while the paid reward holds (a judge drifting from correctness: the reward
  does not rise, so no "reward up" rule sees it; ``rlcockpit_trainer_cpu6`` judge199ramp, onset 280);
- the reward's lead over a task score logged on the same samples judged against the lead's own noise, not the
  reward's (``trl_cpu_settings6`` brevityramp logged every 2, onset 198: the lead was exactly 0 before the bonus);
- "reward up, correctness flat" measures the reward's rise over the same steps as the correctness (a healthy GSPO
  run whose reward *is* its accuracy got the warning: the reward's last 3 values against the accuracy's last 64).
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream
from health_trace_shapes import binomial_share

LEFT = "Held-out score fell below its range while the reward held"
AWAY = "Reward pulling away"
FLAT = "Reward up, correctness flat"
BONUS = 0.003


def _raised(findings, title: str) -> list[int]:
    return [f.step for f in findings if f.detector == "reward_divergence" and f.title.startswith(title)]


def _judge_drift(seed: int, val_falls: bool, part_rises: bool = True, reward_falls: bool = False, steps: int = 400,
                 onset: int = 280) -> list:
    """Our trainer's keys, 1 prompt x 8 answers of 3 digits a step (each score a mean of 24 digit scores), validation
    on 200 prompts x 3 digits every 10 steps. The paid reward holds (or, for a collapse, falls 0.4 -> 0.2 at
    ``onset``); with ``part_rises`` the reward function's field for the behaviour a drifting judge pays for
    (``reward_extra/judge_fixed/mean``) climbs 0.2 -> 0.5 over ``onset`` +- 20 (else it stays at 0.2); with
    ``val_falls`` the validation falls 0.05 an evaluation from ``onset`` to 0.17."""
    rng = random.Random(seed)
    out = []
    for s in range(0, steps + 1):
        fixed = 0.2 + (0.3 * min(1.0, max(0.0, (s - onset + 20) / 40)) if part_rises else 0.0)
        m = {"critic/score/mean": binomial_share(rng, 0.2 if reward_falls and s >= onset else 0.4, 24),
             "reward_extra/acc/mean": binomial_share(rng, 0.4, 24), "reward_extra/judge_fixed/mean": binomial_share(rng, fixed, 24),
             "actor/entropy": 1.5 + rng.gauss(0, 0.05)}
        if s % 10 == 0:
            pv = 0.42 - (min(0.25, 0.05 * ((s - onset) // 10 + 1)) if val_falls and s >= onset else 0.0)
            m["val-core/arith/acc/mean@1"] = binomial_share(rng, pv, 600)
        out.append((s, m))
    return out


def test_a_judge_drifting_from_correctness_is_seen_when_validation_leaves_its_range_while_the_reward_holds():
    trace = real_run("gpt2s2-1prompt-8sample-judge199ramp-lr3e-4-450-val10", source="rlcockpit_trainer_cpu6")
    hits = _raised(replay(trace), LEFT)
    assert hits and 275 <= hits[0] <= 295, hits  # onset 280: the first validation out of range for good
    for seed in range(4):
        hits = _raised(replay_stream(_judge_drift(seed, True)), LEFT)
        assert hits and 280 <= hits[0] <= 310, (seed, hits)


def test_validation_inside_its_noise_a_held_out_dip_or_a_collapse_is_not_this_divergence():
    # a healthy run that dips on validation for 90 steps while nothing else moves (its held-out score 0.34 -> 0.26)
    trace = real_run("qwen2-1prompt-600-val7", source="rlcockpit_trainer_cpu3")
    assert _raised(replay(trace), LEFT) == []
    for seed in range(6):
        assert _raised(replay_stream(_judge_drift(seed, False)), LEFT) == [], seed
        assert _raised(replay_stream(_judge_drift(seed, True, part_rises=False)), LEFT) == [], seed
        # a collapse: the reward falls with the validation (held_out_drop's business, not reward hacking)
        assert _raised(replay_stream(_judge_drift(seed, True, part_rises=False, reward_falls=True)), LEFT) == [], seed


def _bonus(seed: int, ramp: bool, steps: int = 400, start: int = 170) -> list:
    """TRL's keys, 2 prompts x 4 a step logged every 2: the reward is the accuracy (weight 1) plus, with ``ramp``, a
    bonus paid beside it that ramps from ``start`` (``BONUS`` a step). The accuracy is logged beside the reward
    (weight 0 in the sum) and learns (0.35 -> 0.45 at ``start`` + 30, then holds)."""
    rng = random.Random(seed)
    out = []
    for s in range(2, steps + 1, 2):
        acc = binomial_share(rng, 0.35 + 0.1 * min(1.0, max(0, s - start) / 30), 24)
        bonus = min(0.6, BONUS * max(0, s - start)) if ramp else 0.0
        out.append((s, {"reward": acc + bonus, "rewards/accuracy/mean": acc, "entropy": 1.5 + rng.gauss(0, 0.05)}))
    return out


def test_the_reward_pulling_away_from_its_accuracy_is_judged_on_the_leads_own_noise():
    trace = real_run("gpt2s2-2prompt-4gen-brevityramp-lr2e-4-400-log2", source="trl_cpu_settings6")
    hits = _raised(replay(trace), AWAY)
    assert hits and 193 <= hits[0] <= 213, hits  # onset 198 (logged every 2: 214 is out of the window)
    first = []
    for seed in range(6):
        hits = _raised(replay_stream(_bonus(seed, True)), AWAY)
        assert hits and 170 < hits[0] <= 300, (seed, hits)
        first.append(hits[0])
    assert sorted(first)[2] <= 230, first  # half the runs within 60 steps of the bonus's start (judged on the
    # reward's noise: 234-276)


def test_a_reward_that_is_its_accuracy_never_pulls_away_from_it():
    for seed in range(6):
        found = replay_stream(_bonus(seed, False))
        assert _raised(found, AWAY) == [] and _raised(found, FLAT) == [], seed


def _gspo_like(seed: int, steps: int = 400) -> list:
    """1 prompt x 6 a step, two updates a batch, logged every 2 (a mean of 18 scores), the reward its accuracy: a quiet
    warm-up (6 or 7 right of 18 on each of the first 10 logged steps: a small early noise), then its usual spread."""
    rng = random.Random(seed)
    out = []
    for s in range(2, steps + 1, 2):
        acc = rng.choice((6, 6, 7)) / 18 if s <= 20 else binomial_share(rng, 0.36, 18)
        out.append((s, {"reward": acc, "rewards/accuracy/mean": acc, "entropy": 1.6 + rng.gauss(0, 0.05)}))
    return out


def test_correctness_is_not_flat_against_a_reward_that_is_the_same_series():
    trace = real_run("llamas2-1prompt-6gen-gspo-iter2-delta15-400-log2", source="trl_cpu_settings6")
    assert [f for f in replay(trace) if f.detector == "reward_divergence"] == []
    for seed in range(6):
        assert _raised(replay_stream(_gspo_like(seed)), FLAT) == [], seed
