"""``kl_spike``'s warm-up rule on a run that logs its per-token series as sums over the batch's tokens (issue 29,
branch h-quiet17). The warm-up critical asks for the last 3 KL values above ``early_abs`` (1.0, the guide's KL
``severe_above``, a per-token level) and 10x the first logged KL. Our trainer's healthy token-sum run with the abs+ KL
loss (rlcockpit_trainer_cpu16, llama-small, 3 prompts x 4, KL weight 0.005; the label: under token-sum the logged
``actor/entropy`` is the batch's token sum, 50-step medians 56-58 on about 36 tokens, and ``actor/kl_loss`` a sum
too, medians 2.6-4.4) logs a KL of 0, 0.45, 1.48, 0.89, 1.77, 1.85, 2.01 at steps 1-7 (0.05 a token): called a
critical at 7. Every entropy it logged (54-66) is above the most a per-token entropy can be (ln 262,144 = 12.5 nats),
so the run's KL is no per-token value the warm-up bar measures; a run whose entropy is per token keeps the critical.
"""

from __future__ import annotations

import math

import numpy as np
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def alerts(found, detector="kl_spike"):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_the_token_sum_run_with_the_kl_loss_is_no_spike():
    run = real_run("healthy-llamas12-3prompt-4sample-tokensum-klloss-absplus-coef0005-350-val17",
                   "rlcockpit_trainer_cpu16")
    assert alerts(replay(run, samples=False)) == []


def stream(entropy: float, steps: int = 40, seed: int = 0, noise_from: int | None = None):
    """The KL of a policy that leaves the reference from its first update: 0 at step 1, then about 2 (log-normal
    noise, a factor of ~1.3), beside an entropy around ``entropy`` (times 6 from ``noise_from``)."""
    rng = np.random.default_rng(seed)
    for step in range(1, steps + 1):
        ent = entropy * (6.0 if noise_from is not None and step >= noise_from else 1.0)
        yield step, {"actor/kl_loss": 0.0 if step == 1 else 2.0 * math.exp(0.25 * rng.standard_normal()),
                     "actor/entropy": ent * math.exp(0.05 * rng.standard_normal())}


def replay_stream(s):
    mon = HealthMonitor()
    return [f for step, m in s for f in mon.observe(step, m)] + mon.close()


def test_a_kl_jump_at_the_start_beside_a_per_token_entropy_is_still_critical():
    for seed in range(4):
        found = alerts(replay_stream(stream(1.6, seed=seed)))
        assert found and found[0][1] == "critical" and found[0][0] <= 6, (seed, found)


def test_an_entropy_that_turns_to_noise_keeps_the_warm_up_critical():
    """An entropy that starts per token (1.6) and turns to noise above 12.5 from step 3 still had a per-token value."""
    for seed in range(4):
        found = alerts(replay_stream(stream(2.2, seed=seed, noise_from=3)))
        assert found and found[0][1] == "critical" and found[0][0] <= 6, (seed, found)


def test_the_same_kl_beside_an_entropy_summed_over_tokens_is_no_warm_up_critical():
    for seed in range(4):
        found = alerts(replay_stream(stream(58.0, seed=seed)))
        assert [a for a in found if a[0] <= 10 and a[1] == "critical"] == [], (seed, found)
