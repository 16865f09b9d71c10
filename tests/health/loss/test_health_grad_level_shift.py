"""A gradient norm shifted to a new level from one step on (issue 29): rlcockpit's trainer summing the micro-batch
losses where it should average them from step 150 (bench corpus source rlcockpit_trainer_cpu14, the
``gradaccumsum`` runs) multiplied the gradient by the number of micro-batches for good. On the GPT-2 run (6
micro-batches, clip 100) the norm went from a median of 2.2 (0-6.0, a robust spread of ~0.6 in logs) to 5-20 at
150-160: no step far enough above its trailing median to be a spike (7.4x at 150, 2.0 log units, under 6 spreads),
never 10x the warm-up level on 4 of 5 steps, so ``grad_spike`` said nothing; the Llama run (12 micro-batches) was
seen only at 160 by the 10x-warm-up rule. Each of the four steps from 150 on was above the 95% quantile (the third
largest) of the 50 norms before them, their median 5.9x (GPT-2) and 8.2x (Llama) those 50's median: a level shift. On
the developed-on real sources the healthy runs that come nearest (four steps in a row above the previous 50's 95%
quantile) do it with a median 2.4-2.7x, under the 4x ``shift_ratio``. Fails on main ae6499a (no alert on the GPT-2
run, 160 on the Llama run; the synthetic 6x level unseen).
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay, replay_stream

SOURCE = "rlcockpit_trainer_cpu14"


def alerts(found):
    return [(f.step, f.severity, f.title) for f in found
            if f.detector == "grad_spike" and f.severity in ("warning", "critical")]


def test_the_summed_micro_batch_runs_are_seen_three_steps_after_the_shift():
    for suffix in ("gpt2s10-4prompt-3sample-micro2-gradaccumsum-clip100-constlr1e-4-from150-350-val12",
                   "llamas10-4prompt-3sample-micro1-gradaccumsum-from150-350-val20"):
        found = alerts(replay(real_run("grad_spike-" + suffix, SOURCE)))
        assert found, suffix
        step, severity, title = found[0]
        assert (step, severity) == (153, "warning"), (suffix, found[0])
        assert title.startswith("Gradient norm shifted to a new level"), title


def norms(seed: int, sigma: float, level, steps: int = 300):
    """A gradient norm with log-normal noise ``sigma`` around ``level(step)``."""
    rng = random.Random(seed)
    return [(s, {"actor/grad_norm": level(s) * math.exp(rng.gauss(0.0, sigma)), "critic/score/mean": 0.4})
            for s in range(1, steps + 1)]


def test_a_sixfold_level_held_from_one_step_is_a_warning_within_a_few_steps():
    for seed in range(4):
        found = alerts(replay_stream(norms(seed, 0.6, lambda s: 2.2 if s < 150 else 13.0)))
        assert found and 150 <= found[0][0] <= 158 and found[0][1] == "warning", (seed, found[:2])


def test_noise_and_a_gradual_rise_stay_quiet():
    for seed in range(4):
        assert alerts(replay_stream(norms(seed, 0.6, lambda s: 2.2))) == [], seed
        # the norm growing 4x over 100 steps as the policy learns: a climb, not a step
        rise = alerts(replay_stream(norms(seed, 0.4, lambda s: 2.2 * 4.0 ** min(max(s - 100, 0) / 100, 1.0))))
        assert rise == [], (seed, rise)


def test_the_real_healthy_runs_nearest_the_bar_stay_quiet():
    # four steps in a row above the previous 50's 95% quantile, at 2.4-2.7x their median
    for suffix, source in (("healthy-qwen2-1prompt-4gen-iter2-800-log1", "trl_cpu_settings4"),
                           ("healthy-gpt2s10-2prompt-4gen-schedsteppedtwice-from150-350-log2", "trl_cpu_settings14"),
                           ("healthy-llamas9-2prompt-4gen-grpo-numiter3-eps01-02-beta002-300-log2-eval20",
                            "trl_cpu_settings13"),
                           ("healthy-gpt2s9-2prompt-4gen-sortedbydifficulty-noshuffle-350-eval25", "trl_cpu_settings13")):
        assert [a for a in alerts(replay(real_run(suffix, source))) if "new level" in a[2]] == [], suffix
