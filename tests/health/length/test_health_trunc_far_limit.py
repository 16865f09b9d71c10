"""``truncation``'s leaving-zero rule also reads answers cut at a limit far above the usual length (issue 29,
branch h-len13). rlcockpit_trainer_cpu13's Qwen2 seed-9 run with sampled validation (6 prompts x 3, responses up to
10 tokens) ran to its cap by itself from step 34: its answers had been ~2.1 tokens with the clip ratio exactly 0 for
34 steps; one answer of 18 then ran to the 10-token cap at 35, 37 and 41 (then 45, 48), never four of six steps before
the reference was no longer clean, so the leaving-zero rule never spoke (base: length_explosion's turn at 61, truncation
creeping at 66; window [29, 49]). Three of ten steps is
enough where the limit is ``far_ratio`` (3) x the median length or more: an answer cut there did not stop at all. A
healthy small batch under a limit a few tokens above its answers (3-token answers, an 8-token cap: cpu13's constant-lr
control has answers at the cap on 4 of 11 steps at 149-159) stays under the four-of-six rule alone.
"""

from __future__ import annotations

from health_corpus_runs import real_run, replay, replay_stream


def truncations(found):
    return [f.step for f in found if f.detector == "truncation" and f.severity in ("warning", "critical")]


def test_the_qwen2_run_running_to_its_cap_is_seen_inside_the_window():
    run = real_run("length_explosion-qwen2s9-6prompt-3sample-valsample-t06-n3-resp10-300-val40",
                   "rlcockpit_trainer_cpu13")
    found = replay(run)
    hits = truncations(found)
    assert hits and run["onset"] - 5 <= hits[0] <= run["onset"] + 15, hits
    first = next(f for f in found if f.detector == "truncation" and f.step == hits[0])
    assert first.title.startswith("Truncation leaving zero") and "10-token limit" in first.title, first.title
    # the matched cap-8 control (3-token answers) keeps its one late warning: answers a few tokens past their length
    control = replay(real_run("healthy-gpt2s9-4prompt-3sample-constlr2e-4-350-val12", "rlcockpit_trainer_cpu13"))
    assert [s for s in truncations(control) if s < 300] == []


def stream(usual: float, limit: float, steps: int = 220, at: int = 120, batch: int = 18):
    """``usual``-token answers, the clip ratio 0 until ``at``, then one answer of ``batch`` cut at ``limit`` on three
    of every ten steps (never four of six)."""
    out = []
    for s in range(1, steps + 1):
        cut = s >= at and (s - at) % 10 in (0, 3, 7)
        mean = usual + ((limit - usual) / batch if cut else 0.0) + (0.05 if s % 3 == 0 else 0.0)
        out.append((s, {"response_length/mean": mean, "response_length/clip_ratio": 1 / batch if cut else 0.0,
                        "response_length/max": limit if cut else usual + 1, "critic/score/mean": 0.3,
                        "actor/entropy": 1.4}))
    return out


def test_three_of_ten_steps_cut_far_above_the_usual_length_but_not_a_few_tokens_above():
    far = truncations(replay_stream(stream(2.0, 10.0)))
    assert far and 120 <= far[0] <= 135, far
    assert truncations(replay_stream(stream(3.0, 8.0))) == []  # 2.7x: a healthy small batch's long answers
