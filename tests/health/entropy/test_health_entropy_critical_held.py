"""The ratio critical of ``entropy_explosion`` needs persistence too (issue 29, "magnitude + persistence for
criticals"; branch h-trlcrit). The healthy CISPO run of trl_cpu_settings10 (qwen2, reference synced every 5 steps,
temperature 0.7, logged every 10 steps) widened its policy in an early learning phase (entropy 0.52 -> 1.5 over 150
steps, warm-up median 0.56) and then sat at 1.45-1.69 for 650 steps: 2.6-2.95x its warm-up. One logged value of 1.687
at 290 (3.01x) made a critical, the next was 1.60. The critical's bar (``critical_ratio`` x the warm-up) now has to
hold for ``sustain`` checks of its own, as the warning's does; the early warning (110, 2.5x) stays. A run whose
entropy keeps climbing past 3x (rlcockpit_trainer_cpu4's sevens run, 1.35 -> 4.2) still gets its critical, two
steps later than on a single check.
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def alerts(found, detector):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_a_plateau_crossing_3x_on_one_logged_value_is_no_critical():
    run = real_run("healthy-qwen2s6-3prompt-3gen-cispo-syncref5-temp07-800-log10", "trl_cpu_settings10")
    found = replay(run)
    assert alerts(found, "entropy_explosion") == [(110, "warning")]
    assert [f for f in found if f.severity == "critical"] == []


def test_an_entropy_held_past_3x_is_still_a_critical():
    run = real_run("reward_hacking-qwen2-1prompt-12sample-sevensramp-lr3e-4-450-val10", "rlcockpit_trainer_cpu4")
    assert alerts(replay(run), "entropy_explosion") == [(151, "warning"), (198, "critical")]
