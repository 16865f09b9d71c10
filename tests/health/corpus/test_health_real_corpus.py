"""The real runs of bench/detection_corpus/real/ (public verl console logs and TRL trainer_state.json files, and
CPU runs of TRL and of our trainer), imported with ``rlcockpit import``'s readers and replayed through the
monitor (issue 29):

- a run labelled healthy gets no critical finding;
- every finding speaks the run's own words: its metric, the series in its evidence and any metric key in its
  title, summary, causes or actions are keys the run logged (a TRL run hears about ``reward`` and ``kl``, never about
  ``critic/score/mean``, ``actor/kl_loss`` or ``perf/throughput``);
- a finding is raised once per event: the same detector raises the same event (same first step) again only
  with a higher severity.
"""

from __future__ import annotations

import re

import pytest
from health_corpus_runs import real_runs, replay

from rlcockpit.health.base import DETECTORS, GPU_HINTS
from rlcockpit.health.findings import severity_rank

KEYISH = re.compile(r"(?<![\w/])[A-Za-z_][\w\-@.]*(?:/[\w\-@.]+)+")  # something/like/a/metric/key


def ids(trace: dict) -> str:
    return trace["id"]


def detector_keys() -> set[str]:
    """Every metric key a built-in detector reads, by its canonical name: what a phantom key would be."""
    return {k for _name, cls in DETECTORS.items() for k in cls.keys}


# Issue 29 is open: the sixth-pass CPU batch (slow failures, new settings; corpus README "sixth pass, CPU") is
# below the bar by these counts, as BENCHMARKS.md records ("A third held-out batch" and h-detect6's section).
# They are a ratchet: they may only go down. Every other healthy run and source is held to the bar itself.
# h-detect7 brought both to the bar (kl_spike / loss_spike count batches, kl_rising needs its acceleration to hold,
# explained_variance and host_memory judge small-batch noise and a shared host).
# The seventh-pass batch (corpus README "seventh pass"; BENCHMARKS.md "A fourth held-out batch") was scored once,
# held out, and is held to these counts the same way.
# h-detect9 brought trl_cpu_settings5 to the bar (loss_spike / loss_oscillation judge a loss logged every 5 steps
# as the mean of micro-batches against its own trailing noise, with raw values that persist).
# The twelfth/thirteenth-pass batch (corpus README "twelfth pass, CPU", "twelfth pass, public", "thirteenth pass,
# public"; BENCHMARKS.md "A seventh held-out batch") was scored once, held out, at these counts.
# h-quiet brought trl_state_public13's healthy run to 0 criticals and 2 warnings (one per detector on its first
# long-answer episode: truncation at 300, entropy_explosion at 320).
# The fourteenth-pass batch (corpus README "fourteenth pass"), scored once held out at d482f29: h-rewardfall and
# h-sparsegrad took trl_state_public14's alerts away (reward_cliff's spread floor; grad_spike against the steps with a
# learning signal); the dppo_tv run's truncation critical at 20 stays (its clip ratio rose from a warm-up median of
# 25% to 10-step means of 51-56% over steps 21-60, 3-step means up to 79%, before the fall the README reads as
# learning: no rule tells that apart at step 20-30 from a length runaway). Read again (h-quiet, 2026-12-07): its
# sliding 10-step mean reaches 66% cut at steps 27-36, 34% of answers fitting, under half the warm-up's 75%: magnitude
# (the answers that fit halved) and persistence (10 steps) both hold, so the critical is kept; a rule that made it a
# warning (a 10-step mean with a binomial margin) cleared it by 1.6 points, a bar fitted to this trace.
BELOW_BAR_CRITICALS: dict[str, int] = {
    "rlcockpit_trainer_cpu9-healthy-qwen2s5-2prompt-4sample-dppotv-400-val20": 1,
    # the fifteenth pass's four (884cba3, BENCHMARKS "A ninth held-out batch") went with h-gradcrit and h-trlcrit
    # the sixteenth pass's kl_rising critical (the one-prompt beta-0.2 run whose KL jumps and settles) went with h-klcrit
    # the seventeenth pass (BENCHMARKS "An eleventh held-out batch"), scored once held out at 1c7b36d and not read run by
    # run: kl_spike's critical on TRL's healthy eval-leak run (a planned fault that left no mark). Read by h-quiet
    # (2026-12-07): the KL was >= 0.5 on all 13 steps 219-231 (the 3-step median at 227 is 8.9x the run's) and entropy
    # fell to 0.95 (never under 1.21 elsewhere) as the leak reached every row, recovering by ~241: a real excursion the
    # label calls harmless; no general rule tells it from a true spike, so it is kept here
    "trl_cpu_settings12-healthy-gpt2s8-4prompt-3gen-evalleakramp0-1-120-220-constlr2e-4-350-eval25": 1,
    # the twentieth pass's truncation critical at 126 on its constant-lr control (5, 7, 1, 4 of 12 answers cut at
    # 123-126, then back) went with h-quiet16: a critical needs the ratio not to have come back to the warm-up level
    # the twenty-first pass's kl_spike critical at 7 on our trainer's token-sum run with the abs+ KL loss (token-sum
    # logs its per-token series as batch sums) went with h-quiet17: the warm-up bar is per token, and an entropy
    # never under ln 262,144 is a sum
    # the twenty-third pass (BENCHMARKS "A sixteenth held-out batch"), scored once held out at 14e3fda and not read run
    # by run: three criticals on trl_cpu_settings18's healthy runs (planned faults the data helper read as leaving no
    # mark a user must act on: clip epsilon 0 with two iterations, scores logged in percent; and a warm-up-stable-decay
    # run's KL at step 23): went with h-crit, every critical passes Detector.critical_doubt (a series that changed level
    # once and then kept it, counts on a grid 100x coarser, the lr warm-up's settling: a warning that says why)
    # the twenty-fourth pass (trl_cpu_settings19, held out, scored once at the end of the session of 2026-12-07 21:19
    # and not read run by run): kl_rising's critical at 178 on the sapo run without reward scaling (Qwen2, a weak model)
    "trl_cpu_settings19-healthy-qwen2s15-2prompt-4gen-sapo-scalenone-200-log2": 1,
}
# the eighteenth pass's TRL source (trl_cpu_settings13: 7 warnings on its 6 healthy runs held out) went with h-quiet13:
# reward_divergence's two "pulling away" warnings on its bnpo run (a reward paid as 0.8 x accuracy + 0.2 x a width
# check) went, 5 on 6 now
BELOW_BAR_WARNINGS: dict[str, float] = {"trl_state_public13": 2.0}  # per healthy run


