"""``loss_spike`` on TRL's GRPO loss where the completions' lengths differ (issue 29, branch h-quiet14).

On-policy, TRL's logged loss is beta x KL plus ``-sum(A_i L_i) / sum(L_i)``: the advantages weighted by their
completions' token counts. That part is exactly 0 on a step whose completions all have one length and moves with which
answers ran longer otherwise. A small-model run whose answers are 3 tokens on most steps logs 0.04 x KL for 30 steps,
then -0.14 on the one step two answers ran to 8 tokens: 11-24 "typical deviations" of a window with no such step.
Such a value is no divergence; one past what the advantages can give (``adv_bound`` x the length spread) still is.
"""
from __future__ import annotations

import numpy as np
from health_corpus_runs import real_run, replay, replay_stream


def _loss_spike(found):
    return [(f.step, f.severity) for f in found if f.detector == "loss_spike" and f.severity != "info"]


def test_healthy_trl_runs_whose_lengths_differ_now_and_then_get_no_loss_spike():
    """Before: warnings at 62 (-0.136, prefixgrader), 29 (-0.0358, stalerewards), 103 (-0.0839, sortedbydifficulty):
    each on steps where completions/min_length < completions/max_length, the loss 0.04 x kl on every other step."""
    for suffix, source in (("1prompt-8gen-prefixgrader-from150-lr1e-4-350", "trl_cpu_settings14"),
                           ("2prompt-4gen-stalerewards-from150-lr1e-4-350", "trl_cpu_settings14"),
                           ("2prompt-4gen-sortedbydifficulty-noshuffle-350-eval25", "trl_cpu_settings13")):
        assert _loss_spike(replay(real_run(suffix, source))) == [], suffix


def _trl_step(rng, kl, lo=3.0, hi=3.0, pg=0.0):
    return {"loss": 0.04 * kl + pg, "kl": kl, "completions/min_length": lo, "completions/max_length": hi,
            "completions/mean_length": (lo + hi) / 2, "reward": float(rng.uniform(0.3, 0.5)),
            "reward_std": float(rng.uniform(0.1, 0.3)), "grad_norm": float(rng.uniform(2, 4))}


def test_a_length_weighted_excursion_is_quiet_and_one_past_the_advantages_bound_is_not():
    rng = np.random.default_rng(3)
    kls = np.exp(rng.normal(np.log(0.05), 0.6, 200))
    stream = [(s, _trl_step(rng, float(kls[s]))) for s in range(1, 200)]
    for s, pg in ((4, -0.02), (9, 0.03), (14, -0.01), (33, 0.02)):  # lengths differ now and then from the start
        stream[s - 1] = (s, _trl_step(rng, float(kls[s]), 3, 4, pg))
    # steps 60-61: two answers ran to 8 tokens, the loss -0.12 and -0.29 (the advantages' length weighting)
    stream[59] = (60, _trl_step(rng, float(kls[60]), 3, 7, -0.12))
    stream[60] = (61, _trl_step(rng, float(kls[61]), 3, 8, -0.29))
    # steps 150-151: lengths differ by one token and the loss is -30: no advantage gives that
    stream[149] = (150, _trl_step(rng, float(kls[150]), 3, 4, -30.0))
    stream[150] = (151, _trl_step(rng, float(kls[151]), 3, 4, -30.0))
    found = _loss_spike(replay_stream(stream))
    assert not any(s < 150 for s, _ in found), found
    assert any(150 <= s <= 153 for s, _ in found), found
