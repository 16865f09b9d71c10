"""A grader that fails open (issue 29, h-grader18): the paid score equalled the task's accuracy logged beside it
(``reward_extra/acc/mean``) for 272 steps, then paid 1.0 for one or two answers a batch that time out at the grader
(``rlcockpit_trainer_cpu16`` failopengrader, onset 273). Each such lead (0.056, 0.083: two items of 36) is under the
reward's own step-to-step noise, so the *lead opened* rule first saw it at 295, once it had grown; the lead is one
scored item or more on batch after batch and never under the score, which noise cannot do to a gap that was exactly 0
for 272 steps (5 of 10 batches). A fractional bonus ramping in (a length bonus) leads by less than an item and is the graded rules'."""

from __future__ import annotations

import random

from health_corpus_runs import real_run, replay, replay_stream

PAID = "Reward paid beyond"


def _raised(findings) -> list[int]:
    return [f.step for f in findings if f.detector == "reward_divergence" and f.title.startswith(PAID)]


def _grader(seed: int, lead: float, share: float, steps: int = 300, onset: int = 200) -> list:
    """Our trainer's keys, 4 prompts x 3 answers of 3 digits a step (a score is a mean of 36 digit scores, one item
    1/36). The paid score is the accuracy until ``onset``; from there, on a ``share`` of the batches, it is the
    accuracy plus ``lead`` (two items: a grader failing open on one long answer; a fraction of an item: a bonus)."""
    rng = random.Random(seed)
    out = []
    for s in range(steps + 1):
        acc = sum(rng.random() < 0.4 for _ in range(36)) / 36
        paid = acc + (lead if s >= onset and rng.random() < share else 0.0)
        out.append((s, {"critic/score/mean": paid, "reward_extra/acc/mean": acc,
                        "actor/entropy": 1.5 + rng.gauss(0, 0.05)}))
    return out


def test_a_grader_failing_open_on_a_few_answers_a_batch_is_seen_near_its_onset():
    trace = real_run("llamas12-4prompt-3sample-failopengrader-budget24to4-150-300-constlr2e-4-350-val18",
                     source="rlcockpit_trainer_cpu16")
    hits = _raised(replay(trace))
    assert hits and 268 <= hits[0] <= 288, hits  # onset 273, window [268, 288]
    for seed in range(4):
        hits = _raised(replay_stream(_grader(seed, 2 / 36, 0.5)))
        assert hits and 200 <= hits[0] <= 240, (seed, hits)


def test_a_lenient_grader_on_a_few_answers_or_a_fractional_bonus_is_not_a_grader_failing_open():
    # healthy real runs whose grader was changed to a lenient one that passes a few more answers now and then
    for suffix, source in (("healthy-gpt2s12-4prompt-3sample-substringgrader-from150-constlr2e-4-350-val14",
                            "rlcockpit_trainer_cpu16"),
                           ("healthy-gpt2s10-1prompt-8gen-prefixgrader-from150-lr1e-4-350", "trl_cpu_settings14")):
        assert _raised(replay(real_run(suffix, source=source))) == [], suffix
    for seed in range(6):
        assert _raised(replay_stream(_grader(seed, 0.3 / 36, 0.5))) == [], seed  # a bonus worth a third of an item
        assert _raised(replay_stream(_grader(seed, 2 / 36, 0.05))) == [], seed  # one batch in 20: a lenient check
