"""Sparse and thinly sampled series (issue 29, the fifth CPU pass of bench/detection_corpus/real/): a reward that is
0 on most steps, an accuracy of a few right answers of 400, a KL logged every 7 steps, a reward over one prompt's
completions, TRL's evaluation speed. Each noise shape sits next to the failure the same detector must still catch.
"""

from __future__ import annotations

import math
import random

import pytest
from health_corpus_runs import real_by_id
from health_corpus_runs import replay as replay_trace
from health_corpus_runs import replay_stream as replay

from rlcockpit.health.detectors.reward import quality_direction


def alerts(found, *detectors):
    return [(f.step, f.detector, f.severity) for f in found
            if f.detector in detectors and f.severity in ("warning", "critical")]


def test_count_noise_is_the_sampling_noise_of_a_mean_of_0_1_scores():
    from rlcockpit.health.base import count_noise, smallest_step  # new in issue 29's fifth pass

    assert math.isclose(smallest_step([0.01, 0.0075, 0.01, 0.0125]), 0.0025)
    assert smallest_step([0.0, 0.0, 0.0]) == 0.0
    # 4 right of 400: sqrt(0.01 * 0.99 / 400) ~ 0.005, two answers
    assert 0.004 < count_noise([0.01, 0.0075, 0.01, 0.0125, 0.01]) < 0.006
    assert count_noise([3.0, 5.0, 4.0]) == 1.0  # not a share: one step


# -- a sparse reward: 0 on most steps, one or two right answers of 24 now and then; accuracy on 400 questions ------
def sparse_run(rng: random.Random, steps: int = 700, p_hit: float = 0.08):
    out = []
    for s in range(1, steps + 1):
        hits = sum(rng.random() < p_hit for _ in range(3)) if rng.random() < 0.1 else 0
        m = {"critic/score/mean": hits / 24, "actor/entropy": 1.0, "actor/pg_loss": 0.01}
        if s % 25 == 0:
            m["val-core/arith/acc/mean@1"] = rng.choice([2, 3, 4, 4, 5, 6]) / 400
        out.append((s, m))
    return out


def test_a_sparse_reward_and_a_few_right_validation_answers_are_no_divergence():
    for seed in range(4):
        found = replay(sparse_run(random.Random(seed)))
        assert alerts(found, "reward_divergence", "reward_hacking") == [], seed


def test_a_reward_up_while_validation_falls_for_good_is_still_a_divergence():
    rng = random.Random(0)
    out = []
    for s in range(1, 301):
        r = 0.3 + (0.4 * (s - 120) / 100 if s > 120 else 0.0)
        m = {"critic/score/mean": min(0.95, r + rng.gauss(0, 0.03)), "actor/entropy": 1.0}
        if s % 10 == 0:
            acc = 0.40 if s <= 120 else max(0.15, 0.40 - 0.25 * (s - 120) / 60)
            m["val-core/arith/acc/mean@1"] = round(acc * 400) / 400
        out.append((s, m))
    found = alerts(replay(out), "reward_divergence", "reward_hacking")
    assert found and 120 < found[0][0] <= 200


# -- the real runs these shapes come from (bench/detection_corpus/real/, the fifth CPU pass) ----------------------


def replay_real(name: str) -> list:
    return replay_trace(next(t for i, t in real_by_id().items() if name in i))


@pytest.mark.parametrize("name, detectors", [
    # five lucky steps of a reward over one prompt's 18 completions, beside a validation dip
    ("cpu3-healthy-qwen2-1prompt-600-val7", ("reward_hacking", "reward_divergence")),
    # a reward 0 on 646 of 700 steps, validation 4 right of 400 -> 3
    ("cpu3-healthy-tiny-2prompt-700-val25", ("reward_hacking", "reward_divergence")),
    # TRL's evaluation speed halving on a shared machine
    ("settings3-healthy-llamas1-1prompt-5gen-500-log4-eval20", ("reward_hacking", "reward_divergence")),
    # a KL logged every 7 steps that climbed 0.11 -> 0.54 over 60 steps
    ("settings3-healthy-qwen2-3prompt-2gen-600-log7", ("kl_spike",)),
    # a reward over 36 completions logged every 2 steps, dipping at step 18
    ("settings3-entropy_collapse-llama-1prompt-temp025-400-log2", ("reward_cliff", "reward_hacking")),
])
def test_real_runs_noise_shapes_get_no_alert(name, detectors):
    assert alerts(replay_real(name), *detectors) == []


def test_real_reward_hacking_runs_are_still_flagged():
    for name in ("cpu3-reward_hacking-qwen2-2prompt-sevens", "settings3-reward_hacking-qwen2-2prompt-sevens"):
        assert alerts(replay_real(name), "reward_hacking", "reward_divergence"), name


