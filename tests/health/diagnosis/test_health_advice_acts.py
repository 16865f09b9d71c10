"""Advice that acts (issue 24): every override a diagnosis proposes changes something in the framework it is
written for. The oracle is verl 0.9.1's own generated config (``_generated_ppo_trainer.yaml``, shipped in the verl
venv's package) plus verl's precedence rules (their one home, ``rlcockpit.trainer.config.verl.inactive_reason``):
an override on a key that the generated config shadows (``clip_ratio`` under explicit ``clip_ratio_low/high``), on
the KL path that is off, or to the value the run already has is a no-op there."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlcockpit.health.advice import advise
from rlcockpit.health.base import DETECTORS, DetectorContext, Track
from rlcockpit.health.config_view import RunConfigView, make_action
from rlcockpit.health.detectors.collapse import collapse_actions
from rlcockpit.health.diagnosis.diagnose import diagnose_findings
from rlcockpit.health.diagnosis.overrides import merge_overrides
from rlcockpit.health.findings import Finding
from rlcockpit.trainer.config.verl import inactive_reason

REPO = Path(__file__).resolve().parents[3]
GENERATED = sorted((REPO / ".venv-verl" / "lib").glob("python*/site-packages/verl/trainer/config/"
                                                      "_generated_ppo_trainer.yaml"))
# what detectors read from a finding's evidence when they advise (the off-policy ones cite these values)
EVIDENCE = {"values": {"limit": 8, "staleness": 6.0, "rollout_micro": 8, "actor_micro": 4, "ratio": 8.0}}


def verl_generated() -> dict[str, Any]:
    assert GENERATED, "verl's generated config is missing: build .venv-verl (scripts/setup_verl_env.sh)"
    return yaml.safe_load(GENERATED[0].read_text())


def flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def with_settings(base: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """verl's generated config with ``settings`` (dotted paths) set, as a verl run's logged config."""
    cfg = copy.deepcopy(base)
    for path, value in settings.items():
        node = cfg
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    return {**cfg, "framework": "verl"}


def every_finding(view: RunConfigView, tracks: dict[str, Track] | None = None) -> list[Finding]:
    """One finding per registered detector and severity, advised by the detector's own advice (with the run's
    other metrics ``tracks`` as its evidence when given, as a live finding is)."""
    out = []
    for name in DETECTORS:
        cls = DETECTORS.get(name)
        for severity in ("warning", "critical"):
            f = Finding(name, severity, 50, f"{name} {severity}", metric=cls.keys[0] if cls.keys else None,
                        evidence=copy.deepcopy(EVIDENCE))
            if tracks is None:
                f.causes, f.actions = advise(f, view)
            else:
                ctx = DetectorContext(view)
                ctx.tracks.update(copy.deepcopy(tracks))
                f.causes, f.actions = cls(None, ctx).advise(f)
            out.append(f)
    return out


def jumping_tracks() -> dict[str, Track]:
    """Every metric the advice cites as evidence, jumping at the end of a 30-step run (gradient norm, clip
    fraction, PPO KL, KL, entropy up; reward, response length down): the evidence-driven branches all fire."""
    moves = {"actor/grad_norm": (0.3, 6.0), "actor/pg_clipfrac": (0.02, 0.3), "actor/ppo_kl": (0.001, 0.05),
             "actor/kl_loss": (0.05, 2.0), "actor/entropy": (0.5, 3.0), "critic/score/mean": (0.6, 0.05),
             "response_length/mean": (200.0, 20.0)}
    out = {}
    for key, (before, after) in moves.items():
        track = out[key] = Track(key)
        for step in range(30):
            track.push(step, before if step < 26 else after)
    return out


def collapse_actions_for_test(view: RunConfigView, tracks: dict[str, Track]) -> list:
    """The collapse detectors' shared candidates for a run with ``tracks`` logged."""
    ctx = DetectorContext(view)
    ctx.tracks.update(tracks)
    return collapse_actions(DETECTORS.get("reward_cliff")(None, ctx))


def parse(override: str) -> tuple[str, Any]:
    key, _, text = override.partition("=")
    return key, yaml.safe_load(text)


def no_ops(overrides: list[str], effective: dict[str, Any], known: set[str]) -> list[str]:
    """The overrides among ``overrides`` (applied together) that change nothing in verl's effective config."""
    after = dict(effective, **dict(parse(o) for o in overrides))
    bad = []
    for o in overrides:
        key, value = parse(o)
        if key not in known:
            bad.append(f"{o}: verl's config has no such key")
        elif effective.get(key) == value:
            bad.append(f"{o}: already verl's value")
        elif (why := inactive_reason(key, after)) is not None:
            bad.append(f"{o}: {why}")
    return bad


