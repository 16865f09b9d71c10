"""A sparse reward's gradient norm is large only at its steps with a learning signal (issue 29): grad_spike judges
a step against the last steps that had one, not against the last logged steps.

- TRL's red-team GRPO run (bench corpus source trl_state_public14, ``healthy-finance-poison-grpo-4x4-100``, 4 groups
  of 4) earns a reward at 16 of 100 steps; at the other 84 every group ties (``frac_reward_zero_std`` 1.0) and the
  norm, the KL term's alone, is 0.0005-0.0027, where the 16 steps with a signal have 0.028-0.148. Judged against
  the tied steps, the signal steps were a 84x "spike" (warning at 11) and a 116x one "again" (critical at 22).
- Our trainer's 1-prompt x 2-sample run (rlcockpit_trainer_cpu9, ``healthy-qwen2s5-1prompt-2sample-900-val45``)
  has a norm of exactly 0 at 630 of 900 steps (the two samples score alike): the 30 logged steps before step 520
  held 9 with a gradient, all calm, and its 30 (6.9x) was a spike, though its last 30 steps with a gradient had
  norms of 17-51.
- TRL's no-clipping run (trl_cpu_settings9, ``healthy-qwen2s5-2prompt-4gen-acc07-format03-noclip-...``): the tied
  steps' 0.06-0.3 among steps with 1-3 made the spread of the trailing window, and 16.3 at step 298 a 9.5x spike.
The warm-up level (the "stays high" critical) is the median of the first steps with a signal too, set once there
are 5. The spikes of a reward scaled x100 from step 200 stay seen at their step (the verl-style run's now at 200,
the onset, where the zero-norm steps in its window had hidden the first one).
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay, replay_stream


def spikes(found):
    return [(f.step, f.severity) for f in found if f.detector == "grad_spike" and f.severity in ("warning", "critical")]


def test_the_sparse_reward_trl_run_s_signal_steps_are_not_spikes():
    run = real_run("healthy-finance-poison-grpo-4x4-100", "trl_state_public14")
    assert spikes(replay(run)) == []


def test_a_run_whose_norm_is_mostly_zero_is_judged_against_its_steps_with_a_gradient():
    run = real_run("healthy-qwen2s5-1prompt-2sample-900-val45", "rlcockpit_trainer_cpu9")
    assert spikes(replay(run)) == []


def test_the_no_clip_trl_run_s_norm_is_judged_against_its_untied_steps():
    run = real_run("healthy-qwen2s5-2prompt-4gen-acc07-format03-noclip-cosine-warmup30-400-eval40", "trl_cpu_settings9")
    assert spikes(replay(run)) == []


def test_a_reward_scaled_x100_from_step_200_is_still_a_spike_at_its_step():
    verl = real_run("grad_spike-qwen2s5-2prompt-4sample-drgrpo-reward100xfrom200-constlr1e-4-400-val20",
                    "rlcockpit_trainer_cpu9")
    found = spikes(replay(verl))
    assert found[:1] == [(200, "warning")] and (203, "critical") in found, found
    trl = real_run("grad_spike-llamas5-2prompt-4gen-scalenone-rewardx100from200-400", "trl_cpu_settings9")
    assert spikes(replay(trl))[:2] == [(200, "warning"), (202, "critical")]


def sparse_stream(seed: int, steps: int = 200, every: int = 6, spike_at: int | None = None, burst: range = range(0)):
    """TRL-named metrics of 4 groups: every group ties (norm ~0.001, the KL term) except every ``every``-th step
    and the steps of ``burst`` (one group with a spread: norm ~0.08); ``spike_at`` (a signal step) 40x that."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        signal = s % every == 0 or s in burst or s == spike_at
        g = (0.08 if signal else 0.001) * math.exp(rng.gauss(0.0, 0.3))
        if s == spike_at:
            g = 0.08 * 40
        out.append((s, {"grad_norm": g, "frac_reward_zero_std": 0.75 if signal else 1.0,
                        "reward": 0.0625 if signal else 0.0, "kl": 0.0003, "loss": 1e-5}))
    return out


def test_a_sparse_reward_s_signal_steps_stay_quiet_even_in_a_burst():
    for seed in range(3):
        # the warm-up ties throughout; then five signal steps in a row: not "stays high" against the tied level
        assert spikes(replay_stream(sparse_stream(seed, burst=range(31, 36)))) == [], seed


def test_a_real_spike_at_a_sparse_reward_s_signal_step_is_still_seen():
    found = spikes(replay_stream(sparse_stream(1, spike_at=150)))
    assert found[:1] == [(150, "warning")], found