# -- a KL logged every 7 steps that climbs over 60 steps is no spike -------------------------------------------------
CLIMB = [0.055, 0.276, 0.151, 0.084, 0.076, 0.112, 0.115, 0.213, 0.142, 0.19, 0.174, 0.275, 0.425, 0.539, 0.598,
         0.546, 0.532, 0.403, 0.39, 0.462, 0.436, 0.285, 0.271, 0.448, 0.395, 0.426, 0.47, 0.537]


def test_a_kl_logged_every_7_steps_that_climbed_is_no_kl_spike_critical():
    trace = [(7 * (i + 1), {"kl": v, "reward": 0.25, "loss": 0.01}) for i, v in enumerate(CLIMB)]
    crit = [a for a in alerts(replay(trace), "kl_spike") if a[2] == "critical"]
    assert crit == []


def test_a_kl_logged_every_7_steps_that_jumped_from_its_level_is_still_a_spike():
    vals = CLIMB[:12] + [2.4, 2.7, 2.6, 2.8]
    trace = [(7 * (i + 1), {"kl": v, "reward": 0.25, "loss": 0.01}) for i, v in enumerate(vals)]
    crit = [a for a in alerts(replay(trace), "kl_spike") if a[2] == "critical"]
    assert crit and crit[0][0] <= 7 * 16


# -- an early dip of a reward logged every 2 steps is judged against more than five values ---------------------------
def test_an_early_dip_of_a_reward_logged_every_2_steps_is_no_cliff():
    rewards = [0.5, 0.5, 0.417, 0.389, 0.389, 0.472, 0.417, 0.361, 0.361, 0.25, 0.417, 0.528, 0.444, 0.5, 0.472]
    rng = random.Random(0)
    rewards += [0.45 + rng.gauss(0, 0.06) for _ in range(60)]
    trace = [(2 * (i + 1), {"reward": v, "kl": 0.01, "loss": 0.01}) for i, v in enumerate(rewards)]
    assert alerts(replay(trace), "reward_cliff") == []


def test_a_cliff_of_a_reward_logged_every_2_steps_is_still_a_cliff():
    rng = random.Random(0)
    rewards = [0.45 + rng.gauss(0, 0.04) for _ in range(40)] + [0.05 + rng.gauss(0, 0.02) for _ in range(10)]
    trace = [(2 * (i + 1), {"reward": v, "kl": 0.01, "loss": 0.01}) for i, v in enumerate(rewards)]
    crit = [a for a in alerts(replay(trace), "reward_cliff") if a[2] == "critical"]
    assert crit and 80 <= crit[0][0] <= 92


# -- TRL's evaluation speed and reward spread are not verdicts on the answers ----------------------------------------
def test_trls_evaluation_speed_and_spread_are_no_quality_scores():
    assert quality_direction("eval/samples_per_second") == 0
    assert quality_direction("eval/steps_per_second") == 0
    assert quality_direction("eval/reward_std") == 0
    assert quality_direction("eval/frac_reward_zero_std") == 0
    assert quality_direction("eval/rewards/accuracy/mean") == 1
    assert quality_direction("eval/reward") == 1


# -- a held-out score falling below its own range for good (held_out_drop) ------------------------------------------
def validated_run(accs: dict[int, float], steps: int = 400, n_questions: int = 600):
    rng = random.Random(0)
    out = []
    for s in range(1, steps + 1):
        m = {"critic/score/mean": 0.5 + rng.gauss(0, 0.05), "actor/entropy": 1.0}
        if s % 10 == 0:
            m["val-core/arith/acc/mean@1"] = round(accs.get(s, 0.49) * n_questions + rng.choice([-2, -1, 0, 1, 2])) / n_questions
        out.append((s, m))
    return out


def test_validation_falling_below_its_range_for_good_is_a_held_out_drop():
    found = alerts(replay(validated_run({s: 0.37 for s in range(260, 401, 10)})), "held_out_drop")
    assert found and found[0][0] == 270 and found[0][2] == "warning"


def test_one_bad_evaluation_is_no_held_out_drop():
    assert alerts(replay(validated_run({260: 0.37})), "held_out_drop") == []


def test_a_few_right_answers_of_a_small_validation_set_moving_are_no_held_out_drop():
    accs = {s: random.Random(s).choice([0.30, 0.33, 0.27, 0.30]) for s in range(10, 401, 10)}
    assert alerts(replay(validated_run(accs, n_questions=60)), "held_out_drop") == []


def test_the_collapse_of_a_real_lr_x30_run_is_seen_on_its_validation():
    hits = alerts(replay_real("cpu3-collapse-gpt2s1-1prompt-noclip-lr30-400-val10"), "held_out_drop")
    assert hits and 255 <= hits[0][0] <= 275


def test_a_continuous_series_has_no_count_noise():
    from rlcockpit.health.base import count_noise

    rng = random.Random(0)
    assert count_noise([0.4 + rng.gauss(0, 0.008) for _ in range(32)]) == 0.0
