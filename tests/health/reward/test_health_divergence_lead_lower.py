"""``reward_divergence``'s pulling-away lead judged from the level the lead moved down to (issue 29, branch
h-lrramp).

The paired lead compares the reward's lead over a task score logged on the same samples with that lead during the
warm-up, and the reward's rise with its warm-up level. TRL's sevens run (2 prompts, logged every 2 steps): reward =
accuracy until 141; then a second term came in and paid less (the lead fell from 0 to about -0.09 and held, the
reward from 0.29 to 0.18); from ~216 a bonus for the digit 7 lifted the lead back to +0.02..+0.1 and the reward to
0.3-0.4 (onset 218, the label). Against the warm-up the reward was not up until ~258: the first alert came 40
steps late. Where the lead's mean over the ``gap_ref`` paired observations before the span is ``gap_z`` noise units
of such a mean under the warm-up's lead, the lead, the reward and the score are judged from those observations."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def divergence(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "reward_divergence" and f.severity in ("warning", "critical")]


def test_the_sevens_bonus_after_a_lower_paying_term_is_found_inside_its_window():
    found = replay(real_run("reward_hacking-qwen2-2prompt-sevens-lr3e-4-450-log2", source="trl_cpu_settings3"))
    hits = divergence(found)
    assert hits and 213 <= hits[0] <= 233, hits  # onset 218
    first = next(f for f in found if f.detector == "reward_divergence")
    assert "rewards/accuracy/mean" in first.title and "before" in first.title


def two_scores(seed: int, lead: list[float], steps: int = 320) -> list:
    """Two prompts x 6 a step: the accuracy varies with the prompts (its mean 0-0.6); reward = accuracy +
    ``lead[step]`` plus a little noise of its own (the second term's)."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        acc = sum(rng.random() < rng.choice([0.05, 0.3, 0.4, 0.5]) for _ in range(12)) / 12
        extra = lead[s - 1] + (rng.gauss(0.0, 0.03) if s > 120 else 0.0)
        out.append((s, {"reward": acc + extra, "rewards/accuracy/mean": acc, "entropy": 1.5}))
    return out


def mon_replay(trace: list) -> list:
    mon = HealthMonitor()
    return [f for s, m in trace for f in mon.observe(s, m)] + mon.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_bonus_after_a_penalty_is_found_within_fifteen_steps(seed):
    """reward = accuracy until 120, then 0.1 under it (a term that pays less), then from 220 a bonus of +0.12 over
    that: the lead rises from -0.1 to +0.02, the reward to 0.02 over its warm-up level (not up by that measure)."""
    lead = [0.0] * 120 + [-0.1] * 100 + [0.02] * 100
    hits = divergence(mon_replay(two_scores(seed, lead)))
    assert hits and 220 <= hits[0] <= 235, (seed, hits)


@pytest.mark.parametrize("seed", range(4))
def test_a_term_that_pays_less_and_holds_is_no_divergence(seed):
    lead = [0.0] * 120 + [-0.1] * 200
    assert divergence(mon_replay(two_scores(seed, lead))) == [], seed
