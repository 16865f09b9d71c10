"""Slow failures seen inside the scoring window [onset - 5, onset + 15] of their labelled onset (issue 29, helper
h-detect8), on the real CPU runs of bench/detection_corpus/real/ where each was missed, and on series shaped like
them; next to each, the healthy shape the same rule must leave alone.

- a held-out score that falls 0.13 and then 0.08 under its range on 600 scores (the lr-ramp collapse): the mean of
  the two evaluations is what is tested against the noise of one evaluation;
- truncation leaving zero: a small batch's clip ratio exactly 0 for a hundred logged steps, then above 0 on four of
  six (a stop token losing ground step by step);
- the paid reward pulling away from a task score logged on the same samples (TRL's ``rewards/accuracy/mean``
  beside ``reward``; Tinker's correctness ``f`` beside the ``g`` it trains on);
- an entropy that drifts 12% under its early level while the held-out accuracy climbs is learning, not a collapse.
"""

from __future__ import annotations

import random

import pytest
from health_corpus_runs import real_by_id

from rlcockpit.health import HealthMonitor


def replay_real(name: str) -> tuple[dict, list]:
    trace = next(t for i, t in real_by_id().items() if i.endswith(name))
    mon = HealthMonitor(run_config=trace["config"])
    found = []
    for step, metrics in trace["metrics"]:
        found += mon.observe(step, metrics)
    return trace, found + mon.close()


def replay(trace, config=None) -> list:
    mon = HealthMonitor(None, config)
    found = []
    for step, metrics in trace:
        found += mon.observe(step, metrics)
    return found + mon.close()


def alerts(found, *detectors) -> list[tuple[int, str, str]]:
    return [(f.step, f.detector, f.severity) for f in found
            if f.detector in detectors and f.severity in ("warning", "critical")]


def in_window(trace: dict, hits: list) -> bool:
    return any(trace["onset"] - 5 <= step <= trace["onset"] + 15 for step, *_ in hits)


# -- a held-out score below its range on two evaluations in a row: their mean against the noise ------------------------
def test_the_lr_ramp_collapse_is_seen_on_its_validation_inside_the_window():
    """Validation 0.467-0.517 at steps 0-230, 0.357 at 240 and 0.408 at 250 (600 scores: one evaluation's noise is
    0.02, so 0.408 alone is 3.8 of it under the median 0.486); main asked each of the two to be 4 noise units down
    and never flagged it. Since h-slow16 the evaluation at 240 alone is enough, the training reward having fallen
    with it (its last 10 steps averaging 0.336, under every 10-step stretch before: lowest 0.356): warned at 240,
    not 250."""
    trace, found = replay_real("rlcockpit_trainer_cpu4-collapse-gpt2s1-1prompt-12sample-lrramp60-450-val10")
    hits = alerts(found, "held_out_drop")
    assert in_window(trace, hits), hits
    first = next(f for f in found if f.detector == "held_out_drop")
    assert first.severity == "warning" and first.step_start == 240 and first.step == 240
    assert "averaged" in first.title or "with the training reward" in first.title


def validated(accs: dict[int, float], steps: int = 400, n_questions: int = 600, seed: int = 1) -> list:
    """Validation every 10 steps on ``n_questions`` scores at 0.486 (a few right answers up or down) unless
    ``accs`` says otherwise."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        m = {"critic/score/mean": 0.5 + rng.gauss(0, 0.05), "actor/entropy": 1.0}
        if s % 10 == 0:
            m["val-core/arith/acc/mean@1"] = round(accs.get(s, 0.486) * n_questions
                                                   + rng.choice([-3, -1, 0, 1, 3])) / n_questions
        out.append((s, m))
    return out


def test_a_deep_fall_then_a_shallower_one_is_a_held_out_drop():
    """The lr-ramp run's numbers: 0.357, then 0.408, then ~0.39 under a range around 0.486."""
    accs = {260: 0.357, 270: 0.408, **{s: 0.39 for s in range(280, 401, 10)}}
    for seed in range(3):
        hits = alerts(replay(validated(accs, seed=seed)), "held_out_drop")
        assert hits and hits[0][0] == 270, (seed, hits)


