"""``truncation``'s jump rule on a run that logs every tenth step (issue 29, "quiet on healthy noise"): the rule
compares the median of the clip ratio over the last ``span_steps`` (10) steps with the 30 values before; at one log
every 10 steps that median was of 2 values, i.e. their mean, so one high logged value made half of it. lzhihan's
healthy TRL run (bench corpus source trl_state_public13, 80 completions a step, 0-5 % cut at the 256-token cap most
of the run) logged 1.25 %, 5 %, 8.75 % at steps 1100-1120 and back to 1.25 % at 1130: "Truncation jumped: 1.9 % ->
6.9 %" at 1120. The median is now of 3 logged values at least; a cut share that stays up is still a jump.
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def jumps(found):
    return [f.step for f in found if f.detector == "truncation" and f.title.startswith("Truncation jumped")]


def test_the_real_runs_single_high_logged_value_is_no_jump():
    run = real_run("healthy-grpo-math-pipeline-qwen1.5b-sft-lora-1200", "trl_state_public13")
    assert jumps(replay(run)) == []


def stream(seed: int, up_from: int | None, one_high: int | None = None, steps: int = 800):
    """A clip ratio of 80 completions logged every 10 steps: 0-3 of 80 cut, 15 % from ``up_from`` on, one logged value of
    10 % at ``one_high`` between two of 2.5 %."""
    rng = random.Random(seed)
    out = []
    for s in range(10, steps + 1, 10):
        if up_from is not None and s >= up_from:
            v = sum(rng.random() < 0.15 for _ in range(80)) / 80
        else:  # 0-3 of 80 cut, as the real run most of the time
            v = rng.choice((0, 1, 1, 2, 2, 3)) / 80
        if one_high is not None and abs(s - one_high) == 10:
            v = 0.025  # its neighbours at the usual level
        if s == one_high:
            v = 0.1
        out.append((s, {"completions/clipped_ratio": v, "completions/mean_length": 12.0 + 200 * v,
                        "reward": 0.7}))
    return out


def test_one_high_logged_value_is_no_jump_a_cut_share_that_stays_up_is():
    for seed in range(4):
        assert jumps(replay_stream(stream(seed, None, one_high=500))) == [], seed
        found = [f for f in replay_stream(stream(seed, 500)) if f.detector == "truncation" and f.severity != "info"]
        assert found and 500 <= found[0].step <= 530, (seed, [(f.step, f.title[:40]) for f in found])
