"""``update_size`` on a signed PPO-KL estimate (issue 29, branch h-detect16).

With ``calclogprobs`` the trainer's ``actor/ppo_kl`` is the k1 mean of old minus new log-probs: it swings both ways
(-0.13 to 0.37 on healthy runs) while the clip fraction stays near 0. Its warm-up median sits near 0 whatever the
noise, so ``critical_ratio`` x that median (floored at 0.005) was inside the noise, and one large sample lifted a mean
of 3 past the 0.05 bar. A signed estimate is now judged against its median magnitude, on the middle of its last 3
values; a KL that was 0 and jumps (not signed in its warm-up) keeps the old rule.
"""
from __future__ import annotations

import numpy as np
from health_corpus_runs import real_run, replay, replay_stream


def _update_size(found, severities=("warning", "critical")):
    return [(f.step, f.severity) for f in found if f.detector == "update_size" and f.severity in severities]


def test_a_healthy_calclogprobs_run_gets_no_update_size_alert():
    """cpu8 passk-calclogprobs: 2 criticals (step 23) and 2 warnings before; cpu6 calclogprobs: 1 warning (step 14)."""
    for suffix, source in (("1prompt-8sample-passk-calclogprobs-500-val25", "rlcockpit_trainer_cpu8"),
                           ("2prompt-4sample-calclogprobs-constlr1e-4-400-val20", "rlcockpit_trainer_cpu6")):
        assert _update_size(replay(real_run(suffix, source))) == [], suffix


def test_a_ppo_kl_that_was_zero_and_jumps_is_still_critical():
    """The length-explosion collapse run: ``actor/ppo_kl`` exactly 0 for 199 steps, then 0.05-0.37."""
    found = _update_size(replay(real_run("length_explosion-gpt2-2prompt-collapse-300", "rlcockpit_trainer_cpu")))
    assert (200, "warning") in found and (202, "critical") in found, found


def test_a_signed_ppo_kl_held_far_above_its_own_noise_is_critical():
    rng = np.random.default_rng(0)
    stream = [(s, {"actor/ppo_kl": float(rng.normal(0.01, 0.04)), "actor/pg_clipfrac": 0.0}) for s in range(1, 101)]
    stream += [(s, {"actor/ppo_kl": float(rng.normal(0.4, 0.04)), "actor/pg_clipfrac": 0.0}) for s in range(101, 121)]
    assert any(v < 0 for _s, m in stream[:10] for v in [m["actor/ppo_kl"]])
    found = _update_size(replay_stream(stream))
    assert found and found[0][0] <= 103 and any(sev == "critical" and s <= 106 for s, sev in found), found
    assert all(s > 100 for s, _ in found), found
