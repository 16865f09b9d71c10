"""``truncation``'s near-the-limit warning where the run's config gives no length limit (issue 29): the limit is
then inferred from the maximum length the run keeps hitting, and that maximum is a limit only while answers are cut
there. The healthy TRL CISPO run of trl_cpu_settings10 (logging every 10 steps: its ``completions/max_length`` is a
mean of ten steps' maxima, 2.2 -> 4.1) never cut an answer (``completions/clipped_ratio`` 0.0 on every log, the
longest answers all ended by themselves), and was told at step 160 that its mean length 3.2 was "78% of the
4.1-token limit"."""

from __future__ import annotations

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def truncation(found: list) -> list[tuple[int, str, str]]:
    return [(f.step, f.severity, f.title) for f in found
            if f.detector == "truncation" and f.severity in ("warning", "critical")]


def test_the_cispo_run_whose_answers_all_ended_is_not_told_of_a_limit():
    trace = real_run("healthy-qwen2s6-3prompt-3gen-cispo-syncref5-temp07-800-log10", source="trl_cpu_settings10")
    assert truncation(replay(trace)) == []


def growing(clipped: bool, steps: int = 200) -> list:
    """Answers growing from 3 to ~7.5 tokens from step 100, the longest at 9 tokens from the start (no configured
    limit); with ``clipped``, one answer of 8 cut at 9 on every fifth step from step 100 (two of ten: the
    leaving-zero rule's three of ten at a limit 3x the usual length would tell it first, test_health_trunc_far_limit.py)."""
    out = []
    for step in range(1, steps + 1):
        mean = 3.0 + (min(step, 160) - 100) * 0.075 if step > 100 else 3.0
        clip = 0.125 if clipped and step > 100 and step % 5 == 0 else 0.0
        out.append((step, {"response_length/mean": mean, "response_length/max": 9.0,
                           "response_length/clip_ratio": clip}))
    return out


def test_a_maximum_no_answer_is_cut_at_is_no_limit():
    assert not [t for t in truncation(run(growing(clipped=False))) if "limit (was" in t[2]]


def test_a_maximum_answers_are_cut_at_is_still_the_limit():
    found = [t for t in truncation(run(growing(clipped=True))) if "limit (was" in t[2]]
    assert found and 100 < found[0][0] <= 160, found
