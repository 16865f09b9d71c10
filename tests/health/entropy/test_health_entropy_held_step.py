"""A step down of a noisy entropy that holds is a fall out of range (issue 29, branch h-ent15). trl_cpu_settings15's
rmsnormplus1 run (llama, 2 prompts x 4 generations) resumed at 150 with every RMSNorm gain +1: its entropy, 1.4-1.93
(median ~1.65, robust noise ~0.15) for the 30 steps before, fell at once to 0.84-1.13 and stayed there (150-157:
0.98 0.84 1.13 1.10 1.13 0.89 0.96 1.11). That is a third of its level but only ~4.5 of its own noise units, under
the sudden-fall rule's 8, and no halving, so only the slow-fall drift saw it, at 167 (delay 17). The held-step rule
(``held_k`` = 4 of the last ``held_n`` = 5 values under the 30-value median by ``held_z`` = 4 noise units and by
``shift_drop`` x it) warns at 154. A healthy run of the same noise (rlcockpit_trainer_cpu11, 3 prompts x 4 samples)
dips as far on two values (202-203: 1.10, 1.12) and is back at 1.86 the next step: no warning there (its one
warning, at 156, is the older rules' and unchanged).
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def alerts(found, detector):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_a_held_step_down_of_a_noisy_entropy_warns_within_a_few_steps():
    run = real_run("entropy_collapse-llamas11-2prompt-4gen-rmsnormplus1-at150-350-eval25", "trl_cpu_settings15")
    assert alerts(replay(run), "entropy_collapse")[0] == (154, "warning")


def test_a_two_value_dip_of_a_noisy_healthy_entropy_is_no_warning():
    run = real_run("healthy-qwen2s7-3prompt-4sample-tirotb-betas095-wd01-constlr1e-4-500-val50", "rlcockpit_trainer_cpu11")
    assert alerts(replay(run), "entropy_collapse") == [(156, "warning")]
