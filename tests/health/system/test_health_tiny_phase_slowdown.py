"""A reward call that grew from 0.06 ms to 0.25 s on a shared CPU (issue 29): the rlcockpit trainer run of a 4-layer
Llama with a 30 ms-per-sample reward sleep from step 200 (bench corpus source rlcockpit_trainer_cpu8,
``throughput_drop-llamas4-2prompt-4sample-slowreward30ms200-400-val25``) went from ~3,700 to ~200 tokens/s at step
200, and ``timing_s/reward`` from 6e-5 s to 0.24 s, 85 % of the step. The machine was loaded at the same time, so
generation and the update also took 1.5-2x their usual time, and ``throughput_drop`` read that as "every phase of
the step slower: other work on the same machine" (info): the reward phase was under ``phase_min`` of an ordinary
step and was not among the phases compared. First warning at 253, 53 steps late. A phase too small to count before
that now fills half the step is compared too: its growth (4,000x) is far beyond the others', so the slowdown is the
run's own, and the warning comes at 206. Other processes on the same cores, which stretch every phase, the tiny ones
included, still give an info.
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay, replay_stream


def slow(found):
    return [(f.step, f.severity) for f in found if f.detector == "throughput_drop" and f.severity in ("warning", "critical")]


def test_the_real_slow_reward_run_is_seen_within_the_window():
    run = real_run("throughput_drop-llamas4-2prompt-4sample-slowreward30ms200-400-val25", "rlcockpit_trainer_cpu8")
    found = slow(replay(run))
    assert found and 195 <= found[0][0] <= 215, found


def split_run(seed: int, load_at: int, load: float, reward_after: float, steps: int = 300):
    """A CPU run (no GPU metrics) with a ``timing_s/*`` split: generation 5 ms, update 8 ms, reward 0.06 ms; from
    ``load_at`` every phase ``load`` x slower, and the reward phase ``reward_after`` seconds (None: slowed alike)."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        f = load if s >= load_at else 1.0
        gen = 0.005 * f * math.exp(rng.gauss(0, 0.05))
        upd = 0.008 * f * math.exp(rng.gauss(0, 0.05))
        rew = 6e-5 * f * math.exp(rng.gauss(0, 0.05))
        if s >= load_at and reward_after is not None:
            rew = reward_after * math.exp(rng.gauss(0, 0.02))
        step = gen + upd + rew + 0.0005
        out.append((s, {"timing_s/gen": gen, "timing_s/update_actor": upd, "timing_s/reward": rew,
                        "timing_s/step": step, "perf/throughput": 56 / step, "critic/score/mean": 0.4}))
    return out


def test_a_reward_phase_grown_to_most_of_the_step_on_a_loaded_machine_is_a_warning():
    found = slow(replay_stream(split_run(0, 200, 1.8, 0.25)))
    assert found and 200 <= found[0][0] <= 215, found


def test_every_phase_slowed_alike_tiny_ones_included_stays_quiet():
    for seed in range(3):
        assert slow(replay_stream(split_run(seed, 200, 2.5, None))) == [], seed
