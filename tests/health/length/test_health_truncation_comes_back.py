"""``truncation``'s critical needs the ratio not to have come back (issue 29): long answers that run to the limit
one step and end by themselves the next are a small batch's noise, a warning at most; a runaway keeps running into
the limit once it has started. Our trainer's constant-lr gpt2 control (rlcockpit_trainer_cpu15, 4 prompts x 3
samples, an 8-token limit over 3-token answers) cut 5, 7, 1, 4 of its 12 answers at steps 123-126, 1/12 on most steps
of 98-142 and 0 after: a critical at 126 on a healthy run, a warning (the creep at 103) now."""

from __future__ import annotations

import pytest
from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def truncation(found: list) -> list[tuple[int, str]]:
    return [(f.step, f.severity) for f in found if f.detector == "truncation" and f.severity in ("warning", "critical")]


def test_our_trainers_constant_lr_control_gets_no_truncation_critical():
    trace = real_run("healthy-gpt2s11-4prompt-3sample-constlr2e-4-350-val14", source="rlcockpit_trainer_cpu15")
    hits = truncation(replay(trace))
    assert hits and all(sev == "warning" for _s, sev in hits), hits


def test_a_runaway_from_zero_keeps_its_critical():
    """TRL's eos-lost gpt2 run: every answer cut from 126; the warm-up zeros before the jump are not a return."""
    trace = real_run("length_explosion-gpt2-1prompt-eos-lost-240", source="trl_cpu_settings")
    assert (126, "critical") in truncation(replay(trace))


def stream(clips: list[int], batch: int = 12, warm: int = 60) -> list:
    """``warm`` steps of none of ``batch`` answers cut (one now and then), then ``clips`` answers cut a step."""
    out = []
    for step, cut in enumerate([1 if i % 9 == 4 else 0 for i in range(warm)] + clips, start=1):
        ratio = cut / batch
        out.append((step, {"response_length/clip_ratio": ratio, "response_length/mean": 3 + 5 * ratio,
                           "response_length/max": 8.0 if cut else 3.0}))
    return out


@pytest.mark.parametrize("episode", [[2, 3, 5, 7, 1, 4, 1, 2, 4, 1, 6, 1, 3, 1, 0, 1, 0, 0, 1, 0] + [0, 1, 0] * 10,
                                     [0, 5, 6, 1, 5, 1, 6, 0, 5, 1, 4, 0, 1, 0, 0] + [0] * 30])
def test_long_answers_that_come_and_go_stay_a_warning(episode):
    assert all(sev == "warning" for _s, sev in truncation(run(stream(episode))))


@pytest.mark.parametrize("episode", [[12] * 40, [3, 5, 6, 7, 8, 9, 9, 10, 11, 12] + [12] * 30,
                                     [5, 7, 1, 6, 7, 8, 8, 9, 10, 10] + [11] * 30])
def test_a_runaway_gets_its_critical(episode):
    hits = truncation(run(stream(episode)))
    assert any(sev == "critical" for _s, sev in hits), hits
