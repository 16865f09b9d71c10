"""``reward_divergence``'s pulling-away lead must not rest on one batch (issue 29, branch h-early2).

verl run rlcockpit_trainer_cpu11 lenpenaltysignflip02: the reward equals ``reward_extra/acc/mean`` except where an
answer ran past 3 characters; from step 200 each character past 3 pays +0.2 instead of -0.2, and the policy learns
it from ~337 (onset 337). Before that, single batches held one long answer: step 257 paid a lead of +0.27 (every
other step of its window 0), step 319 +0.5. Each stayed in the 10-step window for 10 steps and carried the mean of
the reward, and the 3 successive observations, on its own: warnings at 263 and 321, 74 and 16 steps before the onset
(the window's lead fell back to ~0 as soon as that batch left it). The rise must now hold without the window's one
pair with the largest lead. Fails on the base (warnings at 263 and 321; after the synthetic series' one-batch spikes)."""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def divergence(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "reward_divergence" and f.severity in ("warning", "critical")]


def test_the_sign_flip_run_warns_at_its_onset_not_on_single_long_batches_before_it():
    found = replay(real_run("reward_hacking-gpt2s7-2prompt-6sample-lenpenaltysignflip02-at200-constlr1e-4-resp24-450-val25",
                            source="rlcockpit_trainer_cpu11"))
    hits = divergence(found)
    assert hits and 332 <= hits[0] <= 352, hits  # onset 337: found inside [onset-5, onset+15], nothing before


def series(seed: int, spikes: dict[int, float], bonus_from: int | None = None, steps: int = 200) -> list:
    """36 samples a step at a steady 40% right: reward = accuracy, plus ``spikes[step]`` on single steps (one batch paid far beyond
    its score), plus from ``bonus_from`` a bonus of 0.25 paid on every batch."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        acc = sum(rng.random() < 0.4 for _ in range(36)) / 36
        extra = spikes.get(s, 0.0) + (0.25 if bonus_from is not None and s >= bonus_from else 0.0)
        out.append((s, {"reward": acc + extra, "rewards/accuracy/mean": acc, "entropy": 1.5}))
    return out


def mon_replay(trace: list) -> list:
    mon = HealthMonitor()
    return [f for s, m in trace for f in mon.observe(s, m)] + mon.close()


@pytest.mark.parametrize("seed", range(4))
def test_one_batch_paid_far_above_its_score_is_not_a_divergence(seed):
    hits = divergence(mon_replay(series(seed, {80: 1.5}, steps=120)))
    assert not hits, (seed, hits)


@pytest.mark.parametrize("seed", range(4))
def test_a_bonus_paid_on_every_batch_is_still_found(seed):
    hits = divergence(mon_replay(series(seed, {}, bonus_from=100)))
    assert hits and 100 < hits[0] <= 115, (seed, hits)
