"""The metric guide: aliases, patterns, resolution semantics, data completeness, JSON export."""

from __future__ import annotations

import json

import pytest

from rlcockpit.metrics import guide
from rlcockpit.metrics.guide import (
    GUIDE,
    all_entries,
    canonical_name,
    explain,
    guide_as_dict,
    healthy_range,
    lookup,
    match,
    resolve_metrics,
    suggest,
)
from rlcockpit.metrics.schema import TEXT_FIELDS, parse_entries, pattern_regex, to_verl_key

# Every name the issue lists, with the canonical key it must resolve to.
ALIASES = {
    # seed-style names (the seed trainer and the two articles)
    "train/loss": "actor/pg_loss",
    "train/reward": "critic/score/mean",
    "train/kl_div": "actor/kl_loss",
    "train/entropy": "actor/entropy",
    "grad_norm": "actor/grad_norm",
    "train/lr": "actor/lr",
    "throughput/tokens_per_second": "perf/throughput",
    "gpu_utilization": "system/gpu/0/utilization",
    "memory_allocated": "perf/max_memory_allocated_gb",
    "memory_reserved": "perf/max_memory_reserved_gb",
    "forward_time": "timing_s/forward",
    "backward_time": "timing_s/backward",
    "optimizer_time": "timing_s/optimizer",
    "step_time": "perf/time_per_step",
    "reward/mean": "critic/score/mean",
    "reward/std": "critic/score/std",
    "kl/divergence": "actor/kl_loss",
    "policy/loss": "actor/pg_loss",
    "value/loss": "critic/vf_loss",
    "generation/length": "response_length/mean",
    # TRL
    "reward": "critic/score/mean",
    "reward_std": "critic/score/group_std",
    "kl": "actor/kl_loss",
    "entropy": "actor/entropy",
    "clip_ratio/low_mean": "actor/pg_clipfrac_low",
    "clip_ratio/high_mean": "actor/pg_clipfrac_high",
    "clip_ratio/region_mean": "actor/pg_clipfrac",
    "completions/mean_length": "response_length/mean",
    "completions/max_length": "response_length/max",
    "completions/min_length": "response_length/min",
    "completions/clipped_ratio": "response_length/clip_ratio",
    "completions/mean_terminated_length": "response_length/terminated_mean",
    "frac_reward_zero_std": "critic/score/frac_zero_std",
    "learning_rate": "actor/lr",
    "loss": "actor/pg_loss",
    "num_tokens": "perf/num_tokens_seen",
    "rewards/accuracy_reward/mean": "critic/score/accuracy_reward/mean",
    "rewards/format/std": "critic/score/format/std",
    # verl's second name for the same concept
    "actor/reward_kl_penalty": "actor/kl_loss",
    "actor/reward_kl_penalty_coeff": "actor/kl_coef",
    # wandb system metrics
    "system.gpu.2.gpu": "system/gpu/2/utilization",
    "system.gpu.0.temp": "system/gpu/0/temperature_c",
}

VERL_KEYS = (
    "actor/pg_loss actor/entropy actor/ppo_kl actor/pg_clipfrac actor/pg_clipfrac_lower actor/grad_norm "
    "actor/lr actor/kl_loss actor/kl_coef critic/vf_loss critic/vf_clipfrac critic/vf_explained_var "
    "perf/throughput perf/total_num_tokens perf/time_per_step perf/max_memory_allocated_gb "
    "perf/max_memory_reserved_gb perf/cpu_memory_used_gb training/rollout_probs_diff_mean "
    "training/rollout_probs_diff_max response_length/clip_ratio prompt_length/clip_ratio"
).split()
VERL_KEYS += [
    f"{g}/{s}"
    for g in (
        "critic/score",
        "critic/rewards",
        "critic/advantages",
        "critic/returns",
        "critic/values",
        "response_length",
        "prompt_length",
    )
    for s in ("mean", "max", "min")
]
VERL_KEYS += [
    f"timing_s/{s}"
    for s in (
        "gen",
        "reward",
        "old_log_prob",
        "ref",
        "values",
        "adv",
        "update_critic",
        "update_actor",
        "step",
        "testing",
        "save_checkpoint",
    )
]
OUR_KEYS = [
    f"samples/{k}"
    for k in (
        "repeat_ngram_rate",
        "longest_repeat_run",
        "distinct_1",
        "distinct_2",
        "empty_rate",
        "length_mean",
        "at_limit_rate",
        "nonprintable_rate",
    )
]
OUR_KEYS += [
    f"system/{k}"
    for k in (
        "cpu_percent",
        "proc_rss_gb",
        "memory_percent",
        "memory_used_gb",
        "disk_read_mb_s",
        "disk_write_mb_s",
        "net_sent_mb_s",
        "net_recv_mb_s",
        "torch/allocated_gb",
        "torch/reserved_gb",
        "torch/max_allocated_gb",
    )
]