def test_one_deep_fall_then_a_value_back_near_the_range_is_no_held_out_drop():
    for seed in range(3):
        assert alerts(replay(validated({260: 0.357, 270: 0.47}, seed=seed)), "held_out_drop") == [], seed


# -- truncation leaving zero ---------------------------------------------------------------------------------------------
def test_truncation_creeping_from_zero_is_seen_inside_the_window():
    """TRL, 2 prompts x 4 logged every 2 steps (16 completions a log): clipped ratio exactly 0 at 2-206, one
    0.0625 at 208, then above 0 at 224, 228, 230, 234 (the 10-step mean above 0 for good from 224); main's first
    truncation alert came at 254."""
    trace, found = replay_real("trl_cpu_settings4-length_explosion-gpt2s1-2prompt-eosbiasramp-len12-400-log2")
    hits = alerts(found, "truncation", "length_explosion")
    assert in_window(trace, hits), hits
    first = next(f for f in found if f.detector == "truncation")
    assert "leaving zero" in first.title and first.severity == "warning" and first.step_start == 224


def clipped(rng: random.Random, p_long: list[float], batch: int = 8) -> list:
    """A clip ratio over ``batch`` answers a step: each runs to the limit with probability ``p_long[step]``."""
    out = []
    for s, p in enumerate(p_long, 1):
        cut = sum(rng.random() < p for _ in range(batch))
        out.append((s, {"response_length/clip_ratio": cut / batch, "response_length/mean": 3 + 5 * cut / batch,
                        "critic/score/mean": rng.choice([0.3, 0.4, 0.5]), "actor/entropy": 1.5}))
    return out


def test_a_clip_ratio_leaving_zero_for_good_is_a_truncation_warning():
    p = [0.0] * 200 + [0.12] * 200
    for seed in range(3):
        hits = alerts(replay(clipped(random.Random(seed), p)), "truncation")
        assert hits and 200 < hits[0][0] <= 225, (seed, hits)


def test_single_long_answers_now_and_then_are_no_truncation():
    """A healthy small-batch run: an answer runs to the limit on one step in twelve, at random."""
    for seed in range(4):
        found = replay(clipped(random.Random(seed), [0.01] * 600))
        assert alerts(found, "truncation") == [], seed


# -- the paid reward pulling away from a task score on the same samples ------------------------------------------------
def test_the_sevens_bonus_is_seen_as_the_reward_leaving_its_accuracy_inside_the_window():
    """TRL, 1 prompt x 12: reward = accuracy until 149, then accuracy + a bonus for sevens ramping up; the reward's
    10-step mean above its early range for good from 231 while rewards/accuracy/mean stays flat. Main's first
    reward_divergence / reward_hacking alert came at 269."""
    trace, found = replay_real("trl_cpu_settings4-reward_hacking-qwen2-1prompt-12gen-sevensramp-lr3e-4-450")
    hits = alerts(found, "reward_divergence", "reward_hacking")
    assert in_window(trace, hits), hits
    first = next(f for f in found if f.detector == "reward_divergence")
    assert "rewards/accuracy/mean" in first.title and "reward" in first.evidence["metrics"]


@pytest.mark.parametrize("name", ["leetcode-g-easy", "leetcode-g-hard", "leetcode-g-medium", "leetcode-fg-easy"])
def test_a_proxy_reward_climbing_over_a_flat_correctness_is_seen_inside_the_window(name):
    """Tinker on LeetCode: the reward is g (compiles), f (passes the tests) logged beside it stays ~0."""
    trace, found = replay_real(f"tinker_jsonl_public-reward_hacking-{name}")
    assert in_window(trace, alerts(found, "reward_divergence", "reward_hacking")), alerts(found, "reward_divergence")


