"""One home for thresholds (issues 26 and 29): the metric guide's ``thresholds:`` / ``healthy`` blocks. The detectors'
defaults, the checkups, the dashboard's mismatch panel and advice texts read them; no second copy of a known
threshold may sit in the source (the clip fraction was 0.2 in the guide and 0.3 in the detector)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.health import DETECTORS
from rlcockpit.metrics.guide import threshold
from rlcockpit.ui.panels import MISMATCH_THRESHOLDS

SRC = Path(rlcockpit.__file__).parent
# (detector, its setting, guide key, guide threshold)
SHARED = [
    ("update_size", "clipfrac_warn", "actor/pg_clipfrac", "warn_above"),
    ("update_size", "ppo_kl_warn", "actor/ppo_kl", "abs_above"),
    ("kl_spike", "warn_abs", "actor/kl_loss", "spike_above"),
    ("kl_spike", "prev_abs", "actor/kl_loss", "healthy_high"),
    ("kl_rising", "band_high", "actor/kl_loss", "healthy_high"),
    ("gpu_utilization", "target", "system/gpu/0/utilization", "healthy_low"),
    ("gpu_utilization", "low", "system/gpu/0/utilization", "alert_below"),
    ("sample_degeneration", "repeat_warn", "samples/repeat_ngram_rate", "warn_above"),
    ("sample_degeneration", "empty_warn", "samples/empty_rate", "warn_above"),
    ("sample_degeneration", "empty_critical", "samples/empty_rate", "critical_above"),
    ("sample_degeneration", "nonprint_warn", "samples/nonprintable_rate", "warn_above"),
    ("reward_variance_collapse", "zero_group_warn", "samples/zero_std_group_rate", "warn_above"),
    ("truncation", "warn_abs", "response_length/clip_ratio", "warn_above"),
    ("truncation", "critical_abs", "response_length/clip_ratio", "critical_above"),
    ("truncation", "creep_rise", "response_length/clip_ratio", "creep_rise"),
    ("reward_divergence", "drop_fraction", "val-core/<source>/<metric>/mean@<N>", "divergence_drop_fraction"),
    ("reward_divergence", "bonus_growth", "response_length/mean", "bonus_growth_ratio"),
    ("length_memory", "growth", "perf/max_memory_allocated_gb", "length_growth_ratio"),
    ("reward_cliff", "drop_critical", "critic/score/mean", "cliff_drop_fraction"),
    ("kl_spike", "min_abs", "actor/kl_loss", "healthy_low"),
    ("kl_spike", "early_abs", "actor/kl_loss", "severe_above"),
    ("grad_spike", "critical_ratio", "actor/grad_norm", "spike_factor"),
    ("entropy_explosion", "warn_ratio", "actor/entropy", "rise_factor"),
]
# a second copy of one of the thresholds above, as it used to be written (setting or argument = number)
COPIES = re.compile(r"""["'](?:clipfrac_warn|ppo_kl_warn|warn_abs|critical_abs|prev_abs|band_high|repeat_warn|empty_warn|"""
                    r"""empty_critical|nonprint_warn|zero_group_warn|drop_critical|early_abs)["']\s*:\s*[0-9]|"""
                    r"""["'](?:target|low)["']\s*:\s*(?:70|50)\b|"""
                    r"""\b(?:want|floor)\s*:\s*float\s*=\s*(?:70|50)|\bband\s*:\s*float\s*=\s*0\.1\b|"""
                    r"""samples/(?:repeat_ngram|empty|nonprintable)_rate["'], 0\.0\)\s*>\s*[0-9]|"""
                    r"""rollout_probs_diff_mean["']:\s*\{[^}]*["']high["']:\s*[0-9]""")


@pytest.mark.parametrize("detector,setting,key,name", SHARED, ids=lambda x: str(x))
def test_detector_defaults_are_the_guides(detector, setting, key, name):
    assert DETECTORS.get(detector).defaults[setting] == threshold(key, name)


def test_the_clip_fraction_warning_is_the_guides_0_2():
    assert DETECTORS.get("update_size").defaults["clipfrac_warn"] == 0.2 == threshold("clipfrac", "warn_above")


def test_checkups_and_the_mismatch_panel_read_the_guide():
    from rlcockpit.health import checkups

    assert MISMATCH_THRESHOLDS["training/rollout_probs_diff_mean"]["high"] == threshold(
        "training/rollout_probs_diff_mean", "healthy_high")
    text = (SRC / "health" / "checkups.py").read_text()
    assert 'threshold(GPU_UTIL_GUIDE, "healthy_low")' in text and 'threshold(KL, "healthy_high")' in text
    assert checkups.GPU_UTIL_GUIDE == "system/gpu/0/utilization"


def test_no_second_copy_of_a_known_threshold_in_the_source():
    copies = []
    for path in sorted(SRC.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if COPIES.search(line):
                copies.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert copies == []


def test_an_unknown_threshold_names_what_the_guide_has():
    with pytest.raises(KeyError, match="warn_above"):
        threshold("actor/pg_clipfrac", "warn_abov")


def test_the_mismatch_panel_shows_the_guides_healthy_range_for_every_key_the_guide_bounds():
    """verl's train/rollout mismatch panel: its bands are the guide's ``healthy`` ranges (the rollout-correction
    ppl ratio had 0.9-1.1 in the guide and no band in the panel)."""
    from rlcockpit.metrics.guide import lookup

    checked = 0
    for key, band in MISMATCH_THRESHOLDS.items():
        info = lookup(key)
        if info is None or not info.healthy:
            continue
        checked += 1
        assert (band["low"], band["high"]) == tuple(info.healthy), key
    assert checked >= 7