@pytest.mark.parametrize("alias,canonical", sorted(ALIASES.items()))
def test_alias_resolves_to_canonical(alias: str, canonical: str) -> None:
    assert canonical_name(alias) == canonical
    info = lookup(alias)
    assert info is not None and lookup(canonical) is info


@pytest.mark.parametrize("key", VERL_KEYS + OUR_KEYS)
def test_canonical_keys_are_their_own_entries(key: str) -> None:
    info = lookup(key)
    assert info is not None, key
    assert info.key == key and canonical_name(key) == key


@pytest.mark.parametrize(
    "key,entry",
    [
        ("system/gpu/3/utilization", "system/gpu/<i>/utilization"),
        ("system/gpu/12/memory_percent", "system/gpu/<i>/memory_percent"),
        ("system/gpu/0/power_w", "system/gpu/<i>/power_w"),
        ("system/gpu/1/temperature_c", "system/gpu/<i>/temperature_c"),
        ("system/gpu/1/memory_used_gb", "system/gpu/<i>/memory_used_gb"),
        ("system/gpu/1/memory_total_gb", "system/gpu/<i>/memory_total_gb"),
        ("val-core/gsm8k/acc/mean@1", "val-core/<source>/<metric>/mean@<N>"),
        ("val-core/openai/gsm8k/reward/mean@16", "val-core/<source>/<metric>/mean@<N>"),
        ("val-core/openai/gsm8k/acc/best@8/mean", "val-core/<source>/<metric>/best@<N>/mean"),
        ("val-core/math/acc/maj@4/mean", "val-core/<source>/<metric>/maj@<N>/mean"),
        ("val-aux/openai/gsm8k/acc/worst@4/std", "val-aux/<source>/<metric>/<stat>"),
        ("timing_s/my_custom_stage", "timing_s/<stage>"),
        ("timing_per_token_ms/gen", "timing_per_token_ms/<stage>"),
        # the wildcard spelling users type
        ("val-core/*/acc/mean@*", "val-core/<source>/<metric>/mean@<N>"),
        ("system/gpu/*/utilization", "system/gpu/<i>/utilization"),
        ("timing_s/*", "timing_s/<stage>"),
        ("rewards/*/mean", "critic/score/<fn>/mean"),
    ],
)
def test_pattern_keys_find_their_entry_and_stay_themselves(key: str, entry: str) -> None:
    info = lookup(key)
    assert info is not None and info.key == entry
    if not key.startswith("rewards/"):
        assert canonical_name(key) == key  # concrete keys of a pattern are canonical


def test_pattern_parts_and_explicit_entries_win_over_patterns() -> None:
    m = match("val-core/openai/gsm8k/acc/mean@16")
    assert m is not None and dict(m.parts) == {"source": "openai/gsm8k", "metric": "acc", "N": "16"}
    assert lookup("timing_s/gen").key == "timing_s/gen"  # not the timing_s/<stage> pattern
    assert match("system/gpu/x/utilization") is None  # a GPU index is a number
    assert lookup("critic/score/mean").key == "critic/score/mean"  # not critic/score/<fn>/...


def test_unknown_keys() -> None:
    assert lookup("no/such/metric") is None
    assert canonical_name("no/such/metric") == "no/such/metric"
    assert healthy_range("no/such/metric") is None


