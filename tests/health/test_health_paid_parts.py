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
