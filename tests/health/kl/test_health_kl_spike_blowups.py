"""``kl_spike``: KL blow-ups that recur (issue 29, branch h-trlmiss16).

A small batch's KL estimate jumps 10-300x for one batch and is back at the next; the spike rules wait for a jump
that holds, and ``kl_rising`` for the median to leave its range. TRL's leaked-answer ramp (from step 150 a share of
the training prompts, 0 -> 1 at step 300, carries its own answer in front; onset 193, where grad norm's 10-step mean
leaves its range for good) shows neither within 15 steps: its KL's median stays near 0.1 while batch after batch
blows up past 1 (1.13, 6.11, 2.17, 3.29, 20.1, 4.16, 6.94 at 190-201, where the run had two such batches in its
first 150 steps). ``kl_rising`` warned at 224. The burst rule warns when ``burst_k`` of the last ``burst_n`` batches
blow up (above the guide's ``severe_above`` and 10x the median before them) at a count the run's own earlier share
of blow-ups makes a chance of under ``burst_p``; a KL as bursty from its start has that share as its rate."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def blowup_warnings(found: list) -> list[int]:
    return [f.step for f in found if f.detector == "kl_spike" and f.severity == "warning"
            and f.title.startswith("KL blowing up")]


def test_the_leaked_answer_ramp_is_found_within_its_window():
    trace = real_run("collapse-gpt2s11-2prompt-4gen-answerleakramp0-1-150-300-lr1e-4-350-eval25",
                     source="trl_cpu_settings15")
    hits = blowup_warnings(replay(trace))
    assert hits and 188 <= hits[0] <= 208, hits  # onset 193
    assert len(hits) == 1, hits  # once per episode


def kl_stream(n: int, burst_from: int | None, rate: float, seed: int) -> list:
    """A KL near 0.1 with one batch in ``1 / rate`` blown up to 2-20 at random, and from ``burst_from`` every third
    batch blown up (never three in a row: no jump that holds)."""
    rng = random.Random(seed)
    stream = []
    for step in range(1, n + 1):
        kl = 0.1 * rng.lognormvariate(0.0, 0.6)
        if burst_from is not None and step >= burst_from:
            if (step - burst_from) % 3 == 0:
                kl = rng.uniform(2.0, 20.0)
        elif rng.random() < rate:
            kl = rng.uniform(2.0, 20.0)
        stream.append((step, {"kl": kl, "reward": 0.4 + 0.05 * rng.random()}))
    return stream


def test_blowups_that_start_recurring_are_warned_of():
    hits = blowup_warnings(replay_stream(kl_stream(300, 200, 0.01, seed=3)))
    assert hits and 200 <= hits[0] <= 220, hits


def test_a_kl_as_bursty_from_its_start_stays_quiet():
    """One batch in five blowing up from the first step on: that share is the run's own rate."""
    for seed in range(5):
        assert blowup_warnings(replay_stream(kl_stream(400, None, 0.2, seed=seed))) == [], seed
