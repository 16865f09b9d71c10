"""Answers getting shorter *and* less often right at once (issue 29, helper h-miss18): ``length_collapse``'s slide
rule. Either series drifting down alone is a healthy run's doing (concise answers as a policy learns; a reward that
sags on harder batches); both at once, each out of its own early noise, is a policy losing what it could do. Two
real collapses of two sources were missed by every collapse detector before this rule: a shard of 3-digit prompts
rolled into a 2-digit task (rlcockpit trainer) and a chat template ramped in (TRL).
"""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream

SHARD = "rlcockpit_trainer_cpu16-collapse-llamas12-4prompt-3sample-3digitshard0-100pct-150-300-350-val18"
TEMPLATE = "trl_cpu_settings16-collapse-llamas12-2prompt-4gen-chattemplateramp0-1-150-300-350"


def slides(found) -> list:
    return [f for f in found if f.detector == "length_collapse" and "sliding" in f.title]


def test_a_corrupted_shard_is_seen_where_answers_and_reward_slide():
    """Reward 0.42 -> 0.33 and mean length 3.0 -> 2.85 from step ~185; main's collapse detectors stayed silent
    (entropy_collapse warned at 229, not responsible for collapse)."""
    trace = real_run(SHARD)
    hits = slides(replay(trace))
    assert hits, "no slide warning"
    assert trace["onset"] - 5 <= hits[0].step <= trace["onset"] + 15, hits[0].step
    vals = hits[0].evidence["values"]
    assert vals["length"] < vals["length_early"] and vals["reward"] < vals["reward_early"]
    assert "shorter and less often right" in hits[0].causes[0].title  # not the empty-answer cause of the detector


def test_a_chat_template_ramped_in_is_seen_in_the_window():
    trace = real_run(TEMPLATE)
    hits = slides(replay(trace))
    assert hits and trace["onset"] - 5 <= hits[0].step <= trace["onset"] + 15, [f.step for f in hits]
    assert "completions/mean_length" in hits[0].title and "reward" in hits[0].title


def _stream(length_falls: bool, reward_falls: bool) -> list[tuple[int, dict]]:
    """A reward that is a mean of 12 0/1 scores around 0.4, answers of ~3 tokens (means of 12); from step 150 the
    length drifts to ~2.7 and/or the reward to ~0.2."""
    rng = random.Random(3)
    out = []
    for step in range(1, 301):
        late = min(1.0, max(0.0, (step - 150) / 40))
        p = 0.4 - (0.2 * late if reward_falls else 0.0)
        short = 0.3 * late if length_falls else 0.0
        out.append((step, {"critic/score/mean": sum(rng.random() < p for _ in range(12)) / 12,
                           "response_length/mean": sum(3 - (rng.random() < short) for _ in range(12)) / 12
                           + rng.gauss(0, 0.02),
                           "response_length/min": 3.0 - late}))
    return out


def test_only_the_two_together_warn():
    """Both sliding: one warning after the start. Shorter answers with a steady reward (a policy getting concise)
    and a sagging reward with steady answers (harder batches): none."""
    hits = slides(replay_stream(_stream(True, True)))
    assert len(hits) == 1 and 160 <= hits[0].step <= 200, [(f.step, f.title) for f in hits]
    assert slides(replay_stream(_stream(True, False))) == []
    assert slides(replay_stream(_stream(False, True))) == []