VARIANTS = {  # verl's generated config as is (PPO, no KL), and the common GRPO setups on top of it
    "generated": {},
    "grpo_kl_loss": {"algorithm.adv_estimator": "grpo", "actor_rollout_ref.actor.use_kl_loss": True,
                     "actor_rollout_ref.rollout.n": 8},
    "kl_in_reward": {"algorithm.use_kl_in_reward": True, "actor_rollout_ref.actor.optim.lr": 3e-6},
    "dapo": {"algorithm.adv_estimator": "grpo", "actor_rollout_ref.actor.clip_ratio_high": 0.28,
             "actor_rollout_ref.actor.entropy_coeff": 0.001, "actor_rollout_ref.rollout.temperature": 0.6,
             "actor_rollout_ref.model.enable_gradient_checkpointing": False},
    # the collapse preset's settings far outside the norm, in a verl config: every one of them gets a fix
    "collapse_preset": {"algorithm.adv_estimator": "grpo", "algorithm.use_kl_in_reward": True,
                        "algorithm.kl_ctrl.kl_coef": 1e-5, "actor_rollout_ref.actor.optim.lr": 3e-3,
                        "actor_rollout_ref.actor.clip_ratio_low": 10.0, "actor_rollout_ref.actor.clip_ratio_high": 10.0,
                        "actor_rollout_ref.actor.ppo_epochs": 4, "actor_rollout_ref.actor.grad_clip": 100.0,
                        "actor_rollout_ref.rollout.n": 8},
}


