"""The noise classes behind the false alarms on healthy real runs (issue 29, bench/detection_corpus/real/), each
shaped like the run that showed it and each next to the failure the same detector must still catch:

- a verl PPO run whose 0..1 score starts at 0.016 (4 right of 256) and reads 0 for three steps (reward_cliff);
- a 1-prompt TRL run whose KL (one batch of six completions) swings by factors, with single-step blips of 100x
  that also move its loss, beta x KL (kl_spike, kl_rising, loss_spike's corroboration);
- our trainer's 1-prompt run whose pg_loss is 0 up to float round-off on most steps (loss_spike's scale);
- a response length or a KL that dipped and came back (length_explosion, kl_rising);
- truncation that is high from the first logged step and stays there (truncation);
- a reward component that falls together with the total it is part of (reward_hacking).
"""

from __future__ import annotations

import math
import random

from health_corpus_runs import replay_stream as replay


def alerts(found, detector):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in ("warning", "critical")]


# -- reward_cliff: the reward's range --------------------------------------------------------------------------
def verl_score(first: list[float], later: float, steps: int = 26):
    return [(s, {"critic/score/mean": first[s - 1] if s <= len(first) else later + 0.01 * s,
                 "critic/score/max": 1.0, "critic/score/min": 0.0, "actor/pg_loss": 0.01})
            for s in range(1, steps + 1)]


def test_a_mean_score_near_zero_that_reads_zero_is_no_cliff():
    found = replay(verl_score([0.016, 0.0, 0.0, 0.0, 0.012, 0.012], 0.01))
    assert alerts(found, "reward_cliff") == []


def test_an_early_collapse_on_the_same_score_is_still_critical():
    found = replay(verl_score([0.6, 0.05, 0.02, 0.01, 0.0, 0.0, 0.0, 0.0], 0.0))
    crit = [f for f in found if f.detector == "reward_cliff" and f.severity == "critical"]
    assert crit and "57% of the reward's range 1" in crit[0].title


# -- KL: a positive, heavy-tailed series ---------------------------------------------------------------------
def one_prompt_kl(seed: int, steps: int = 300, blips: tuple[int, ...] = ()):
    """A 1-prompt run's KL: lognormal with a log spread of ~1 (it moves 3x from step to step), a blip of
    ~100x at each step in ``blips`` and a value at the run's median right after it (as in the real run: 2.73,
    0.017, 2.67); TRL's loss is beta x KL."""
    rng = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        kl = rng.lognormvariate(math.log(0.03), 1.0)
        if s in blips:
            kl = 2.7
        elif s - 1 in blips:
            kl = 0.03
        out.append((s, {"kl": kl, "loss": 0.04 * kl, "grad_norm": rng.lognormvariate(math.log(3.0), 0.4),
                        "reward": 0.4 + rng.gauss(0, 0.05), "learning_rate": 1e-5}))
    return out


def test_single_kl_blips_in_a_noisy_run_raise_no_kl_alert_and_no_critical_loss():
    blips = (100, 102, 200, 230)
    for seed in range(6):
        found = replay(one_prompt_kl(seed, blips=blips))
        near = [(s, sev) for s, sev in alerts(found, "kl_spike") + alerts(found, "kl_rising")
                if any(b <= s <= b + 5 for b in blips)]
        assert near == [], seed
        assert [s for s, sev in alerts(found, "loss_spike") if sev == "critical"] == [], seed


def test_a_kl_that_jumps_and_holds_is_critical_in_the_noisiest_run():
    trace = one_prompt_kl(1)
    for i in range(200, 230):
        trace[i][1]["kl"] = 3.0 + 0.5 * math.sin(i)  # 100x the run's median for 30 steps: a collapse
    crit = [f for f in replay(trace) if f.detector == "kl_spike" and f.severity == "critical"]
    assert crit and 201 <= crit[0].step <= 204 and crit[0].step_start == 201
    assert "the median of its last 3 logged values" in crit[0].title


def test_a_kl_that_dipped_and_came_back_is_not_rising():
    rng = random.Random(4)
    level = [0.12] * 20 + [0.05] * 10 + [0.13] * 20  # a dip and back: a -> b falls, c is where a was
    trace = [(s, {"kl": v * rng.uniform(0.9, 1.1), "reward": 0.5}) for s, v in enumerate(level, start=1)]
    assert alerts(replay(trace), "kl_rising") == []


# -- loss_spike: float round-off is not noise ------------------------------------------------------------------
def test_a_loss_that_is_zero_up_to_round_off_on_most_steps_has_no_spikes():
    rng = random.Random(7)
    trace = []
    for s in range(1, 600):
        signal = rng.random() < 0.08  # a step where the group disagreed: a real, ordinary loss
        loss = rng.gauss(0, 0.02) if signal else rng.choice([0.0, 1.49e-8, -2.98e-8, 4.97e-9])
        trace.append((s, {"actor/pg_loss": loss, "actor/grad_norm": rng.lognormvariate(0.0, 0.3) if signal else 0.0,
                          "critic/score/mean": 0.5}))
    assert alerts(replay(trace), "loss_spike") == []


def test_a_loss_that_blows_up_with_its_gradient_is_still_critical():
    rng = random.Random(8)
    trace = []
    for s in range(1, 120):
        bad = s >= 80
        trace.append((s, {"actor/pg_loss": rng.gauss(0, 0.02) + (2.0 if bad else 0.0),
                          "actor/grad_norm": rng.lognormvariate(0.0, 0.3) * (40 if bad else 1),
                          "critic/score/mean": 0.5}))
    found = alerts(replay(trace), "loss_spike")
    assert ("critical" in {sev for _s, sev in found}) and min(s for s, _ in found) <= 85


