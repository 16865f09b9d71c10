"""A KL held at a level the run's single batches already reached is no spike (issue 29, "judge a run against its own
noise"; branch h-trlcrit). The healthy GSPO run of trl_cpu_settings10 (gpt2, 3 prompts x 3 completions, temperature
0.7, logged every 3 steps) has a heavy-tailed KL: a median near 0.08 with single logged values of 0.3-2.5 every few
dozen steps (sequence-level importance sampling over 9 completions). At 423-429 three values in a row were above
0.24 (0.775, 0.272, 0.446): their median 0.446 was 5.5x the trailing median and ``kl_spike`` called it a critical,
though the 20 logged steps before held 1.02 and 0.50 as single batches. ``kl_spike`` now needs the held median
above all but ``tail_allow`` (1) of the trailing window's values; a jump out of the run's range (the Adam-state reset
of trl_cpu_settings10, KL 0.06 -> 7.5) is still a critical at its first held step.
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def alerts(found, detector):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_the_gspo_runs_heavy_tail_is_not_a_spike():
    run = real_run("healthy-gpt2s6-3prompt-3gen-gspo-temp07-700-log3-eval15", "trl_cpu_settings10")
    found = replay(run)
    assert alerts(found, "kl_spike") == []
    assert [f for f in found if f.severity == "critical"] == []


def test_a_jump_out_of_the_runs_range_is_still_a_critical():
    run = real_run("collapse-llamas6-3prompt-3gen-adamvzeroedat250-constlr1e-4-450", "trl_cpu_settings10")
    assert alerts(replay(run), "kl_spike")[:1] == [(253, "critical")]
