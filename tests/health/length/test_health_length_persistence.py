"""``length_explosion``'s critical needs ``sustain`` consecutive checks (issue 29, branch h-detect16).

``trl_state_public13``'s healthy 1200-step run (logged every 10 steps) has a self-recovering long-answer episode:
the mean length 13.7 -> 41 -> 47 -> 94.5 -> 84 -> 51 -> 14 while the reward stays 0.64-0.89 and the eval reward
keeps rising. The critical fired on the single logged value 94.5 (mean of 3: 61, 4.5x; truncation 20.4% against a
20% bar); the next check has the mean of 3 below the value before it, so it no longer holds. The episode stays
warned of at 300, a defensible reading: since h-quiet by ``truncation`` alone (the answers that end kept their
length, so the turn of the mean is the cut answers' event, see test_health_length_ended_turn.py). Lost stop tokens
hold at the limit and stay critical one logged step later.
"""
from __future__ import annotations

from health_corpus_runs import real_run, replay


def _length(trace, detectors=("length_explosion",)):
    return [(f.step, f.severity) for f in replay(trace)
            if f.detector in detectors and f.severity in ("warning", "critical")]


def test_a_self_recovering_long_answer_episode_is_a_warning_not_a_critical():
    found = _length(real_run("grpo-math-pipeline-qwen1.5b-sft-lora-1200", "trl_state_public13"),
                    ("length_explosion", "truncation"))
    assert (300, "warning") in found and not [s for s, sev in found if sev == "critical"], found


def test_lost_stop_tokens_stay_critical_one_logged_step_later():
    for suffix, source, at in (("gpt2-1prompt-eos-lost-240", "trl_cpu_settings", 128),
                               ("qwen2-2prompt-eos-lost-400-val10", "rlcockpit_trainer_cpu3", 263),
                               ("llamas1-2prompt-eos-lost-400-log4", "trl_cpu_settings3", 236)):
        crit = [s for s, sev in _length(real_run(suffix, source)) if sev == "critical"]
        assert crit and crit[0] <= at, (suffix, crit)
