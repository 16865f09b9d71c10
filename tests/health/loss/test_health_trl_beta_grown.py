"""``loss_spike``'s KL-coefficient rule on TRL's GRPO loss (issue 29, branch h-trl16r).

On-policy, TRL's logged loss on a step whose completions all have one length is beta x KL exactly (the advantages'
part is 0). A constant beta keeps that multiple on every such step however the KL moves; a beta that an adaptive
controller ramps up (0.04 -> 4, ``trl_cpu_settings16``) moves it: the loss and the gradient grow with beta while the KL
is pulled down, and no single loss value is far out of a noisy small-batch run's band.
"""
from __future__ import annotations

import numpy as np
from health_corpus_runs import real_run, replay, replay_stream


def _loss_spike(found):
    return [(f.step, f.severity) for f in found if f.detector == "loss_spike" and f.severity != "info"]


def _beta(found):
    return [f.step for f in found if f.detector == "loss_spike" and "KL coefficient" in f.title]


def test_trl_beta_ramp_is_caught_near_its_onset():
    """Before: no loss_spike/grad_spike alert at all (onset 160, window 155-175). The loss/KL multiple on
    equal-length steps: 0.040 on every such step to 149, 0.092 (152), 0.119 (153), 0.172 (155), 0.225 (157)."""
    run = real_run("loss_divergence-llamas12-2prompt-4gen-betaramp004-4-150-300-constlr2e-4-350", "trl_cpu_settings16")
    found = _loss_spike(replay(run))
    assert found and 155 <= found[0][0] <= 175, found


def _trl_step(rng, kl, beta, lo=3.0, hi=3.0, pg=0.0):
    return {"loss": beta * kl + pg, "kl": kl, "completions/min_length": lo, "completions/max_length": hi,
            "completions/mean_length": (lo + hi) / 2, "reward": float(rng.uniform(0.3, 0.5)),
            "reward_std": float(rng.uniform(0.1, 0.3)), "grad_norm": float(rng.uniform(2, 4))}


def test_a_constant_beta_is_quiet_however_the_kl_moves_and_a_grown_one_is_not():
    """Before: the grown beta (0.04 -> 0.2 at 200) raised nothing."""
    rng = np.random.default_rng(5)
    kls = np.exp(rng.normal(np.log(0.05), 1.0, 300))  # a KL that moves 10x from step to step
    steady = [(s, _trl_step(rng, float(kls[s]), 0.04, 3, 3 + (s % 5 == 0), 0.01 * (s % 5 == 0))) for s in range(1, 300)]
    assert _beta(replay_stream(steady)) == []
    grown = [(s, _trl_step(rng, float(kls[s]), 0.04 if s < 200 else 0.2, 3, 3 + (s % 5 == 0),
                           0.01 * (s % 5 == 0))) for s in range(1, 300)]
    found = _beta(replay_stream(grown))
    assert found and 200 <= found[0] <= 203, found

    # a policy-gradient part that is not 0 on equal-length steps (several updates on one generation): the multiple is
    # not exact, so the rule never arms and the same x5 change in it says nothing
    off = [(s, _trl_step(rng, float(kls[s]), 0.04 if s < 200 else 0.2, pg=float(rng.normal(0, 0.01))))
           for s in range(1, 300)]
    assert _beta(replay_stream(off)) == []
