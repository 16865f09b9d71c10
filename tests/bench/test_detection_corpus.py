"""The labelled detection corpus and its scoring harness (bench/detection_corpus/, bench/detection_quality.py)."""

from __future__ import annotations

import copy
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "detection_corpus" / "gen"))

import corpus_schema as schema  # noqa: E402

import detection_quality as dq  # noqa: E402


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    return schema.load_corpus()


def test_corpus_size_sources_and_labels(corpus):
    assert len(corpus) >= 120
    assert len({t["id"] for t in corpus}) == len(corpus)
    sources = Counter(t["source"] for t in corpus)
    assert len(sources) >= 4, sources
    for cls in schema.CLASSES:
        for split in schema.SPLITS:
            assert any(t["class"] == cls and t["split"] == split for t in corpus), (cls, split)
    for t in corpus:
        if t["onset"] is not None:
            logged = [s for s, _m in t["metrics"]]
            assert any(s >= t["onset"] for s in logged), t["id"]
    size = sum(p.stat().st_size for p in (ROOT / "bench" / "detection_corpus").glob("*/*.jsonl.gz"))
    assert size < 8e6, size


def test_split_is_the_seeded_hash_assignment_and_balanced(corpus):
    again = copy.deepcopy(corpus)
    schema.assign_splits(again)
    assert [t["split"] for t in again] == [t["split"] for t in corpus]
    n = Counter(t["split"] for t in corpus)
    assert abs(n["tuning"] - n["heldout"]) <= 0.1 * len(corpus), n
    groups = Counter((t["source"], t["class"], t["split"]) for t in corpus)
    for (src, cls, _sp), k in groups.items():
        other = groups[(src, cls, "heldout" if _sp == "tuning" else "tuning")]
        assert abs(k - other) <= 1, (src, cls, k, other)


def test_synthetic_generators_reproduce_the_committed_traces(corpus):
    import synth_verl
    import synth_wandb

    by_id = {t["id"]: t for t in corpus}
    for mod, (cls, variant, _n) in ((synth_verl, synth_verl.PLAN[0]), (synth_wandb, synth_wandb.PLAN[-1])):
        fresh = schema.decode_trace(schema.encode_trace(mod.make_trace(cls, variant, 0, 14 if mod is synth_verl else 4)))
        stored = by_id[fresh["id"]]
        assert fresh["metrics"][:50] == stored["metrics"][:50]
        assert fresh["onset"] == stored["onset"]


def _trace(**kw):
    t = {"id": "x", "source": "verl_synth", "class": "grad_spike", "onset": 30, "onset_method": "test", "split": "tuning",
         "naming": "verl", "config": {}, "meta": {}, "metrics": [(s, {"actor/grad_norm": 1.0}) for s in range(1, 61)],
         "samples": []}
    t.update(kw)
    return t


@pytest.mark.parametrize("change, message", [
    ({"onset": None}, "onset must be None exactly for healthy"),
    ({"class": "healthy"}, "onset must be None exactly for healthy"),
    ({"class": "oom"}, "class 'oom'"),
    ({"metrics": [(2, {"a": 1.0}), (1, {"a": 1.0})] * 12}, "not strictly ascending"),
    ({"onset": 500}, "outside the logged steps"),
    ({"samples": [(3, [{"prompt": "p"}])]}, "lack prompt/response/reward"),
])
def test_schema_rejects_bad_traces_naming_the_field(change, message):
    with pytest.raises(schema.TraceError, match=message):
        schema.validate(_trace(**change))


def test_rule_window_early_alerts_and_alert_starts():
    t = _trace()
    resp = {"grad_spike": {"grad_spike"}}
    # an alert starting 4 steps after the onset detects, with delay 4; a continuing alert is one alert
    out = dq.score(t, [(34, "grad_spike", "warning"), (35, "grad_spike", "critical")], resp)
    assert out["detected"] and out["delay"] == 4 and out["early_alerts"] == 0
    # an unrelated detector does not count; one starting before onset - 5 is early, and it does not detect
    out = dq.score(t, [(33, "throughput_drop", "critical"), (10, "grad_spike", "warning")], resp)
    assert not out["detected"] and out["early_alerts"] == 1
    # an alert that began before the window and is still firing inside it does not START in the window
    ongoing = [(s, "grad_spike", "warning") for s in range(20, 40)]
    out = dq.score(t, ongoing, resp)
    assert not out["detected"] and out["early_alerts"] == 1
    # after a quiet logged step the same detector starts a new alert: detected at onset - 5 (delay -5)
    out = dq.score(t, ongoing[:3] + [(25, "grad_spike", "warning")], resp)
    assert out["detected"] and out["delay"] == -5
    # onset + 16 is too late; info findings are not alerts
    assert not dq.score(t, [(46, "grad_spike", "critical"), (31, "grad_spike", "info")], resp)["detected"]
    healthy = dq.score(_trace(**{"class": "healthy", "onset": None}), [(5, "a", "warning"), (6, "b", "critical"),
                                                                        (7, "c", "info")], resp)
    assert healthy["criticals"] == 1 and healthy["warnings"] == 1


def test_targets_pass_and_fail():
    agg = {"classes": {"healthy": {"traces": 2}, "grad_spike": {"recall": 1.0}, "oom_creep": {"recall": 0.5}},
           "overall": {"healthy_criticals": 0, "healthy_warnings_per_trace": 0.5, "early_alerts": 3, "median_delay_steps": 2}}
    res = dq.check_targets(agg)
    assert not res["all_pass"] and res["recall_per_class"]["failing"] == {"oom_creep": 0.5}
    assert res["healthy_criticals"]["pass"] and res["early_alerts"]["pass"] and res["median_delay"]["pass"]
    agg["classes"]["oom_creep"]["recall"] = 0.95
    assert dq.check_targets(agg)["all_pass"]


def test_harness_runs_on_a_few_real_traces(corpus):
    tuning = [t for t in corpus if t["split"] == "tuning"]
    picked = [next(t for t in tuning if t["class"] == "healthy" and t["source"] == "verl_synth"),
              next(t for t in tuning if t["class"] == "loss_divergence" and t["source"] == "verl_synth"),
              next(t for t in tuning if t["source"] in ("rlcockpit_trainer", "trl_grpo"))]
    results = []
    timings: list[float] = []
    for t in picked:
        findings = dq.run_ours(t, timings)
        assert all(isinstance(s, int) and sev in ("info", "warning", "critical") for s, _d, sev in findings)
        results.append((t, dq.score(t, findings, dq.OURS)))
        dq.score(t, dq.run_rlwatch(t), dq.RLWATCH)
    agg = dq.aggregate(results)
    assert agg["overall"]["healthy_traces"] >= 1 and "targets" not in agg
    assert len(timings) == sum(len(t["metrics"]) for t in picked)
    names = dq.metric_names(picked)
    assert names["names"] == names["resolved"] + names["unresolved"]


def test_list_misses_is_refused_on_held_out(capsys):
    with pytest.raises(SystemExit) as exc:
        dq.main(["--split", "heldout", "--list-misses"])
    assert exc.value.code == 2
    assert "only allowed with --split tuning" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="expected CLASS=DETECTOR"):
        dq._parse_responsible(["nonsense"])
    assert "my_det" in dq._parse_responsible(["oom_creep=my_det"])["oom_creep"]
