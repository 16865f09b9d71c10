"""Slow failures seen near their onset by a change test against the run's early level (issue 29, the sixth CPU pass
of bench/detection_corpus/real/: a sampling temperature lowered step by step). Next to each, the healthy shape the
same rule must leave alone: a policy that sharpens slowly while its reward grows."""

from __future__ import annotations

import random

from rlcockpit.health import HealthMonitor


def replay(trace):
    mon = HealthMonitor(None, None)
    found = []
    for step, metrics in trace:
        found += mon.observe(step, metrics)
    return found + mon.close()


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
