"""The tenth CPU pass of bench/detection_corpus/real/ (issue 29, branch h-detect13): what its two sources
(``rlcockpit_trainer_cpu7``, ``trl_cpu_settings7``) showed, each rule pinned by a synthetic series for the mechanism
and, where it fits, by the real run.

- A KL that settles at 0.1-0.2 for a few logged steps, 4-5x a 2-prompt run's median of 0.03, is a healthy run's level:
  a critical KL spike clears the warning's absolute bar too.
"""

from __future__ import annotations

from health_corpus_runs import real_run
from health_corpus_runs import replay as replay_real
from health_corpus_runs import replay_stream as replay


def alerts(found, detector, severity=("warning", "critical")):
    return [(f.step, f.severity) for f in found if f.detector == detector and f.severity in severity]


def small_batch_kl(held: list[float], at: int = 300, steps: int = 420, every: int = 3):
    """TRL's k3 KL of a 2-prompt run logged every ``every`` steps: 0.02-0.04 around 0.03, then the ``held`` values
    from step ``at`` on, then back to its level."""
    base = [0.03, 0.02, 0.04, 0.025, 0.035, 0.03, 0.022, 0.038]
    out = []
    for i, s in enumerate(range(every, steps + 1, every)):
        j = (s - at) // every
        kl = held[j] if 0 <= j < len(held) else base[i % len(base)]
        out.append((s, {"kl": kl, "reward": 0.45 + 0.05 * (-1) ** i}))
    return out


def test_a_kl_held_at_a_healthy_level_a_few_times_its_small_median_is_no_critical():
    found = replay(small_batch_kl([0.21, 0.13, 0.10, 0.12]))
    assert alerts(found, "kl_spike", ("critical",)) == []


def test_a_kl_jump_to_a_collapse_level_that_holds_is_still_critical():
    found = replay(small_batch_kl([2.1, 1.6, 1.9, 2.4]))
    crit = [s for s, _sev in alerts(found, "kl_spike", ("critical",))]
    assert crit and 300 <= crit[0] <= 312


def test_the_luspo_run_kl_at_0_1_to_0_2_is_no_critical():
    run = real_run("luspo-temp07-reppen12-420-log3-eval30", "trl_cpu_settings7")
    assert [f.step for f in replay_real(run) if f.severity == "critical"] == []


# -- a verifier that passes an empty answer: the paid reward leaves the accuracy it always equalled -------------------
def paid_and_accuracy(exploits: list[int], steps: int = 300, bonus_every: int = 0):
    """A 2-prompt x 6 run whose paid reward is its accuracy (a 12-answer mean, 5 or 6 right in turn), except on the
    ``exploits`` steps, where one right answer is replaced by an empty one: it earns 1.0 in the reward and 0 in the
    accuracy, so the reward does not move at all. ``bonus_every``: a run whose reward carries a small second term
    from the start (not a reward that is its score)."""
    out = []
    for s in range(1, steps + 1):
        acc = (5 + s % 2) / 12
        paid = acc + (0.02 if bonus_every and s % bonus_every == 0 else 0.0)
        if s in exploits:
            acc -= 1 / 12
            paid = acc + 1 / 12
        out.append((s, {"reward": paid, "rewards/accuracy/mean": acc, "reward_std": 0.3}))
    return out


def test_a_reward_that_was_its_accuracy_and_leads_it_on_three_of_ten_steps_is_a_divergence():
    found = replay(paid_and_accuracy([150, 191, 208, 215, 219, 242, 245, 248, 250, 254, 260]))
    warn = [s for s, _sev in alerts(found, "reward_divergence")]
    assert warn and warn[0] == 248


def test_single_paid_answers_apart_are_no_divergence():
    found = replay(paid_and_accuracy([150, 191, 208, 215, 219, 250]))
    assert alerts(found, "reward_divergence") == []


def test_a_reward_with_its_own_second_term_from_the_start_is_not_judged_as_exact():
    found = replay(paid_and_accuracy([242, 245, 248], bonus_every=7))
    assert alerts(found, "reward_divergence") == []


def test_the_empty_answer_exploits_are_seen_near_their_onset_in_both_real_runs():
    trainer = real_run("6sample-emptypasses150-constlr2e-4-400-val10", "rlcockpit_trainer_cpu7")
    trl = real_run("6gen-emptypasses150-lr2e-4-400", "trl_cpu_settings7")
    for run in (trainer, trl):
        lo, hi = run["onset"] - 5, run["onset"] + 15
        first = min(f.step for f in replay_real(run) if f.detector in ("reward_divergence", "reward_hacking")
                    and f.severity in ("warning", "critical"))
        assert lo <= first <= hi, (run["id"], first)


def test_a_bonus_ramped_in_on_every_batch_is_left_to_the_graded_rules():
    run = paid_and_accuracy([])
    for s, m in run:
        if s >= 150:
            m["reward"] += 0.3 * min(1.0, (s - 150) / 100)  # paid on every batch from 150, growing
    found = replay(run)
    assert not [f for f in found if f.detector == "reward_divergence" and "paid beyond" in f.title]


# -- entropy "falling fast": a smoothed level against a smoothed level ------------------------------------------------
def one_prompt_entropy(low_from: int | None = None, steps: int = 120):
    """A 1-prompt x 8 run's entropy: 1.55 at step 1, 0.75-1.3 from step to step, a single 1.58 at step 46, three low steps
    (0.73-0.85) at 54-56 (the vespo run's shape); ``low_from``: from that step on it stays at 0.35 (a collapse)."""
    cycle = [1.05, 1.25, 0.8, 1.2, 0.95, 1.3, 0.75, 1.1]
    out = []
    for s in range(1, steps + 1):
        e = cycle[s % len(cycle)]
        if s == 1:
            e = 1.55  # the policy before any update: the warm-up level
        elif s == 46:
            e = 1.58
        elif s in (54, 55, 56):
            e = {54: 0.73, 55: 0.85, 56: 0.78}[s]
        if low_from is not None and s >= low_from:
            e = 0.35
        out.append((s, {"entropy": e, "reward": 0.3}))
    return out


def test_three_low_steps_ten_after_one_high_value_are_no_fast_fall():
    assert alerts(replay(one_prompt_entropy()), "entropy_collapse") == []


def test_an_entropy_that_halves_and_stays_is_still_a_fast_fall():
    found = alerts(replay(one_prompt_entropy(low_from=90)), "entropy_collapse")
    assert found and 90 <= found[0][0] <= 95


def test_the_vespo_run_gets_no_entropy_warning():
    run = real_run("qwen2s3-1prompt-8gen-vespo-adafactor-600", "trl_cpu_settings7")
    assert [f.step for f in replay_real(run) if f.detector == "entropy_collapse" and f.severity != "info"] == []
