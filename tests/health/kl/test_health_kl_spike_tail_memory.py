"""Three batches at a level the run's KL passes one time in thirteen are no spike, however quiet the last 20 steps
were (issue 29, "judge a run against its own noise"; branch h-quiet). The prompt-truncation length_explosion run of
trl_cpu_settings12 (gpt2, 4 prompts x 3 completions, logged every step) trains on unchanged prompts up to step 138
(its collator cuts round(ramp(k, 120, 270, 0, 4)) characters: 0 before 139). Its KL's median is ~0.04, and single
batches passed 0.18 at 9 of the first 119 steps (0.55 and 0.28 back to back at 12-13, 0.48 at 42, 0.53 at 51, 0.31
at 110). At 120-122 three in a row did (0.427, 0.184, 0.279): the 20 steps before held only one such batch, and
``kl_spike`` called a critical 57 steps before the onset (179). ``kl_spike``'s tail is now also taken over the last
``tail_memory`` (100) logged values with the same share (``tail_allow`` in ``window``: 5 of 100): 0.21 there, above
the held batches' lowest. Jumps out of the run's range keep their criticals (the reference-model noise at 150 and the
lost optimizer state at 150 of the same source: KL 0.05 -> 0.64 and 0.02 -> 0.33).
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def alerts(found, detector):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def test_three_batches_inside_the_runs_longer_tail_are_not_a_spike():
    run = real_run("length_explosion-gpt2s8-4prompt-3gen-prompttruncleft0-4-120-270-350-eval25", "trl_cpu_settings12")
    found = replay(run)
    # the spike rules stay quiet all run long; the blow-ups-recurring rule (branch h-trlmiss16) warns only well
    # after the onset, where the KL's medians are 0.23-0.67 and its single batches reach 53.9
    spikes = [f for f in found if f.detector == "kl_spike" and not f.title.startswith("KL blowing up")]
    assert alerts(spikes, "kl_spike") == []
    assert [s for s, _sev in alerts(found, "kl_spike") if s < run["onset"] + 15] == []
    assert [f.step for f in found if f.severity == "critical" and f.step < run["onset"] - 5] == []


def test_jumps_out_of_the_runs_range_are_still_criticals():
    noise = real_run("collapse-gpt2s8-4prompt-3gen-refmodelnoise005-at150-300-eval25", "trl_cpu_settings12")
    assert alerts(replay(noise), "kl_spike")[:1] == [(152, "critical")]
    lost = real_run("collapse-llamas8-4prompt-3gen-resumeoptstatelost-lrx10-at150-constlr-300", "trl_cpu_settings12")
    assert alerts(replay(lost), "kl_spike")[:1] == [(154, "critical")]
