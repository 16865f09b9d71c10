"""A diagnosis proposes overrides in proportion to its evidence (rlcockpit.health.diagnosis.evidence).

The defect (QA of a TRL user's script, docs/qa/wandb-trl-inputs.md rows 17-21): a 3-step random-weights TRL
GRPO run got ``beta``, ``learning_rate``, ``warmup_steps``, ``epsilon`` and ``num_iterations`` (already 1) from
ONE ``sample_degeneration`` warning whose gibberish was there from the run's first samples. The fixture
``data/trl/grpo-3step-random.json`` is that run, recorded from a real TRL 1.16 ``GRPOTrainer`` + CockpitCallback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import rlcockpit
from rlcockpit.cli import main as cli_main
from rlcockpit.health import HealthMonitor
from rlcockpit.health.advice import advise
from rlcockpit.health.config_view import RunConfigView
from rlcockpit.health.diagnosis.diagnose import diagnose_findings, diagnose_run, proposed_overrides, replay
from rlcockpit.health.diagnosis.evidence import BASELINE_STEPS
from rlcockpit.health.findings import Finding
from rlcockpit.health.synthetic import make_trace
from rlcockpit.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from test_health_diagnosis_paste import OURS_CFG, TRL_CFG, VERL_CFG  # noqa: E402
from test_health_real_runs import FIXTURES, load_fixture  # noqa: E402

TRL_RUN = Path(__file__).resolve().parents[1] / "data" / "trl" / "grpo-3step-random.json"


def trl_run() -> tuple[dict, dict[int, dict[str, float]], dict[int, list[dict]]]:
    data = json.loads(TRL_RUN.read_text(encoding="utf-8"))
    return (data["config"], {int(s): m for s, m in data["metrics"].items()},
            {int(s): rows for s, rows in data["samples"].items()})


def test_the_3_step_trl_run_gets_no_overrides_and_says_it_is_too_short():
    config, metrics, samples = trl_run()
    findings = replay(HealthMonitor(None, config), metrics, samples)
    assert [(f.detector, f.severity) for f in findings if f.severity != "info"] == [("sample_degeneration", "warning")]
    diag = diagnose_findings(findings, config, steps=len(metrics))
    assert diag["overrides"]["apply"] == [], diag["overrides"]
    assert diag["baseline"]["enough"] is False and "3 logged steps" in diag["baseline"]["note"]
    assert "sample_degeneration" in diag["baseline"]["note"]  # what to watch
    # judged against the run's own first samples: the gibberish was there from the start, not a collapse
    top = diag["findings"][0]["causes"][0]
    assert "already like this at the run's first samples" in top["title"] and "nonprintable_rate" in top["evidence"]
    assert not any(a["changes"] for a in diag["findings"][0]["actions"])


def test_the_3_step_trl_run_through_the_store_and_the_cli(tmp_path, capsys):
    config, metrics, samples = trl_run()
    run = rlcockpit.init(project="trl", name="tiny-grpo", dir=tmp_path, config=config, system_interval=None,
                         capture_meta=False, health=False)
    for step in sorted(metrics):
        run.log_samples(samples[step], step=step)
        run.log(metrics[step], step=step)
    run.finish()
    diag = diagnose_run(open_store(tmp_path), run.id)
    assert diag["overrides"]["apply"] == [] and diag["baseline"]["steps"] == 3
    capsys.readouterr()
    html = tmp_path / "report.html"
    assert cli_main(["diagnose", run.id, "--dir", str(tmp_path), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "Overrides to apply" not in out and "too short for a baseline" in out
    assert "already like this at the run's first samples" in out and "too short for a baseline" in html.read_text()
    # the dashboard's diagnosis: nothing to copy, and the note it shows beside the empty list
    from fastapi.testclient import TestClient

    from rlcockpit.ui.app import create_app

    client = TestClient(create_app(open_store(tmp_path)), base_url="http://127.0.0.1")
    d = client.get(f"/api/runs/{run.id}/diagnosis").json()
    assert d["overrides"] == [] and "too short for a baseline" in d["diagnosis"]["baseline"]["note"]


def lone_warning(config: dict, detector: str = "sample_degeneration", step: int = 40,
                 values: dict | None = None) -> Finding:
    """A warning from ``detector`` with the advice it gives under ``config`` (gibberish that rose from 1%)."""
    values = values or {"nonprintable_rate": 0.2, "baseline": {"samples/nonprintable_rate": 0.01}}
    f = Finding(detector, "warning", step, f"{detector} warned", evidence={"values": values})
    f.causes, f.actions = advise(f, RunConfigView(config))
    return f


@pytest.mark.parametrize("config, primary", [
    (TRL_CFG, ["beta=0.02"]),
    (VERL_CFG, ["actor_rollout_ref.actor.kl_loss_coef=0.02"]),
    (OURS_CFG, ["algorithm.kl_ctrl.kl_coef=0.02", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0.05"]),
], ids=["trl", "verl", "rlcockpit"])
def test_a_lone_warning_on_a_long_run_proposes_only_its_detectors_primary_fix(config, primary):
    f = lone_warning(config)
    assert len([a for a in f.actions if a.changes]) == 3  # its own advice lists kl, lr and clip fixes
    merged = proposed_overrides([f], RunConfigView(config), steps=200)
    assert merged["apply"] == primary  # in the run's own dialect
    assert len(merged["held_back"]) == 1 and "primary fix" in merged["held_back"][0]["text"]
    assert "Lower the learning rate" in merged["held_back"][0]["text"]
    # too short for a baseline: nothing at all
    short = proposed_overrides([f], RunConfigView(config), steps=BASELINE_STEPS - 1)
    assert short["apply"] == [] and "too few for a baseline" in short["held_back"][0]["text"]


def test_corroborating_findings_unlock_more_fixes_and_a_critical_all():
    view = RunConfigView(VERL_CFG)
    degenerate, drift = lone_warning(VERL_CFG), lone_warning(VERL_CFG, "kl_rising", step=45)
    two = proposed_overrides([degenerate, drift], view, steps=200)
    assert any(o.startswith("actor_rollout_ref.actor.optim.lr=") for o in two["apply"])  # two findings: 2 fixes
    assert not any("clip_ratio" in o for o in two["apply"])  # ... not the third
    far = lone_warning(VERL_CFG, "kl_rising", step=150)  # not the same event: no corroboration
    assert not any("optim.lr=" in o for o in proposed_overrides([degenerate, far], view, steps=200)["apply"])
    crit = Finding("sample_degeneration", "critical", 40, "degenerated", evidence=degenerate.evidence)
    crit.causes, crit.actions = advise(crit, view)
    full = proposed_overrides([crit], view, steps=5)  # a critical stands on its own, even on a short run
    assert {"actor_rollout_ref.actor.clip_ratio_low=0.1", "actor_rollout_ref.actor.clip_ratio_high=0.1",
            "actor_rollout_ref.actor.kl_loss_coef=0.02"} <= set(full["apply"])  # verl reads low/high, not clip_ratio
    assert full["held_back"] == []


def test_a_change_to_the_value_the_run_already_has_is_not_proposed():
    config = dict(TRL_CFG, num_iterations=1, epsilon=0.2)
    trace = make_trace("collapse", 0)  # a real collapse: criticals, every fix counts
    diag = diagnose_findings(replay(HealthMonitor(None, config), dict(trace.metrics), trace.samples), config)
    assert "epsilon=0.1" in diag["overrides"]["apply"] and "beta=0.02" in diag["overrides"]["apply"]
    assert not any(o.startswith("num_iterations=") for o in diag["overrides"]["apply"])
    assert any(t.startswith("num_iterations=1") for t in diag["overrides"]["already_set"])


def test_healthy_runs_get_nothing_and_real_collapses_keep_their_fixes():
    for path in FIXTURES:
        config, metrics, samples = load_fixture(path)
        diag = diagnose_findings(replay(HealthMonitor(None, config), metrics, samples), config, steps=len(metrics))
        apply = " ".join(diag["overrides"]["apply"])
        if path.name.startswith("healthy-grpo-lr"):
            assert apply == "" and diag["baseline"]["enough"], path.name
        if path.name.startswith("collapse"):  # criticals: the whole collapse fix, even on the 5-step recording
            for key in ("algorithm.kl_ctrl.kl_coef=", "actor.optim.lr=", "actor.clip_ratio"):  # _low/_high where set
                assert key in apply, (path.name, apply)
    for kind in ("healthy_grpo", "healthy_ppo", "healthy_long_reasoning"):
        trace = make_trace(kind, 0)
        diag = diagnose_findings(replay(HealthMonitor(None, trace.config), dict(trace.metrics), trace.samples),
                                 trace.config, steps=len(trace.metrics))
        assert diag["overrides"]["apply"] == [] and diag["overrides"]["held_back"] == [], kind


def test_a_real_collapse_in_verl_dialect_keeps_the_stacked_fix():
    trace = make_trace("collapse", 1)
    diag = diagnose_findings(replay(HealthMonitor(None, VERL_CFG), dict(trace.metrics), trace.samples), VERL_CFG,
                             steps=len(trace.metrics))
    apply = diag["overrides"]["apply"]
    assert all(o.startswith(("actor_rollout_ref.", "algorithm.", "data.")) for o in apply), apply
    assert {"actor_rollout_ref.actor.kl_loss_coef", "actor_rollout_ref.actor.optim.lr",
            "actor_rollout_ref.actor.clip_ratio_low"} <= {o.split("=")[0] for o in apply}


@pytest.mark.parametrize("config", [{"framework": "rlcockpit", "rollout": {"name": "hf"}},
                                    dict(TRL_CFG, use_vllm=False)], ids=["rlcockpit-hf", "trl-no-vllm"])
def test_a_generation_bound_run_without_vllm_is_not_told_to_change_vllms_memory(config):
    f = Finding("throughput_drop", "warning", 40, "slow", evidence={"values": {"bottleneck": "generation-bound"}})
    _causes, actions = advise(f, RunConfigView(config))
    assert actions and not any(a.changes for a in actions) and "vLLM" in actions[0].title
    vllm = RunConfigView(dict(TRL_CFG, use_vllm=True))
    assert advise(f, vllm)[1][0].overrides == ["vllm_gpu_memory_utilization=0.7"]