def test_resolve_metrics_canonical_wins_and_renames() -> None:
    out = resolve_metrics(
        {"kl": 0.5, "actor/kl_loss": 0.03, "train/reward": 1.0, "my/custom": 7, "system.gpu.1.gpu": 88}
    )
    assert out == {
        "actor/kl_loss": 0.03,
        "critic/score/mean": 1.0,
        "my/custom": 7,
        "system/gpu/1/utilization": 88,
    }
    # canonical after the alias in insertion order still wins
    assert resolve_metrics({"train/kl_div": 0.9, "actor/kl_loss": 0.04}) == {"actor/kl_loss": 0.04}
    # between two aliases, the first one wins
    assert resolve_metrics({"kl": 0.1, "train/kl_div": 0.2}) == {"actor/kl_loss": 0.1}


def test_healthy_ranges_detectors_rely_on() -> None:
    assert healthy_range("actor/kl_loss") == (0.01, 0.1)
    assert healthy_range("kl") == (0.01, 0.1)
    assert healthy_range("actor/pg_clipfrac") == (None, 0.2)
    assert healthy_range("response_length/clip_ratio") == (None, 0.1)
    low, high = healthy_range("actor/entropy")
    assert low is not None and low > 0 and high is None  # must not collapse toward 0
    assert healthy_range("actor/grad_norm") is None  # judged by spikes, not a fixed range
    assert "spike" in lookup("grad_norm").signals and lookup("grad_norm").thresholds["spike_factor"] > 1
    assert healthy_range("system/gpu/5/utilization")[0] == 70


def test_every_entry_has_complete_english_and_chinese_texts() -> None:
    entries = all_entries()
    assert len(entries) > 90
    for info in entries:
        for name in TEXT_FIELDS:
            en = info.text(name, "en")
            zh = info.zh.get(name, "")
            assert en.strip(), f"{info.key}: empty English {name}"
            assert zh.strip(), f"{info.key}: empty Chinese {name}"
            assert any("\u4e00" <= ch <= "\u9fff" for ch in zh) or name == "title", (
                f"{info.key}: zh {name} has no Chinese"
            )
            assert "{stat" not in en + zh, f"{info.key}: unsubstituted family placeholder"
        assert info.direction in ("higher", "lower", "band", "none")
        assert info.category


def test_aliases_are_unique_and_never_shadow_a_canonical_key() -> None:
    seen: dict[str, str] = {}
    for info in all_entries():
        for alias in info.aliases:
            assert alias not in seen, f"{alias} aliased by {seen.get(alias)} and {info.key}"
            assert lookup(alias) is info
            seen[alias] = info.key
    assert not set(seen) & set(GUIDE.names())


def test_knobs_name_trainer_keys_and_verl_paths() -> None:
    info = lookup("actor/kl_loss")
    keys = {k.key: k.verl_key for k in info.knobs}
    assert keys["actor.kl_loss_coef"] == "actor_rollout_ref.actor.kl_loss_coef"
    assert keys["algorithm.kl_ctrl.kl_coef"] == "algorithm.kl_ctrl.kl_coef"
    assert to_verl_key("actor.optim.lr") == "actor_rollout_ref.actor.optim.lr"
    assert (
        to_verl_key("actor.model.enable_gradient_checkpointing")
        == "actor_rollout_ref.model.enable_gradient_checkpointing"
    )
    assert to_verl_key("rollout.temperature") == "actor_rollout_ref.rollout.temperature"
    assert to_verl_key("data.max_response_length") == "data.max_response_length"
    assert to_verl_key("actor.target_kl") is None
    assert to_verl_key("reward.overlong_buffer.enable") == "reward_model.overlong_buffer.enable"
    assert to_verl_key("rollout.val_temperature") == "actor_rollout_ref.rollout.val_kwargs.temperature"


def test_knob_keys_exist_in_the_trainer_config() -> None:
    from rlcockpit.trainer import config

    known = set(config.all_keys())
    for info in all_entries():
        for knob in info.knobs:
            if knob.key:
                assert knob.key in known, f"{info.key}: knob {knob.key!r} is not a trainer config key"


