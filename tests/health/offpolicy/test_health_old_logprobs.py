"""Old log-probs from another model (issue 29): ``actor/ppo_kl`` exactly 0 on every logged step for long (one
update per batch on the policy that sampled it: the PPO ratio is exactly 1), then past ``kl_abs`` on most of the
next few logged steps, is a ``rollout_mismatch`` warning (the old log-probs no longer come from the weights being
trained)."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def _stream(steps: int = 300, from_step: int | None = 150, exact: bool = True, moved_share: float = 1.0,
            seed: int = 0) -> list[tuple[int, dict[str, float]]]:
    """An rlcockpit-trainer-like run: ppo_kl and pg_clipfrac exactly 0 (or, ``exact`` False, a small k1 noise
    from the first step), and from ``from_step`` a ppo_kl of +-0.05-0.3 on ``moved_share`` of the steps."""
    rnd = random.Random(seed)
    out = []
    for s in range(1, steps + 1):
        off = from_step is not None and s >= from_step and rnd.random() < moved_share
        kl = rnd.choice((-1, 1)) * rnd.uniform(0.05, 0.3) if off else (0.0 if exact else rnd.gauss(0, 1e-3))
        out.append((s, {"actor/ppo_kl": kl, "actor/pg_clipfrac": rnd.uniform(0.05, 0.3) if off else 0.0,
                        "actor/entropy": 1.6 + rnd.gauss(0, 0.08), "critic/score/mean": 0.4 + rnd.gauss(0, 0.05),
                        "actor/grad_norm": 2.0 + rnd.random(), "actor/pg_loss": rnd.gauss(0, 0.01)}))
    return out


def _mismatch(findings: list) -> list[tuple[int, int]]:
    return [(f.step_start, f.step) for f in findings if f.detector == "rollout_mismatch"
            and f.severity in ("warning", "critical")]


def test_an_exact_ratio_of_one_that_ends_is_old_log_probs_from_another_model() -> None:
    found = _mismatch(replay_stream(_stream()))
    assert found and found[0][0] == 150 and found[0][1] <= 154, found


def test_no_finding_when_never_exact_never_moved_or_moved_only_once() -> None:
    assert _mismatch(replay_stream(_stream(from_step=None))) == []
    assert _mismatch(replay_stream(_stream(exact=False))) == []  # a k1 noise from the start: not exactly 1
    assert _mismatch(replay_stream(_stream(from_step=20))) == []  # too few exact steps to call it a rule
    assert _mismatch(replay_stream(_stream(moved_share=0.1))) == []  # a blip, not most of the next steps


def test_cpu15_old_log_probs_from_the_reference_is_caught_at_its_onset() -> None:
    """rlcockpit_trainer_cpu15's old log-probs taken from the reference model from step 150 (ppo_kl and pg_clipfrac
    exactly 0 on steps 1-149, -0.149 / 0.167 at 150 and non-zero after): no alert at c0f3b19."""
    run = real_run("rollout_mismatch-gpt2s11-4prompt-3sample-klloss-oldlogpfromref-from150-constlr2e-4-350-val14",
                   "rlcockpit_trainer_cpu15")
    found = _mismatch(replay(run))
    assert found and 145 <= found[0][0] <= 165, found


def test_a_healthy_run_with_the_ratio_exactly_one_throughout_stays_quiet() -> None:
    run = real_run("healthy-gpt2s11-4prompt-3sample-constlr2e-4-350-val14", "rlcockpit_trainer_cpu15")
    assert _mismatch(replay(run)) == []
