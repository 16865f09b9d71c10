"""``update_size`` on a PPO-KL that sits at a floor from its first step (issue 29, branch h-quiet14).

With a separate old-log-prob pass (``calculate_log_probs``, rollout importance sampling) and a GPT-2 actor whose
dropout is on in the training forward, ``actor/ppo_kl`` is 0.02-0.07 before any update has been taken (0.073 at step
1 with one mini-batch and one epoch) and wanders to 0.16: the gap between the two forwards, not the size of an update.
A warm-up with no negative value by chance made it an unsigned estimate, and a mean of 3 past the absolute 0.05 bar
warned (steps 11 and 146). A KL whose warm-up level is already past ``ppo_kl_warn`` / ``critical_ratio`` is now judged
against that level, as a signed one is; one that was near 0 keeps the absolute bar.
"""
from __future__ import annotations

import numpy as np
from health_corpus_runs import real_run, replay, replay_stream


def _update_size(found):
    return [(f.step, f.severity) for f in found if f.detector == "update_size" and f.severity != "info"]


def test_a_healthy_rollout_is_run_with_a_dropout_floor_gets_no_update_size_alert():
    """Before: warnings at 11 (mean of 3 0.0606) and 146 (0.0696); the run's ppo_kl median 0.041, no value below 0 in
    its first 10."""
    run = real_run("5prompt-4sample-rolloutis-seq-resp12-300-val15", "rlcockpit_trainer_cpu14")
    assert _update_size(replay(run)) == []


def test_a_floored_ppo_kl_is_quiet_at_its_floor_and_alerts_when_it_leaves_it():
    rng = np.random.default_rng(5)
    floor = [0.02 + abs(float(rng.normal(0.02, 0.03))) for _ in range(150)]  # 0.02-0.13, never below 0
    stream = [(s, {"actor/ppo_kl": floor[s - 1], "actor/pg_clipfrac": 0.02}) for s in range(1, 151)]
    stream += [(s, {"actor/ppo_kl": float(rng.uniform(0.5, 0.7)), "actor/pg_clipfrac": 0.02}) for s in range(151, 171)]
    found = _update_size(replay_stream(stream))
    assert found and all(s > 150 for s, _ in found), found
    assert found[0][0] <= 153 and any(sev == "critical" for _s, sev in found), found