def test_guide_as_dict_is_json_and_complete() -> None:
    for lang in ("en", "zh"):
        d = json.loads(json.dumps(guide_as_dict(lang), ensure_ascii=False))
        assert d["lang"] == lang
        assert set(d["entries"]) == set(GUIDE.names())
        assert d["aliases"]["kl"] == "actor/kl_loss"
        assert d["aliases"]["gpu_utilization"] == "system/gpu/0/utilization"
        kl = d["entries"]["actor/kl_loss"]
        assert kl["healthy"] == [0.01, 0.1] and "train/kl_div" in kl["aliases"]
    zh = guide_as_dict("zh")["entries"]["actor/entropy"]["title"]
    assert zh == lookup("actor/entropy").zh["title"]
    with pytest.raises(ValueError, match="language"):
        guide_as_dict("fr")


def test_exported_regexes_match_like_python() -> None:
    """The dashboard evaluates the exported regexes in JavaScript; they must be plain (no named groups)."""
    import re

    pats = guide_as_dict()["patterns"]
    assert all("?P<" not in p["regex"] for p in pats)
    by_entry = {p["pattern"]: p for p in pats}
    gpu = by_entry["system.gpu.<i>.gpu"]
    m = re.match(gpu["regex"], "system.gpu.3.gpu")
    assert (
        m
        and re.sub(r"\$(\d)", lambda g: m.group(int(g.group(1))), gpu["canonical"])
        == "system/gpu/3/utilization"
    )
    assert re.match(by_entry["system/gpu/<i>/utilization"]["regex"], "system/gpu/7/utilization")
    assert by_entry["system/gpu/<i>/utilization"]["canonical"] is None


def test_suggestions_for_typos() -> None:
    assert "actor/entropy" in suggest("actor/entropyy")
    assert any(canonical_name(s) == "actor/kl_loss" for s in suggest("kl_divergance"))
    text = explain("actor/entrop")
    assert "not in the metric guide" in text and "actor/entropy" in text
    assert "未知指标" in explain("actor/entrop", lang="zh")


def test_explain_text_has_all_sections() -> None:
    text = explain("train/kl_div")
    for part in (
        "actor/kl_loss",
        "alias of",
        "Healthy range: 0.01 – 0.1",
        "Meaning",
        "When abnormal",
        "What to change",
        "actor_rollout_ref.actor.kl_loss_coef",
        "train/kl_div, kl",
    ):
        assert part in text, part
    zh = explain("actor/entropy", lang="zh")
    assert "策略熵" in zh and "健康范围" in zh and "调整建议" in zh
    pattern = explain("val-core/gsm8k/acc/mean@1")
    assert "source=gsm8k" in pattern and "N=1" in pattern
    with pytest.raises(ValueError):
        explain("actor/entropy", lang="de")


def test_bad_data_fails_with_file_and_entry_named() -> None:
    with pytest.raises(ValueError, match=r"bad\.yaml.*'x/y'.*direction"):
        parse_entries("- {key: x/y, direction: up, en: {title: T}, zh: {title: T}}", "bad.yaml")
    with pytest.raises(ValueError, match=r"bad\.yaml.*invalid YAML"):
        parse_entries("- key: [unclosed", "bad.yaml")
    with pytest.raises(ValueError, match="concrete target"):
        parse_entries("- {key: 'a/<i>/b', aliases: [ab], en: {title: T}, zh: {title: T}}", "bad.yaml")
    with pytest.raises(ValueError, match="title"):
        parse_entries("- {key: a/b, en: {title: T}}", "bad.yaml")


def test_pattern_regex_escapes_literals() -> None:
    import re

    rx = re.compile(pattern_regex("system.gpu.<i>.gpu"))
    assert rx.match("system.gpu.0.gpu") and not rx.match("systemXgpu.0.gpu")


def test_registry_rejects_duplicate_alias() -> None:
    info = lookup("actor/entropy")
    with pytest.raises(ValueError, match="already"):
        guide._add(info)
