"""The reward pulling away from one of its parts (issue 29): when the reward is the plain sum of its logged parts,
every part is paid, and the others rising is the policy learning what it is paid for, not a bonus beside the task.

Found held out on a public TRL run (``trl_state_public8``, ps-research/Believe-it-or-Not: four reward functions, a
leakage check that always passes at 1.0, the answer score learned 3.2 -> 9.3): the paired-lead rule called the
reward "pulling away" from the leakage check. A part named for correctness, and a score logged beside a reward that
does not pay it (TRL's accuracy at weight 0, Tinker's ``f``), are still judged."""

from __future__ import annotations

import random

from health_corpus_runs import real_run

from rlcockpit.health import HealthMonitor


def _pulling_away(trace, config=None) -> list[int]:
    mon = HealthMonitor(None, config)
    found = []
    for step, metrics in trace:
        found += mon.observe(step, metrics)
    found += mon.close()
    return [f.step for f in found if f.detector == "reward_divergence" and f.title.startswith("Reward pulling away")]


def test_a_healthy_four_function_trl_run_is_not_pulling_away_from_its_always_passing_check():
    trace = real_run("trl_state_public8-healthy-hint-faithfulness-grpo-1x4-50")
    assert _pulling_away(trace["metrics"], trace["config"]) == []


def _parts(seed: int, paid_in_full: bool, steps: int = 300) -> list:
    """One prompt x 12 a step. ``judge_f`` varies with the prompt (0-0.6); ``helpful`` is a bonus that ramps from step
    150. Paid in full: reward = judge_f + helpful, both logged. Otherwise: the reward pays judge_f + helpful but logs
    judge_f beside it and the paid total as ``g`` (Tinker's shape), so the parts do not sum to the reward."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        f = sum(rng.random() < rng.choice([0.05, 0.3, 0.4, 0.5]) for _ in range(12)) / 12
        helpful = 0.0 if s < 150 else min(0.6, 0.006 * (s - 150))
        m = {"reward": f + helpful, "rewards/judge_f/mean": f, "entropy": 1.5}
        if paid_in_full:
            m["rewards/helpful/mean"] = helpful
        else:
            m["rewards/g/mean"] = f + helpful
        out.append((s, m))
    return out


def test_a_part_paid_in_full_is_left_to_the_other_rules_and_a_score_beside_the_reward_is_still_judged():
    for seed in range(3):
        assert _pulling_away(_parts(seed, True)) == [], seed
        hits = _pulling_away(_parts(seed, False))
        assert hits and 150 < hits[0] <= 230, (seed, hits)


def test_a_healthy_trl_run_with_two_weighted_rewards_is_not_pulling_away_from_its_width_check():
    """``trl_cpu_settings13``'s bnpo run pays accuracy at 0.8 and a width check at 0.2 (TRL's ``reward_weights``):
    reward = 0.8 x accuracy + 0.2 x width on all 300 steps (to 1e-7). The width check sits at 1 (single steps 0.67-0.78)
    while accuracy wanders 0.26-0.56: each time accuracy's 10-step mean was up (0.527 and 0.541 against 0.485 in the
    warm-up: 26, 218) the reward's lead over the width check rose with it, and the paired-lead rule called that
    "pulling away". A part paid at a fixed weight is one objective among several, as a part paid in full is."""
    trace = real_run("trl_cpu_settings13-healthy-llamas9-3prompt-3gen-bnpo-2rewards08-02-cosminlr-warm30-temp09-lr1e-4-300")
    assert _pulling_away(trace["metrics"], trace["config"]) == []


def _weighted(seed: int, bonus: bool, steps: int = 300) -> list:
    """Three prompts x 3 a step, paid 0.8 x accuracy + 0.2 x width (both logged, both varying from the first step).
    Learning: accuracy's chance rises 0.35 -> 0.65 over 100-250 while width stays near 0.93. ``bonus``: accuracy stays
    flat and an unlogged bonus (up to 0.3) ramps into the reward from 150."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        p = 0.35 if bonus else 0.35 + 0.3 * min(1.0, max(0.0, (s - 100) / 150))
        acc = sum(rng.random() < p for _ in range(9)) / 9
        width = sum(rng.random() < 0.93 for _ in range(9)) / 9
        extra = min(0.3, 0.003 * (s - 150)) if bonus and s >= 150 else 0.0
        out.append((s, {"reward": 0.8 * acc + 0.2 * width + extra, "rewards/accuracy/mean": acc,
                        "rewards/width_ok/mean": width, "entropy": 1.5}))
    return out


def test_a_part_paid_at_a_fixed_weight_is_left_to_the_other_rules_and_correctness_is_still_judged():
    for seed in range(3):
        assert _pulling_away(_weighted(seed, False)) == [], seed
        hits = _pulling_away(_weighted(seed, True))
        assert hits and 150 < hits[0] <= 230, (seed, hits)
