"""Two TRL failures that change what the training signal is, seen by what they change first (issue 29, h-trlramp).

- ``update_size``'s *clipping stopped* rule: ``trl_cpu_settings9``'s iter3-eps10 run (three passes over each
  generation, constant lr 2e-4, clip epsilon 10 from step 200, labelled collapse at 215) had
  ``clip_ratio/region_mean`` above 0 on the later passes over each generation, about half its steps, for 200 steps;
  from step 199 it is exactly 0 on every step. Nothing fired until a length warning at 277. Fifteen zeros in a row,
  against a run that went at most 5 without a clipped token, is what a widened clip range looks like.
- ``reward_cliff``'s *fell under its task score* rule: ``trl_cpu_settings9``'s shuffledlabelsramp150-300 run (labels
  of the paid ``train_reward`` shuffled for a share of prompts ramping up from step 150, labelled collapse at 215)
  had ``reward`` equal to ``rewards/accuracy/mean`` on every step up to 153; then below it on more and more steps.
  The reward's own fall (0.38 -> 0.3) is inside its noise for the cliff test; the gap that was exactly 0 is not.
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import real_run, replay
from health_corpus_runs import replay_stream as run


def _alerts(found, detector):
    return [f.step for f in found if f.detector == detector and f.severity in ("warning", "critical")]


def _stopped(found):
    return [f.step for f in found if f.detector == "update_size" and "clipping stopped" in f.title]


def test_the_eps10_run_warns_that_clipping_stopped_within_its_window():
    found = replay(real_run("collapse-llamas5-2prompt-4gen-iter3-eps10from200-constlr2e-4-400", "trl_cpu_settings9"))
    stopped = [f for f in found if f.detector == "update_size" and "clipping stopped" in f.title]
    assert stopped and 210 <= stopped[0].step <= 230, [(f.step, f.title) for f in stopped]


def _passes(stop_at: int, lr_decay: bool = False, share: float = 2 / 3, seed: int = 3):
    """Three passes over each generation: the first never clips, the later two clip with probability ``share``
    (0.02-0.2 of tokens); from ``stop_at`` no pass clips. The lr constant, or a cosine decay to 0 over 300 steps."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 301):
        clipped = s < stop_at and s % 3 != 1 and rng.random() < share
        lr = 2e-4 * (0.5 * (1 + math.cos(math.pi * s / 300)) if lr_decay else 1.0)
        out.append((s, {"clip_ratio/region_mean": 0.02 + 0.18 * rng.random() if clipped else 0.0,
                        "learning_rate": lr, "loss": 0.01 * rng.gauss(0, 1)}))
    return out


def test_clipping_that_stops_warns_and_a_decaying_lr_or_a_rare_clip_does_not():
    assert [s for s in _stopped(run(_passes(200))) if 200 <= s <= 220]
    assert _stopped(run(_passes(400))) == []  # (clipping on the later passes, all the way)
    # the lr at a fifth of its peak by step 240: the updates got small enough to stay inside the clip range
    assert _stopped(run(_passes(240, lr_decay=True))) == []
    # a clip fraction above 0 on a tenth of the steps goes 40 steps without one by chance (0.9^40 = 1.5%)
    assert _stopped(run(_passes(200, share=0.15))) == []


def test_the_shuffled_labels_run_warns_that_the_reward_fell_under_its_accuracy():
    found = replay(real_run("collapse-gpt2s5-4prompt-3gen-shuffledlabelsramp150-300-constlr1e-4-400", "trl_cpu_settings9"))
    fell = [f for f in found if f.detector == "reward_cliff" and "fell under" in f.title]
    assert fell and 210 <= fell[0].step <= 230, [(f.step, f.title) for f in fell]


def _scored(under_from: int | None, weight: float = 1.0, seed: int = 4):
    """36 answers a step right with probability 0.38: ``rewards/accuracy/mean`` their share. ``reward`` is ``weight``
    x it (plus a format part paying 0.3 when ``weight`` < 1), and from ``under_from`` 0.15 less on 80% of the steps."""
    rng = random.Random(seed)
    out = []
    for s in range(1, 301):
        acc = sum(rng.random() < 0.38 for _ in range(36)) / 36
        reward = weight * acc + (0.3 if weight < 1 else 0.0)
        if under_from is not None and s >= under_from and rng.random() < 0.8:
            reward = max(0.0, reward - 0.15)
        out.append((s, {"reward": reward, "rewards/accuracy/mean": acc, "reward_std": 0.3}))
    return out


def test_a_reward_falling_under_the_score_it_equalled_warns_and_a_reward_that_is_its_score_does_not():
    assert [s for s in _alerts(run(_scored(150)), "reward_cliff") if 150 <= s <= 170]
    assert _alerts(run(_scored(None)), "reward_cliff") == []
    # a reward that never was its score (0.7 x accuracy + a format part): the gap is the weighting, not a change
    assert _alerts(run(_scored(None, weight=0.7)), "reward_cliff") == []
