"""``kl_spike`` on a run just past its warm-up (issue 29, branch h-early16): until its reference window holds
``window`` (20) batches, the held values of a spike must also clear the warm-up's bar (``early_abs``, 1.0, and
``early_ratio`` x the first KL). The termination-penalty collapse of trl_cpu_settings15 (llama-small, 2 prompts x 4
completions, the penalty from step 100, the label) logs a KL of 0.35, 0.24, 0.25 at steps 11-13 against a median of
0.04 over the ten steps before: ``kl_spike`` called a critical at step 13, 82 steps before the onset window, though
the run's KL came back at 0.3-0.5 every few steps for the rest of the run (0.36 at 18, 0.31 at 40). Ten batches have
not shown a small batch's KL its bursts. A KL that leaves the reference within the first steps by a factor the
warm-up rule knows (above 1.0) is still a critical there, and a jump once the window is full is judged as before.
"""

from __future__ import annotations

import math

import numpy as np
from health_corpus_runs import real_run, replay

from rlcockpit.health import HealthMonitor


def alerts(found, detector="kl_spike"):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_a_burst_out_of_a_ten_step_window_is_no_spike():
    run = real_run("collapse-llamas11-2prompt-4gen-terminationpenalty05-from100-constlr2e-4-350", "trl_cpu_settings15")
    found = replay(run)
    assert [a for a in alerts(found) if a[0] < run["onset"] - 5] == []


def stream(jump_at: int, level: float, hold: int = 1000, steps: int = 60, seed: int = 0):
    """A small batch's KL: 0 at the first step, then log-normal noise (a factor of ~1.5) around 0.04, and around
    ``level`` for ``hold`` steps from ``jump_at``."""
    rng = np.random.default_rng(seed)
    for step in range(1, steps + 1):
        at = level if jump_at <= step < jump_at + hold else 0.04
        yield step, {"kl": 0.0 if step == 1 else at * math.exp(0.4 * rng.standard_normal())}


def replay_stream(s):
    mon = HealthMonitor()
    return [f for step, m in s for f in mon.observe(step, m)] + mon.close()


def test_a_burst_to_a_healthy_level_right_after_warm_up_is_left_alone():
    for seed in range(4):
        assert alerts(replay_stream(stream(12, 0.3, hold=4, seed=seed))) == [], seed


def test_a_jump_past_the_warm_up_bar_right_after_warm_up_is_still_critical():
    for seed in range(4):
        found = alerts(replay_stream(stream(12, 3.0, seed=seed)))
        assert found and found[0][1] == "critical" and 12 <= found[0][0] <= 16, (seed, found)


def test_the_same_jump_once_the_window_is_full_is_still_found():
    for seed in range(4):
        found = alerts(replay_stream(stream(40, 0.6, seed=seed)))
        assert found and 40 <= found[0][0] <= 45, (seed, found)
