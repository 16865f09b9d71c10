"""Slow failures seen near their onset by a change test against the run's early level (issue 29, the sixth CPU pass
of bench/detection_corpus/real/: a sampling temperature lowered step by step). Next to each, the healthy shape the
same rule must leave alone: a policy that sharpens slowly while its reward grows."""

from __future__ import annotations

import math
import random

from health_corpus_runs import replay_stream as replay


def warnings_of(found, detector):
    return [f for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def temperature_ramp(rng: random.Random, onset: int = 220, steps: int = 450):
    """Entropy flat at ~1.55 (noise 0.1) until ``onset``, then falling by 0.01 a step, about the pace of
    qwen2-1prompt-8gen-tempramp02's fall after its onset (a temperature lowered step by step); the reward flat:
    nothing is learned. A fall of 12% of the level takes ~19 steps here, plus the smoothing: the bar is onset + 40 (main: onset + 116)."""
    out = []
    for s in range(1, steps + 1):
        level = 1.55 - 0.01 * max(0, s - onset)
        out.append((s, {"actor/entropy": max(0.05, rng.gauss(level, 0.1)),
                        "critic/score/mean": rng.choice([0.3, 0.4, 0.4, 0.5, 0.5, 0.6]), "actor/pg_loss": 0.01}))
    return out


def sharpening_while_learning(rng: random.Random, steps: int = 450):
    """A healthy run: entropy falls by a quarter over the run while the reward climbs from 0.3 to 0.7."""
    out = []
    for s in range(1, steps + 1):
        out.append((s, {"actor/entropy": rng.gauss(1.55 - 0.4 * s / steps, 0.08),
                        "critic/score/mean": min(1.0, max(0.0, rng.gauss(0.3 + 0.4 * s / steps, 0.05))),
                        "actor/pg_loss": 0.01}))
    return out


def test_entropy_drifting_down_under_a_temperature_ramp_is_a_warning_near_its_onset():
    for seed in range(3):
        found = warnings_of(replay(temperature_ramp(random.Random(seed))), "entropy_collapse")
        assert found, seed
        first = found[0]
        assert 215 <= first.step <= 260, (seed, first.step)
        assert first.severity == "warning"  # a slow fall is a warning; a critical needs the collapse itself
        assert "early level" in first.title


def test_entropy_falling_slowly_while_the_reward_grows_is_learning():
    for seed in range(3):
        assert warnings_of(replay(sharpening_while_learning(random.Random(seed))), "entropy_collapse") == [], seed


# -- KL: a critical needs magnitude plus persistence ---------------------------------------------------------------
def kl_logged_twice(bump: dict[int, float], steps: int = 300, seed: int = 4):
    """TRL with ``num_iterations=2``: each step's KL is logged twice (two optimiser passes over one batch), so a
    bump of three steps is six logged values. Lognormal around 0.2, ``bump[step]`` x at those steps."""
    rng = random.Random(seed)
    out, n = [], 0
    for s in range(1, steps + 1):
        kl = rng.lognormvariate(math.log(0.2), 0.5) * bump.get(s, 1.0)
        for _ in range(2):
            n += 1
            out.append((n, {"kl": kl, "reward": 0.4 + rng.gauss(0, 0.05)}))
    return out


def kl_criticals(found):
    return [f.step for f in found if f.detector == "kl_rising" and f.severity == "critical"]


def test_a_kl_bump_of_a_few_steps_logged_twice_is_no_rising_kl_critical():
    bump = {100: 10.0, 101: 14.0, 102: 12.0}
    assert kl_criticals(replay(kl_logged_twice(bump))) == []


def test_a_kl_that_keeps_accelerating_is_still_critical():
    rng = random.Random(11)
    trace = [(s, {"kl": rng.lognormvariate(math.log(0.05 * (1.0 if s < 150 else 1.06 ** (s - 150))), 0.3),
                  "reward": 0.4}) for s in range(1, 260)]
    assert kl_criticals(replay(trace))
