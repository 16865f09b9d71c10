"""Diagnosis people can paste: one value per key in the run's own vocabulary, evidence in the run's own key
names, causes ranked per finding, a user-registered detector complete on its own, a clean ``diagnose``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlcockpit.health import DETECTORS, HealthMonitor
from rlcockpit.health.base import Detector, register_detector
from rlcockpit.health.config_view import make_action
from rlcockpit.health.diagnosis.diagnose import diagnose_findings, replay
from rlcockpit.health.findings import Cause
from rlcockpit.health.stories import Story
from rlcockpit.health.synthetic import FAILURES, HEALTHY, make_trace

sys.path.insert(0, str(Path(__file__).parent))
from health_trace_shapes import KINDS, TRL_KEYS, VERL_KEYS, build  # noqa: E402
from test_health_real_runs import FIXTURES, load_fixture  # noqa: E402

VERL_CFG = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6, "lr_warmup_steps_ratio": 0.0}, "use_kl_loss": True,
                                            "kl_loss_coef": 0.001, "clip_ratio": 0.2, "grad_clip": 1.0},
                                  "rollout": {"n": 8, "temperature": 1.0}, "model": {"path": "Qwen/Qwen2.5-7B"}},
            "algorithm": {"adv_estimator": "grpo", "use_kl_in_reward": False}, "data": {"max_response_length": 1024}}
TRL_CFG = {"framework": "trl", "learning_rate": 1e-5, "beta": 0.0, "num_generations": 8, "temperature": 0.9,
           "max_completion_length": 256, "max_grad_norm": 1.0, "epsilon": 0.2, "per_device_train_batch_size": 8,
           "model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}
OURS_CFG = {"actor": {"optim": {"lr": 3e-3, "lr_warmup_steps_ratio": 0.0}, "model": {"path": "tiny"}, "clip_ratio": 10.0},
            "algorithm": {"use_kl_in_reward": True, "kl_ctrl": {"kl_coef": 1e-5}}, "rollout": {"n": 8}}


def keys_of(overrides: list[str]) -> list[str]:
    return [o.split("=", 1)[0] for o in overrides]


def assert_no_repeats(diag: dict, where: str) -> None:
    merged = diag["overrides"]
    for name in ("apply", "verl"):
        ks = keys_of(merged[name])
        assert len(ks) == len(set(ks)), (where, name, merged[name])
    rc = diag["root_cause"]
    if rc:
        for name in ("overrides", "verl_overrides"):
            ks = [k for a in rc["actions"] for k in keys_of(a[name])]
            assert len(ks) == len(set(ks)), (where, name, rc["actions"])
        flat = {o for a in rc["actions"] for o in a["overrides"]}
        assert flat <= set(merged["apply"]), where  # the fix list never contradicts the merged set


def all_streams():
    for kind in (*HEALTHY, *FAILURES):
        for seed in range(2):
            trace = make_trace(kind, seed)
            yield f"synthetic:{kind}:{seed}", dict(trace.metrics), trace.samples
    for kind in KINDS:
        s = build(kind, 1, 1)
        yield f"shape:{kind}", dict(zip(s.steps, s.rows)), {}


@pytest.mark.parametrize("config", [VERL_CFG, TRL_CFG, OURS_CFG, {}], ids=["verl", "trl", "ours", "empty"])
def test_no_diagnosis_repeats_a_key(config):
    for where, metrics, samples in all_streams():
        diag = diagnose_findings(replay(HealthMonitor(None, config), metrics, samples), config)
        assert_no_repeats(diag, where)


def test_no_diagnosis_of_a_real_preset_run_repeats_a_key():
    for path in FIXTURES:
        config, metrics, samples = load_fixture(path)
        diag = diagnose_findings(replay(HealthMonitor(None, config), metrics, samples), config)
        assert_no_repeats(diag, path.name)


def test_collapse_preset_sets_the_lr_once_with_the_strongest_cut_and_says_why():
    path = next(p for p in FIXTURES if p.name == "collapse-preset.json")
    config, metrics, samples = load_fixture(path)
    diag = diagnose_findings(replay(HealthMonitor(None, config), metrics, samples), config)
    lrs = [o for o in diag["overrides"]["apply"] if o.startswith("actor.optim.lr=")]
    assert len(lrs) == 1
    value = float(lrs[0].split("=")[1])
    assert value < 0.003 / 5  # a cut, never a raise, for a collapse at lr=0.003
    choice = next(c for c in diag["overrides"]["choices"] if c["key"] == "actor.optim.lr")
    assert not choice["alternatives"] or "strongest" in choice["reason"] or "first" in choice["reason"]


def test_overrides_speak_the_runs_vocabulary():
    trace = make_trace("collapse", 0)
    for config, must, never in ((VERL_CFG, "actor_rollout_ref.actor.", "actor.optim.lr="),
                                (TRL_CFG, "learning_rate=", "actor_rollout_ref"),
                                (OURS_CFG, "actor.target_kl=", "actor_rollout_ref.")):
        diag = diagnose_findings(replay(HealthMonitor(None, config), dict(trace.metrics), trace.samples), config)
        text = " ".join(diag["overrides"]["apply"])
        assert must in text and not any(o.startswith(never) for o in diag["overrides"]["apply"]), text
    diag = diagnose_findings(replay(HealthMonitor(None, TRL_CFG), dict(trace.metrics), trace.samples), TRL_CFG)
    assert "beta=0.02" in diag["overrides"]["apply"]  # TRL: the KL penalty is beta
    assert any("target_kl" in t for t in diag["overrides"]["not_applicable"])  # TRL has no KL early stop


def test_evidence_cites_only_keys_the_run_logged():
    for names in (TRL_KEYS, VERL_KEYS):
        for kind in ("healthy", "gpu_mem_percent", "truncation_creep", "mismatch_drift"):
            s = build(kind, 2, 1)
            rename = {VERL_KEYS[k]: names[k] for k in VERL_KEYS if k in names}
            rows = [{rename.get(k, k): v for k, v in row.items()} for row in s.rows]
            findings = replay(HealthMonitor(None, {}), dict(zip(s.steps, rows)), {})
            logged = {k for row in rows for k in row} | {"system/gpu/utilization", "system/gpu/memory_percent"}
            for f in findings:
                assert set(f.evidence["metrics"]) <= logged, (kind, f.detector, set(f.evidence["metrics"]) - logged)


def test_causes_are_ranked_per_finding_from_its_own_evidence():
    trace = make_trace("collapse", 0)
    findings = [f for f in replay(HealthMonitor(None, {}), dict(trace.metrics), trace.samples)
                if f.severity != "info"]
    lists = {tuple(c.title for c in f.causes) for f in findings}
    assert len(lists) > 1  # not the same list under every finding
    cliff = next(f for f in findings if f.detector == "reward_cliff")
    assert any("KL rose" in c.title and "actor/kl_loss" in c.evidence for c in cliff.causes)


def test_a_user_registered_detector_is_complete_on_its_own():
    @register_detector("disk_fill")
    class DiskFill(Detector):
        """Checkpoint disk above 95%."""

        keys = ("system/disk_percent",)
        story = Story("disk", "Checkpoint disk filling up", "the checkpoints filled the disk{because}")
        role = "outcome"
        cause = "every checkpoint is kept"
        common = {"enabled": True, "warmup": 2, "cooldown": 100}

        def check(self, step):
            if self.ctx.tracks["system/disk_percent"].last > 95:
                return self.fire(step, "critical", "Disk 97% full", values={"percent": 97.0})
            return None

        def advise(self, finding):
            return [Cause(self.cause, 0.8, "no max_actor_ckpt_to_keep set")], [
                make_action(self.ctx.view, "Keep fewer checkpoints", {"trainer.max_actor_ckpt_to_keep": 2})]

    try:
        metrics = {s: {"system/disk_percent": 60.0 + (37.0 if s >= 30 else 0.0)} for s in range(40)}
        diag = diagnose_findings(replay(HealthMonitor(None, {}), metrics, {}), {})
        rc = diag["root_cause"]
        assert rc["story"] == "disk" and rc["title"] == "Checkpoint disk filling up at step 30"
        assert rc["root"]["detector"] == "disk_fill" and rc["explanation"].startswith("The checkpoints filled the disk")
        assert "every checkpoint is kept" in rc["explanation"]
        assert diag["overrides"]["apply"] == ["trainer.max_actor_ckpt_to_keep=2"]
        assert rc["actions"][0]["title"] == "Keep fewer checkpoints"
    finally:
        DETECTORS.unregister("disk_fill")


def test_cli_diagnose_prints_one_clean_report_without_live_lines(tmp_path):
    import rlcockpit

    trace = make_trace("collapse", 0)
    run = rlcockpit.init(project="p", name="live", dir=tmp_path, config=trace.config, system_interval=None,
                         capture_meta=False)  # findings are printed live while this logs
    for step, m in trace.metrics:
        if step in trace.samples:
            run.log_samples(trace.samples[step], step=step)
        run.log(m, step=step)
    run.finish()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "rlcockpit.cli", "diagnose", "live", "--dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    merged = out.stdout + out.stderr
    assert "[health]" not in merged and "ROOT CAUSE: Policy collapse" in out.stdout
    assert out.stdout.count("Overrides to apply") == 1 and out.stderr == ""