@pytest.mark.parametrize("trace", [t for t in real_runs() if t["class"] == "healthy"], ids=ids)
def test_a_healthy_real_run_gets_no_critical(trace):
    crit = [(f.step, f.detector, f.title) for f in replay(trace) if f.severity == "critical"]
    assert len(crit) <= BELOW_BAR_CRITICALS.get(trace["id"], 0), crit


@pytest.mark.parametrize("trace", real_runs(), ids=ids)
def test_findings_on_a_real_run_name_only_keys_it_logged(trace):
    logged = {k for _s, m in trace["metrics"] for k in m}
    phantoms = detector_keys() - logged
    for f in replay(trace):
        cited = set(f.evidence.get("metrics", {})) | ({f.metric} if f.metric else set())
        assert cited <= logged, (f.detector, f.title, cited - logged)
        text = " ".join([f.title, f.summary, *(f"{c.title} {c.evidence or ''}" for c in f.causes),
                         *(a.title for a in f.actions)])
        named = set(KEYISH.findall(text))
        assert not named & phantoms, (f.detector, f.title, named & phantoms)


def test_the_corpus_holds_a_trl_state_and_a_verl_console_import():
    namings = {t["naming"] for t in real_runs()}
    assert {"trl", "verl"} <= namings


@pytest.mark.parametrize("trace", real_runs(), ids=ids)
def test_each_event_is_raised_once_and_again_only_when_it_escalates(trace):
    last: dict[tuple[str, int], int] = {}
    for f in replay(trace):
        key = (f.detector, f.step_start)
        rank = severity_rank(f.severity)
        assert rank > last.get(key, -1), (f.detector, f.step, f.title)
        last[key] = rank


def shows_no_gpu(trace: dict) -> bool:
    logged = {k for _s, m in trace["metrics"] for k in m}
    return trace["naming"] != "verl" and not any(k.startswith(GPU_HINTS) or ".gpu" in k or "gpu" in k.split("/")[0]
                                                 for k in logged)


@pytest.mark.parametrize("trace", [t for t in real_runs() if shows_no_gpu(t)], ids=ids)
def test_a_real_run_without_a_gpu_is_never_told_about_one(trace):
    for f in replay(trace):
        text = " ".join([f.title, f.summary, *(c.title for c in f.causes), *(a.title for a in f.actions)])
        assert "GPU" not in text, (f.detector, text)


def test_healthy_real_runs_get_at_most_one_warning_each_on_average_per_source():
    """The issue's bar, per source of real runs: <= 1 warning per healthy run on average (every warning counts,
    from any detector)."""
    per_source: dict[str, list[int]] = {}
    for t in real_runs():
        if t["class"] == "healthy":
            per_source.setdefault(t["source"], []).append(sum(1 for f in replay(t) if f.severity == "warning"))
    over = {s: sum(n) / len(n) for s, n in per_source.items() if sum(n) / len(n) > BELOW_BAR_WARNINGS.get(s, 1.0) + 1e-9}
    assert per_source and over == {}


def test_our_trainers_lr_blow_up_gets_a_collapse_warning_near_its_onset():
    """``rlcockpit_trainer_cpu/gpt2-1prompt-lr30-800``: the entropy 3.0-4.2 from step 516 (1.6 with a spread of 0.1
    before) stayed under twice its warm-up level; ``entropy_explosion`` judges it against its own range too."""
    trace = next(t for t in real_runs() if t["id"].endswith("gpt2-1prompt-lr30-800"))
    found = [f.step for f in replay(trace) if f.detector == "entropy_explosion" and f.severity == "warning"]
    assert found and trace["onset"] - 5 <= found[0] <= trace["onset"] + 15, found
