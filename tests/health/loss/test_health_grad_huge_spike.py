"""A gradient spike forty times the run's median in a run whose norm swings by a factor of two (issue 29): TRL's
run of a 4-layer Llama with the loss scaled 50x at steps 220, 260, 300 and 340 (bench corpus source
trl_cpu_settings8, ``grad_spike-llamas4-2prompt-4gen-lossscale50x-at220-260-300-340-400``) logged a gradient norm of
104 at step 220 against a median of 2.6 over the 30 steps before, but that run's norm swings from 0.02 to 12 (a
robust spread of 0.62 in logs), so the spike was 5.99 spreads above the median, under the 6 ``grad_spike`` asked
for; the one at 260 (71x) was 5.4. Only the 110x spike at 340 was seen, past the scoring window. A norm more than
``huge_ratio`` (30) x the median and ``huge_z`` (4) spreads above it is now a spike too. On the developed-on real
sources no healthy run has a step over 28x its trailing median; those nearest the bar, and a noisy norm with 20x
steps, stay quiet. The new path is a warning only: a critical still needs the 6 spreads and a second spike.
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay, replay_stream


def spikes(found):
    return [(f.step, f.severity) for f in found if f.detector == "grad_spike" and f.severity in ("warning", "critical")]


def test_the_real_trl_run_s_first_loss_scale_spike_is_seen_at_its_step():
    run = real_run("grad_spike-llamas4-2prompt-4gen-lossscale50x-at220-260-300-340-400", "trl_cpu_settings8")
    found = spikes(replay(run))
    assert found and found[0] == (220, "warning"), found


def noisy_norms(seed: int, sigma: float, every: int, factor: float, steps: int = 400):
    """A gradient norm of median 3 with log-normal noise ``sigma``, ``factor`` x its median every ``every`` steps."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        g = 3.0 * math.exp(rng.gauss(0.0, sigma))
        if s % every == 0:
            g = 3.0 * factor
        out.append((s, {"actor/grad_norm": g, "critic/score/mean": 0.4}))
    return out


def test_ordinary_noisy_norms_stay_quiet():
    for seed in range(4):
        assert spikes(replay_stream(noisy_norms(seed, 0.8, 97, 20.0))) == [], seed  # 20x: under huge_ratio


def test_the_real_healthy_runs_nearest_the_bar_stay_quiet():
    # a 1-prompt Dr. GRPO run with a step 19x its trailing median (4.9 spreads), and a num_iterations=2 run whose
    # norm is near 0 on every other step (a step 28x the median, 1.1 spreads)
    for suffix, source in (("healthy-gpt2-1prompt-drgrpo-600-log3", "trl_cpu_settings2"),
                           ("healthy-qwen2-1prompt-4gen-iter2-800-log1", "trl_cpu_settings4")):
        assert spikes(replay(real_run(suffix, source))) == [], suffix


def test_a_40x_step_in_a_norm_swinging_by_two_is_a_warning():
    found = spikes(replay_stream(noisy_norms(1, 0.6, 150, 40.0, steps=200)))
    assert found == [(150, "warning")], found