@pytest.mark.parametrize("evidence", ["config only", "jumping metrics"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_advice_is_a_no_op_in_verls_generated_config(variant, evidence):
    base = verl_generated()
    known = set(flatten(base))
    config = with_settings(base, VARIANTS[variant])
    effective = flatten({k: v for k, v in config.items() if k != "framework"})
    findings = every_finding(RunConfigView(config), jumping_tracks() if evidence == "jumping metrics" else None)
    assert len({f.detector for f in findings}) == len(list(DETECTORS))
    proposed = [(f.detector, a.verl_overrides) for f in findings for a in f.actions if a.verl_overrides]
    assert len(proposed) >= 20  # the check covers real advice, not an empty list
    bad = [f"{det}: {b}" for det, overrides in proposed for b in no_ops(overrides, effective, known)]
    assert bad == []
    merged = merge_overrides(findings, RunConfigView(config))  # the one line a user pastes
    assert merged["apply"] and no_ops(merged["apply"], effective, known) == []


def test_a_sparse_verl_config_is_checked_against_verls_defaults():
    """A verl run that logged only what it changed runs with verl's defaults for the rest: clip_ratio_low/high at
    0.2, lr 1e-6, one PPO epoch. None of its overrides may be a no-op against the generated config."""
    base = verl_generated()
    sparse = {"framework": "verl", "actor_rollout_ref": {"model": {"path": "Qwen/Qwen2.5-0.5B-Instruct"}},
              "algorithm": {"adv_estimator": "grpo"}}
    effective = dict(flatten(base), **{"actor_rollout_ref.model.path": "Qwen/Qwen2.5-0.5B-Instruct",
                                       "algorithm.adv_estimator": "grpo"})
    findings = every_finding(RunConfigView(sparse))
    overrides = [o for f in findings for a in f.actions for o in a.verl_overrides]
    assert "actor_rollout_ref.actor.optim.lr=1e-07" in overrides  # 10x below verl's default, not a fixed 1e-6
    assert no_ops(overrides, effective, set(flatten(base))) == []


def test_a_shadowed_key_is_replaced_by_the_one_that_acts_or_dropped_with_the_reason():
    base = verl_generated()
    view = RunConfigView(with_settings(base, {}))
    clip = make_action(view, "tighter clip", {"actor.clip_ratio": 0.1})
    assert clip.verl_overrides == ["actor_rollout_ref.actor.clip_ratio_low=0.1",
                                   "actor_rollout_ref.actor.clip_ratio_high=0.1"]
    old = RunConfigView(with_settings(base, {"actor_rollout_ref.actor.clip_ratio_low": None,
                                             "actor_rollout_ref.actor.clip_ratio_high": None}))
    assert make_action(old, "tighter clip", {"actor.clip_ratio": 0.1}).verl_overrides == [
        "actor_rollout_ref.actor.clip_ratio=0.1"]  # a config without low/high: clip_ratio is what acts
    in_reward = RunConfigView(with_settings(base, {"algorithm.use_kl_in_reward": True}))
    assert make_action(in_reward, "kl", {"actor.kl_loss_coef": 0.05}).verl_overrides == ["algorithm.kl_ctrl.kl_coef=0.05"]
    neither = make_action(view, "kl", {"actor.kl_loss_coef": 0.05})  # no KL path on: nothing to swap to
    assert neither.overrides == [] and neither.changes == {}
    assert neither.dropped == ["actor_rollout_ref.actor.kl_loss_coef=0.05: changes nothing (read only with "
                               "actor_rollout_ref.actor.use_kl_loss=true)"]
    finding = Finding("kl_spike", "critical", 30, "kl", actions=[neither])
    diag = diagnose_findings([finding], with_settings(base, {}))
    assert any("kl_loss_coef=0.05" in t and "use_kl_loss=true" in t for t in diag["overrides"]["not_applicable"])


def test_values_are_relative_to_the_runs_current_value():
    base = verl_generated()
    view = RunConfigView(with_settings(base, {"algorithm.use_kl_in_reward": True, "algorithm.kl_ctrl.kl_coef": 0.005,
                                              "actor_rollout_ref.actor.optim.lr": 4e-6,
                                              "actor_rollout_ref.actor.clip_ratio_low": 0.3,
                                              "actor_rollout_ref.actor.clip_ratio_high": 0.4,
                                              "actor_rollout_ref.actor.entropy_coeff": 0.001}))
    by_detector = {f.detector: f for f in every_finding(view) if f.severity == "critical"}
    cliff = {o for a in by_detector["reward_cliff"].actions for o in a.verl_overrides}
    assert {"algorithm.kl_ctrl.kl_coef=0.05", "actor_rollout_ref.actor.optim.lr=4e-07",
            "actor_rollout_ref.actor.clip_ratio_low=0.15", "actor_rollout_ref.actor.clip_ratio_high=0.2"} <= cliff
    explore = {o for a in by_detector["entropy_collapse"].actions for o in a.verl_overrides}
    assert "actor_rollout_ref.actor.entropy_coeff=0.002" in explore  # doubled: 0.001 is already the run's value
    assert not any(o.startswith("actor_rollout_ref.actor.clip_ratio_high=0.28") for o in explore)  # 0.4 is wider
    wide = RunConfigView(with_settings(base, {"actor_rollout_ref.actor.clip_ratio_low": 10.0,
                                              "actor_rollout_ref.actor.clip_ratio_high": 10.0}))
    cliff = {o for f in every_finding(wide) if f.detector == "reward_cliff" for a in f.actions for o in a.verl_overrides}
    assert {"actor_rollout_ref.actor.clip_ratio_low=0.2", "actor_rollout_ref.actor.clip_ratio_high=0.2"} <= cliff


def test_collapse_fixes_are_ranked_by_the_runs_evidence():
    """The same finding ranks its candidates differently when the run's evidence differs: a gradient-norm jump
    puts the lr cut first; a config without KL puts the KL fix first. Each candidate says what ranked it."""
    base = verl_generated()
    view = RunConfigView(with_settings(base, {"actor_rollout_ref.actor.optim.lr": 4e-6}))
    calm = collapse_actions_for_test(view, {})
    assert calm[0].title.startswith("Raise the KL penalty") and "No KL regularisation" in calm[0].evidence
    grad = Track("actor/grad_norm")
    for step in range(30):
        grad.push(step, 0.3 if step < 26 else 6.0)
    spiking = collapse_actions_for_test(view, {"actor/grad_norm": grad})
    assert spiking[0].title.startswith("Lower the learning rate") and "grad_norm 0.3 -> 6" in spiking[0].evidence
    assert all(a.evidence for a in spiking)


def test_advice_renders_into_trls_vocabulary():
    """One advice, written as verl paths, rendered through the one alias table into ``GRPOConfig`` names: the clip
    range as ``epsilon``/``epsilon_high`` (TRL bounds the upper side by ``epsilon_high`` once set), the KL weight as
    ``beta``, the lr relative to the run's ``learning_rate``; ``num_iterations`` already 1 is not proposed."""
    trl = {"framework": "trl", "learning_rate": 1e-5, "beta": 0.04, "epsilon": 0.2, "epsilon_high": 0.28,
           "num_iterations": 1, "num_generations": 8, "per_device_train_batch_size": 8}
    finding = next(f for f in every_finding(RunConfigView(trl)) if f.detector == "reward_cliff" and
                   f.severity == "critical")
    overrides = {o for a in finding.actions for o in a.overrides}
    assert {"learning_rate=1e-06", "beta=0.4", "epsilon=0.1", "epsilon_high=0.14"} <= overrides
    assert all("." not in o.split("=")[0] for o in overrides)  # no verl path leaks into a TRL run's advice
    assert not any(a.verl_overrides for a in finding.actions)
    assert not any(o.startswith("num_iterations=") for o in overrides)
    assert any(d.startswith("num_iterations=1: already") for a in finding.actions for d in a.dropped)


def test_verls_defaults_where_rlcockpits_differ_are_verls_own():
    """A verl run that leaves a key out runs with verl's default, not rlcockpit's (gradient checkpointing: verl on,
    rlcockpit off): advice compares against verl's generated config there."""
    from rlcockpit.trainer.config.verl import VERL_DEFAULT_VALUES

    generated = flatten(verl_generated())
    assert {k: generated[k] for k in VERL_DEFAULT_VALUES} == VERL_DEFAULT_VALUES
    sparse = RunConfigView({"framework": "verl", "data": {"max_response_length": 1024}})
    assert sparse.current("actor.model.enable_gradient_checkpointing") is True
    ours = RunConfigView({"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-5}}}, "trainer": {"preflight": True}})
    assert ours.framework == "rlcockpit" and ours.current("actor.model.enable_gradient_checkpointing") is False
