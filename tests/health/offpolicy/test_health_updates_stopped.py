"""``update_size``'s *updates stopped* rule (issue 29): the gradient norm exactly 0 on every logged step of a run
longer than the run's own share of exact zeros (groups whose samples tie) makes likely by chance, and longer than
any run of zeros before it, while the reward is not at the best it reached: no sample carries a learning signal."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream


def _stopped(found) -> list:
    return [f for f in found if f.detector == "update_size" and f.title.startswith("Updates stopped")]


def _stream(zero_share: float, zero_from: int | None, reward_after: float | None = None,
            steps: int = 200) -> list[tuple[int, dict[str, float]]]:
    """A TRL-named run: small groups tie on ``zero_share`` of the steps (grad norm exactly 0 there); from
    ``zero_from`` every step's grad norm is 0 (its reward ``reward_after`` when given)."""
    rnd = random.Random(5)
    out = []
    for s in range(1, steps + 1):
        dead = zero_from is not None and s >= zero_from
        tie = dead or rnd.random() < zero_share
        reward = reward_after if dead and reward_after is not None else 0.3 + 0.4 * rnd.random()
        out.append((s, {"grad_norm": 0.0 if tie else 1.0 + rnd.random(), "reward": reward,
                        "reward_std": 0.0 if tie else 0.2 + 0.1 * rnd.random(),
                        "clip_ratio/region_mean": 0.0, "learning_rate": 1e-5, "loss": 0.0 if tie else 0.01}))
    return out


def test_greedy_rollouts_run_warns_within_its_window() -> None:
    """rlcockpit_trainer_cpu14's greedy-rollouts run: from step 170 every group's six responses the same, so the
    grad norm is exactly 0 at every step (4 isolated zeros in 1-169); onset 171, no responsible alert at ae6499a."""
    run = real_run("collapse-gpt2s10-2prompt-6sample-greedyrollouts-from170-350-val12", "rlcockpit_trainer_cpu14")
    found = _stopped(replay(run))
    assert found and 166 <= found[0].step <= 186 and found[0].step_start == 170, [(f.step, f.step_start) for f in found]
    assert len(found) == 1  # one event over the 181 dead steps
    assert found[0].severity == "warning"


def test_chance_runs_of_zeros_in_small_groups_stay_quiet() -> None:
    """Half the steps tie by chance (a group of two on a 0/1 reward): this stream holds a run of 9 zeros, which
    such a run makes no news (the run asked for is 20 at that share)."""
    stream = _stream(0.5, None, steps=400)
    run = longest = 0
    for _s, m in stream:
        run = run + 1 if m["grad_norm"] == 0.0 else 0
        longest = max(longest, run)
    assert longest >= 8  # the minimum run alone would warn
    assert _stopped(replay_stream(stream)) == []


def test_a_gradient_gone_for_good_warns_at_the_minimum_run() -> None:
    found = _stopped(replay_stream(_stream(0.05, 120)))
    assert found and 127 <= found[0].step <= 130 and found[0].step_start >= 115, [(f.step, f.step_start) for f in found]


def test_a_task_learnt_to_the_ceiling_stays_quiet() -> None:
    """Every group right: every group ties at the best reward, which is no failure."""
    assert _stopped(replay_stream(_stream(0.05, 120, reward_after=1.0))) == []
