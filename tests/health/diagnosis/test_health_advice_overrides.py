"""Every action any detector's advice can produce: its rlcockpit overrides must be accepted by rlcockpit's own
trainer config (the guardrails apply them on rollback, users paste them into ``rlcockpit train``), and its
verl overrides must be verl key paths. Walks all detectors x the advice branches x config shapes."""

from __future__ import annotations

import pytest

from rlcockpit.health import DETECTORS
from rlcockpit.health.advice import advise
from rlcockpit.health.config_view import VERL_KEYS, RunConfigView
from rlcockpit.health.findings import Action, Finding
from rlcockpit.trainer.config import Config, all_keys, canonical, parse_override, set_key, to_dict

TRAINER_KEYS = set(all_keys())


def _with(**changes: object) -> dict:
    """The default rlcockpit config as a run stores it (verl's shape, framework=rlcockpit), with ``changes`` in any
    key form the trainer accepts (``actor_rollout_ref__actor__optim__lr`` or ``actor__optim__lr``)."""
    cfg = to_dict(Config())
    for dotted, value in changes.items():
        *parents, leaf = canonical(dotted.replace("__", ".")).split(".")
        node = cfg
        for p in parents:
            node = node[p]
        node[leaf] = value
    return cfg


# configs that steer advice into each of its branches (KL in loss / in reward / none, low lr warm-up,
# unclipped gradients, micro-batches to halve, a PPO critic...)
A = "actor_rollout_ref__actor__"
OURS = {
    "empty": {},
    "default": _with(),
    "kl_loss": _with(**{A + "use_kl_loss": True, A + "kl_loss_coef": 0.0001}),
    "kl_reward": _with(algorithm__use_kl_in_reward=True, algorithm__kl_ctrl__kl_coef=0.001),
    "no_clip": _with(**{A + "grad_clip": 0.0, A + "ppo_micro_batch_size_per_gpu": 8,
                        "actor_rollout_ref__rollout__temperature": 0.5, A + "optim__lr_warmup_steps_ratio": 0.0}),
}
VERL = {
    "verl": {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "use_kl_loss": True, "kl_loss_coef": 0.001,
                                             "ppo_micro_batch_size_per_gpu": 8, "grad_clip": 0.0},
                                   "rollout": {"temperature": 0.6, "n": 4}},
             "data": {"max_response_length": 1024}, "critic": {"optim": {"lr": 1e-5}}},
    "verl_marked": {"framework": "verl", "algorithm": {"use_kl_in_reward": False}},
}
VALUES = [{}, {"ratio": 12.0}, *({"bottleneck": b} for b in
                                 ("data-bound", "data-bound (unaccounted host time)", "generation-bound",
                                  "update-bound", "inference-bound (ref/old log-prob)", ""))]
VERL_PATHS = {v for v in VERL_KEYS.values() if v}


def _actions(config: dict) -> list[tuple[str, Action]]:
    view = RunConfigView(config)
    out = []
    for name in DETECTORS.names():
        for values in VALUES:
            finding = Finding(detector=name, severity="critical", step=50, title="t",
                              evidence={"metrics": {}, "values": dict(values)})
            _causes, actions = advise(finding, view)
            out += [(name, a) for a in actions]
    return out


def test_the_walk_reaches_every_kind_of_action():
    titles = {a.title.split(" (")[0] for shape in OURS.values() for _n, a in _actions(shape)}
    assert len(titles) >= 12  # kl, lr, clip, entropy, memory, dataloader, KV cache, critic lr, rollout.n...
    assert any("KV cache" in t for t in titles) and any("dataloader" in t for t in titles)


@pytest.mark.parametrize("shape", sorted(OURS))
def test_rlcockpit_overrides_parse_and_apply_to_a_default_trainer_config(shape):
    offered = {text: name for name, action in _actions(OURS[shape]) for text in action.overrides}
    assert len(offered) >= 8
    for text, name in offered.items():
        key, value = parse_override(text)
        cfg = Config()
        set_key(cfg, key, value)  # raises ConfigError on a key the trainer does not have
        node = cfg
        for part in key.split("."):
            node = getattr(node, part)
        # the value really landed, with the type the trainer uses
        assert node == value or (isinstance(node, float) and node == pytest.approx(float(value))), (name, text)


@pytest.mark.parametrize("shape", sorted(OURS))
def test_verl_overrides_use_verl_paths(shape):
    for name, action in _actions(OURS[shape]):
        for text in action.verl_overrides:
            key = text.split("=", 1)[0]
            assert key in VERL_PATHS, (name, text)
        # a knob both have appears on both sides: the rlcockpit side (its short keys) is never silently emptier
        ours = {o.split("=", 1)[0] for o in action.overrides}
        for text in action.verl_overrides:
            key = text.split("=", 1)[0]
            rl_key = next(k for k, v in VERL_KEYS.items() if v == key)
            if rl_key in TRAINER_KEYS:
                assert rl_key in ours, (name, text, action.overrides)


@pytest.mark.parametrize("shape", sorted(VERL))
def test_a_verl_run_gets_verl_paths_only(shape):
    actions = _actions(VERL[shape])
    assert actions
    for name, action in actions:
        for text in [*action.overrides, *action.verl_overrides]:
            assert text.split("=", 1)[0] in VERL_PATHS, (name, text)


def test_verl_only_knobs_are_not_offered_to_the_rlcockpit_trainer():
    actions = [a for _n, a in _actions(OURS["default"])]
    # the KV-cache share is a knob of the trainer's vLLM rollout (rollout.name=vllm) too, so it is offered there;
    # the default HF rollout has no such setting, so a run on it is not told to change one
    assert not any("KV cache" in a.title for a in actions)
    vllm = [a for _n, a in _actions(_with(actor_rollout_ref__rollout__name="vllm"))]
    kv = next(a for a in vllm if "KV cache" in a.title)
    assert kv.overrides == ["rollout.gpu_memory_utilization=0.7"]
    assert kv.verl_overrides == ["actor_rollout_ref.rollout.gpu_memory_utilization=0.7"]
    workers = [a for a in actions if "dataloader" in a.title]
    assert workers and all(a.overrides == [] and a.verl_overrides[0].startswith("data.dataloader_num_workers=")
                           for a in workers)
    # and rlcockpit-only knobs (early stop on KL) stay out of verl's list
    clip = next(a for a in actions if a.title == "Make PPO updates smaller")
    assert "actor.target_kl=0.05" in clip.overrides
    assert not any("target_kl" in o for o in clip.verl_overrides)