def two_scores(rng: random.Random, bonus: list[float], fmt_logged: bool, steps: int = 300) -> list:
    """One prompt x 12 a step: accuracy varies with the prompt (its mean over the group 0-0.6); reward = accuracy
    + ``bonus[step]``, the bonus logged as a format component when ``fmt_logged``."""
    out = []
    for s in range(1, steps + 1):
        acc = sum(rng.random() < rng.choice([0.05, 0.3, 0.4, 0.5]) for _ in range(12)) / 12
        m = {"reward": acc + bonus[s - 1], "rewards/accuracy/mean": acc, "entropy": 1.5}
        if fmt_logged:
            m["rewards/format_reward/mean"] = bonus[s - 1]
        out.append((s, m))
    return out


def test_a_reward_that_is_its_accuracy_is_no_divergence():
    for seed in range(3):
        found = replay(two_scores(random.Random(seed), [0.0] * 300, False))
        assert alerts(found, "reward_divergence", "reward_hacking") == [], seed


def test_a_reward_paying_twice_its_accuracy_while_the_accuracy_climbs_is_learning():
    """reward = 2 x accuracy (a reward weight of 2): as the task is learned the reward's lead over the accuracy grows
    with it (half the reward's rise); the accuracy rose with the reward, so nothing pulls away."""
    for seed in range(3):
        rng = random.Random(seed)
        trace = []
        for s in range(1, 301):
            p = 0.3 + 0.3 * min(1.0, max(0.0, (s - 100) / 150))
            acc = sum(rng.random() < p for _ in range(12)) / 12
            trace.append((s, {"reward": 2 * acc, "rewards/accuracy/mean": acc, "entropy": 1.5}))
        # (the older correctness-flat rule is judged elsewhere: on one seed a lucky 3-step streak at step 125 trips it)
        assert [f.title for f in replay(trace) if f.title.startswith("Reward pulling away")] == [], seed


def test_a_bonus_paid_beside_the_accuracy_is_a_divergence_and_a_learned_format_is_not():
    """The bonus grows 0.006 a step from 150; the reward's per-step noise is ~0.2 here (one prompt's difficulty), so
    its 10-step mean leaves its early range (+-0.19) around step 200-215; the paired lead is seen sooner."""
    ramp = [0.0] * 150 + [min(0.6, 0.006 * i) for i in range(150)]
    for seed in range(3):
        hits = alerts(replay(two_scores(random.Random(seed), ramp, False)), "reward_divergence")
        assert hits and 150 < hits[0][0] <= 230, (seed, hits)
        # the same rise, paid by a component named for format: the policy learning a format, not the task given up
        assert alerts(replay(two_scores(random.Random(seed), ramp, True)), "reward_divergence") == [], seed


# -- an entropy drifting down while held-out accuracy climbs ------------------------------------------------------------
def test_entropy_drifting_down_while_validation_climbs_is_learning():
    """Our trainer, Qwen2 with the KL in the reward, 800 steps: entropy 1.13-2.18 flat around 1.6 after an early 1.68,
    a 12-step dip to 1.47 at 675; validation 0.223 (0) and 0.237 (50) -> 0.33-0.34 from 300. Main warned
    "Entropy drifting down" at 675."""
    _trace, found = replay_real("rlcockpit_trainer_cpu4-healthy-qwen2-klreward-1prompt-topk20-len32-800-val50")
    assert alerts(found, "entropy_collapse") == []


@pytest.mark.parametrize("name", ["rlcockpit_trainer_cpu4-entropy_collapse-llamas1-2prompt-tempramp02-450-val15",
                                  "trl_cpu_settings4-entropy_collapse-qwen2-1prompt-8gen-tempramp02-400"])
def test_a_temperature_ramp_still_gets_its_entropy_warning(name):
    trace, found = replay_real(name)
    assert in_window(trace, alerts(found, "entropy_collapse")), alerts(found, "entropy_collapse")
