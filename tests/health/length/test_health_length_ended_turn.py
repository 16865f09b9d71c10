"""``length_explosion``'s turn rule leaves to ``truncation`` a rise made only of answers cut at the limit (issue 29,
"quiet on healthy noise", one event told once). lzhihan's healthy TRL run (bench corpus source trl_state_public13)
answers in ~10.6 tokens; in two episodes (290-350, 570-650) up to a third of its answers run to the 256-token cap,
so the mean length goes 13.7 -> 38.2 and 13.6 -> 44.4, while the answers that end keep their length
(``completions/mean_terminated_length`` 10.5-13.8 throughout). ``truncation`` warns of the first (300);
``length_explosion`` warned of them a second time. The turn is now not warned of while the terminated mean is above
0 and within ``turn_ratio`` of its level before the turn; answers that end longer (a length-paying reward), or a
terminated mean of 0 (every answer cut), still are.
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay, replay_stream


def turns(found):
    return [f.step for f in found if f.detector == "length_explosion" and f.title.startswith("Response length turned")]


def alerts(found):
    return [f.step for f in found if f.detector == "length_explosion" and f.severity != "info"]


def test_the_real_runs_cut_answer_episodes_are_truncations_only():
    run = real_run("healthy-grpo-math-pipeline-qwen1.5b-sft-lora-1200", "trl_state_public13")
    found = replay(run)
    assert alerts(found) == []
    # truncation warns of the first episode (the second is under its peak: test_health_recurrence_gate.py)
    assert [f.step for f in found if f.detector == "truncation" and f.severity == "warning"][:1] == [300]


def stream(ended_after: float, cut_after: float, steps: int = 300, at: int = 200):
    """TRL keys, every step: 10-token answers; from ``at`` a share ``cut_after`` runs to a 256-token cap and the
    answers that end average ``ended_after`` tokens."""
    out = []
    for s in range(1, steps + 1):
        wobble = 0.3 * ((s * 7919) % 11 - 5) / 5
        # before ``at``: one answer of 80 cut every 7th step (the real run's 1/80 steps)
        ended, cut = (10.0 + wobble, 0.0125 if s % 7 == 0 else 0.0) if s < at else (ended_after + wobble, cut_after)
        out.append((s, {"completions/mean_length": (1 - cut) * ended + cut * 256, "completions/clipped_ratio": cut,
                        "completions/max_length": 256.0 if cut else 12.0,
                        "completions/mean_terminated_length": 0.0 if cut >= 1 else ended, "reward": 0.7}))
    return out


def test_longer_ended_answers_or_every_answer_cut_still_turn():
    assert turns(replay_stream(stream(10.0, 0.1))) == []  # only cut answers: truncation's event
    assert any(200 <= s <= 215 for s in turns(replay_stream(stream(40.0, 0.0))))  # the answers that end got longer
    assert any(200 <= s <= 215 for s in alerts(replay_stream(stream(10.0, 1.0))))  # every answer cut