# -- length: a dip and back is no turn ----------------------------------------------------------------------
def test_a_noisy_length_recovering_from_a_dip_has_not_turned_upwards():
    for seed in range(5):
        rng = random.Random(seed)
        trace = []
        for s in range(1, 160):
            mean = 420 if 60 <= s < 70 else 560  # ten shorter steps, then back to the usual level
            trace.append((s, {"completion_length": min(768, max(150, rng.gauss(mean, 150))), "reward": -1.0}))
        assert alerts(replay(trace), "length_explosion") == [], seed


def test_a_length_that_turns_upwards_is_still_flagged():
    rng = random.Random(2)
    trace = [(s, {"completion_length": 200 * (1.12 ** max(0, s - 60)) * rng.uniform(0.95, 1.05), "reward": 0.5})
             for s in range(1, 80)]
    found = alerts(replay(trace), "length_explosion")
    assert found and 60 <= found[0][0] <= 75


# -- truncation: a standing setting ----------------------------------------------------------------------------
def verl_clip(clip, steps: int = 40):
    rng = random.Random(5)
    return [(s, {"response_length/clip_ratio": min(1.0, max(0.0, clip(s) + rng.gauss(0, 0.03))),
                 "response_length/mean": 230.0, "response_length/max": 256.0, "critic/score/mean": 0.1})
            for s in range(1, steps + 1)]


def test_truncation_high_from_the_first_step_is_info_not_a_warning():
    found = replay(verl_clip(lambda s: 0.62))
    trunc = [f for f in found if f.detector == "truncation"]
    assert [f.severity for f in trunc] == ["info"] and "as from the first logged steps" in trunc[0].title


def test_truncation_rising_from_a_high_start_is_still_raised():
    found = alerts(replay(verl_clip(lambda s: 0.55 if s < 25 else 0.95)), "truncation")
    assert found and 25 <= found[0][0] <= 30


# -- reward_hacking: a component is only evidence when the total holds ------------------------------------------
def trl_components(component_falls_alone: bool):
    rng = random.Random(9)
    out = []
    for s in range(10, 510, 10):
        total = rng.gauss(0, 5) + (0.02 * s if s > 200 else 0.0)
        main = total - 2.0 if not component_falls_alone else (total - 2.0 if s < 380 else -12 + rng.gauss(0, 0.5))
        out.append((s, {"reward": total if not component_falls_alone or s < 380 else total + 14,
                        "rewards/gameplay_scores/mean": main, "rewards/valid_json_reward/mean": 2.0}))
    return out


def test_a_component_falling_with_the_total_reward_is_not_hacking():
    assert alerts(replay(trl_components(False)), "reward_hacking") == []


def test_a_component_falling_while_the_total_rises_is_hacking():
    found = alerts(replay(trl_components(True)), "reward_hacking")
    assert found and found[0][0] >= 380


# -- throughput_drop: a shared CPU slows every phase, one step at a time ------------------------------------------
def cpu_contention(stalled_loader: bool):
    """Our trainer on a shared 2-core machine: 30 ms of generation and 30 ms of update a step; from step 60 on
    another job takes the cores, stretching whichever phase runs (generation 4x on the first two steps, then
    the update and generation 4x in turn), or (``stalled_loader``) 150 ms of host time a step with both phases as before."""
    rng = random.Random(3)
    out = []
    for s in range(1, 100):
        gen, upd, other = 0.03, 0.03, 0.005
        if s >= 60 and not stalled_loader:
            o = s - 60
            if o < 2 or o % 2:  # as in the real run: the first slow steps stretched generation
                gen *= 4
            else:
                upd *= 4
        elif s >= 60:
            other = 0.15
        gen, upd = gen * rng.uniform(0.95, 1.05), upd * rng.uniform(0.95, 1.05)
        step = gen + upd + other
        out.append((s, {"timing_s/gen": gen, "timing_s/update_actor": upd, "timing_s/step": step,
                        "perf/throughput": 40 / step, "critic/score/mean": 0.5}))
    return out


def test_a_shared_cpu_stretching_each_phase_in_turn_is_info_not_a_warning():
    found = [f for f in replay(cpu_contention(False)) if f.detector == "throughput_drop"]
    assert found and {f.severity for f in found} == {"info"}
    assert "every phase of the step slower" in found[0].title and "GPU" not in found[0].title


def test_a_stalled_loader_on_the_same_machine_is_still_a_warning():
    assert "warning" in {sev for _s, sev in alerts(replay(cpu_contention(True)), "throughput_drop")}


def test_a_kl_that_climbs_slowly_above_the_band_is_no_spike():
    """A healthy KL climbing from 0.05 to 0.3 over 300 steps, above ``kl_spike``'s 0.2 gate for its last third:
    a reference frozen at the first gate pass would call the late level a jump."""
    rng = random.Random(6)
    trace = [(s, {"kl": (0.05 + 0.25 * s / 300) * rng.uniform(0.9, 1.1), "reward": 0.5}) for s in range(1, 301)]
    assert alerts(replay(trace), "kl_spike") == []


def test_a_loss_that_is_beta_times_the_kl_leaves_the_kl_blips_to_the_kl_detectors():
    """TRL's loss with beta 0.04 on-policy is 0.04 x KL: its excursions are the KL's, judged in the KL's noise."""
    for seed in range(4):
        assert alerts(replay(one_prompt_kl(seed, blips=(100, 102, 200, 230))), "loss_spike") == [], seed
