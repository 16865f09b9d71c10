"""``kl_rising``: a KL that starts to leave its range is judged against the range it had, and a range warning no
longer hides the critical of the accelerating-rise rule (issue 29, branch h-ramp).

The range rule measures its reference (the 60 batches before the newest 10) again every 10 batches and needs it
level (its newer half within sqrt(2.5) of its older half). TRL's negative-KL-coefficient run (``beta`` 0.04 -> -0.2
from step 200, kl's 10-step mean out of its 0.024-0.064 range for good from 215, the label) left its range while
a 0.1-0.5 bump at 185-206 sat in the newer half of every reference measured after 206: none was level again, and
the first warning came at 376. The last level reference now stays (for at most ``range_window`` batches) while the
newer ones are not, when it was the second or later level one in a row (a range that held: the first level window
of a run whose KL still climbs early is a lull, and keeping it warned at 110 on TRL's wdneg200 run, whose KL went
0.07 -> 0.5 at 95-110 and stayed).

The range rule's warning used to return before the accelerating-rise rule counted its check: a KL that jumps
100x (TRL's lr x300 run) met the critical's magnitude on three checks, the range warning took the fourth, and the
critical never came (a warning on a run that broke)."""

from __future__ import annotations

from health_corpus_runs import real_run, replay


def kl_alerts(found: list, severity: str) -> list[int]:
    return [f.step for f in found if f.detector == "kl_rising" and f.severity == severity]


def test_the_negative_beta_run_is_found_where_its_kl_leaves_its_range():
    trace = real_run("collapse-llamas3-2prompt-4gen-negbeta200-constlr1e-4-400", source="trl_cpu_settings7")
    hits = kl_alerts(replay(trace), "warning")
    assert [s for s in hits if s < 205] == [], hits  # the 0.1-0.5 bump at 185-206 stays quiet
    assert hits and 210 <= hits[0] <= 230, hits  # onset 215


def test_a_kl_that_climbs_after_its_first_level_window_stays_quiet():
    """TRL, Qwen2, constant lr 1e-4 (an entropy collapse from 206): the KL's climb from ~0.07 to ~0.5 at 95-110
    is the run learning, measured against the first level reference it ever had."""
    trace = real_run("entropy_collapse-qwen2s4-2prompt-4gen-wdneg200at200-constlr1e-4-400", source="trl_cpu_settings8")
    found = replay(trace)
    assert [s for s in kl_alerts(found, "warning") + kl_alerts(found, "critical") if s < 200] == []


def test_a_range_warning_does_not_hide_the_critical():
    """TRL, 1 prompt, lr x300 from step 250 (kl 0.04 -> 3-8): the range warning at 258, then the critical."""
    found = replay(real_run("collapse-llama-1prompt-lr-jump-400", source="trl_cpu_settings"))
    assert kl_alerts(found, "warning")[:1] == [258]
    crit = kl_alerts(found, "critical")
    assert crit and 258 < crit[0] <= 270, crit


def test_the_lr_ramp_one_prompt_run_gets_its_kl_warning():
    """TRL, 1 prompt x 12, lr ramped 1x -> 60x from step 200 (onset 216): its KL's 3x per-step noise keeps the
    range rule quiet until the KL is ~5x its range (0.27 at 253-262); before, the reference the KL left was never
    level again and nothing fired. Still ~45 steps late for the label (see the source's DEVELOPED_ON note)."""
    found = replay(real_run("collapse-llamas1-1prompt-12gen-lrramp60-450", source="trl_cpu_settings4"))
    hits = kl_alerts(found, "warning")
    assert [s for s in hits if s < 216] == [] and hits and hits[0] <= 270, hits
