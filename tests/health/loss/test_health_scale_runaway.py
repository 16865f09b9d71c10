"""Two slow faults of rlcockpit_trainer_cpu12 that no credited detector saw in their window (issue 29):

* ``grad_spike``'s *growing with the reward's scale* rule: a reward that equalled its task score (the correctness
  logged beside it) and is multiplied away from it (a drifting reward scale, Dr. GRPO advantages) while the
  gradient norm's level doubles: a warning, not a spike;
* ``kl_rising``'s *KL coefficient runs away* rule: an adaptive KL-in-reward controller whose coefficient rises on
  every step by an order of magnitude while the penalty takes a quarter of the task score.

Both stay quiet where the reward keeps its score's scale and where an adaptive controller moves both ways."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream

CPU12 = "rlcockpit_trainer_cpu12"


def _starts(found, detector: str, words: str) -> list[int]:
    return [f.step for f in found if f.detector == detector and words in f.title and f.severity != "info"]


def test_reward_scale_ramp_under_drgrpo_warns_grad_spike_in_its_window() -> None:
    """Paid score = accuracy x 1 -> 10 over steps 150-300, Dr. GRPO: onset 162 (the grad norm's 10-step mean out
    for good); grad_spike's first alert at 285 before (its stays-high critical)."""
    run = real_run("grad_spike-llamas8-5prompt-3sample-drgrpo-rewardscale1to10-150-300-350-val15", CPU12)
    steps = _starts(replay(run), "grad_spike", "growing with the reward's scale")
    assert steps and 157 <= steps[0] <= 177, steps


def test_inverted_kl_controller_with_range_warns_kl_rising_in_its_window() -> None:
    """The adaptive controller's error upside down from 150, kl_coef range [0.01, 1000]: the coefficient x10 a
    24 steps, the training reward below its range for good from 195; no alert at all before."""
    run = real_run("collapse-llamas8-5prompt-3sample-klinreward-adaptive-target02-range-inverted-from150-constlr2e-4"
                   "-350-val15", CPU12)
    steps = _starts(replay(run), "kl_rising", "KL coefficient running away")
    assert steps and 190 <= steps[0] <= 210, steps


def test_healthy_adaptive_kl_runs_with_a_growing_coefficient_stay_quiet() -> None:
    """The same source's healthy inverted-controller runs: a coefficient x57 over 200 steps (never x3 on a run of
    rises) and one that swings 0.03 -> 2.3 -> 0.3 with the penalty at times half the score."""
    for suffix in ("healthy-llamas8-5prompt-3sample-klinreward-adaptive-inverted-from150-350-val15",
                   "healthy-llamas8-5prompt-3sample-klinreward-adaptive-h30-inverted-from150-constlr2e-4-350-val15"):
        found = replay(real_run(suffix, CPU12))
        assert _starts(found, "kl_rising", "KL coefficient") == [], suffix


def _scaled_stream(factor_at) -> list[tuple[int, dict[str, float]]]:
    """A Dr. GRPO-like run: accuracy ~0.4, the paid score the accuracy x ``factor_at(step)``, the gradient norm
    ~0.6 x that factor (the advantages carry the reward's scale)."""
    rnd = random.Random(7)
    out = []
    for s in range(1, 241):
        acc = round(0.3 + 0.2 * rnd.random(), 4)
        f = factor_at(s)
        out.append((s, {"critic/score/mean": acc * f, "reward_extra/acc/mean": acc,
                        "actor/grad_norm": 0.6 * f * (0.6 + 0.8 * rnd.random()), "actor/pg_loss": 0.01 * rnd.random(),
                        "actor/entropy": 1.5 + 0.05 * rnd.random()}))
    return out


def test_gradient_growing_while_the_reward_keeps_its_score_is_not_a_scaled_reward() -> None:
    """The gradient norm x3 with the reward still equal to its accuracy: the policy learning, no scale drift."""
    stream = _scaled_stream(lambda s: 1.0)
    stream = [(s, m | {"actor/grad_norm": m["actor/grad_norm"] * (1.0 if s < 120 else 3.0)}) for s, m in stream]
    assert _starts(replay_stream(stream), "grad_spike", "reward's scale") == []


def test_reward_scaled_away_from_its_score_warns_once_the_gradient_doubles() -> None:
    stream = _scaled_stream(lambda s: 1.0 if s < 120 else 1.0 + (s - 120) / 20)
    steps = _starts(replay_stream(stream), "grad_spike", "reward's scale")
    assert steps and 125 <= steps[0] <= 150, steps
