"""Advice in the run's own vocabulary when no config says which framework the run came from (issue 24): an
imported TRL ``trainer_state.json`` stores no ``GRPOConfig``, so the framework is read from the metric names the
run logged (``reward``, ``kl``, ``completions/mean_length``...) and the printed overrides are TRL's
(``learning_rate``, ``beta``, ``epsilon``...), not verl paths."""

from __future__ import annotations

import json
import math

from rlcockpit.health.config_view import metrics_framework, with_framework
from rlcockpit.health.diagnosis.diagnose import diagnose_run
from rlcockpit.integrations.importer import import_run
from rlcockpit.store import open_store

TRL_NAMES = {"learning_rate", "beta", "epsilon", "epsilon_high", "num_iterations", "max_grad_norm", "warmup_steps",
             "temperature", "num_generations", "entropy_coef", "max_completion_length", "lr_scheduler_type"}


def collapsing_trl_history(steps: int = 60, cliff: int = 40) -> list[dict]:
    """``log_history`` of a GRPOTrainer run whose reward falls off a cliff while KL and entropy blow up."""
    out = []
    for step in range(1, steps + 1):
        wobble = 0.02 * math.sin(step * 1.7)
        late = step >= cliff
        out.append({"step": step, "epoch": step / steps, "loss": 0.01 + wobble, "grad_norm": 8.0 if late else 0.4 + wobble,
                    "learning_rate": 1e-5, "reward": 0.05 if late else 0.55 + 0.004 * step + wobble,
                    "reward_std": 0.02 if late else 0.3, "kl": 3.0 + step * 0.1 if late else 0.02 + 0.001 * step,
                    "entropy": 4.0 if late else 0.6 + wobble, "completions/mean_length": 256.0 if late else 80.0 + step,
                    "num_tokens": 1000.0 * step})
    return out


def test_an_imported_trainer_state_gets_trl_overrides(tmp_path):
    out = tmp_path / "grpo-out" / "checkpoint-60"
    out.mkdir(parents=True)
    (out / "trainer_state.json").write_text(json.dumps({"global_step": 60, "max_steps": 60,
                                                       "log_history": collapsing_trl_history()}))
    res = import_run(str(out.parent), dir=tmp_path / "s", health=False)
    assert res.ok and res.kind == "trl"
    store = open_store(tmp_path / "s")
    assert "framework" not in (store.get_run(res.run_id)["config"] or {})  # no GRPOConfig was stored
    diag = diagnose_run(store, res.run_id)
    merged = diag["overrides"]
    assert diag["root_cause"] is not None and merged["apply"], diag["overrides"]
    assert merged["vocabulary"] == "trl" and merged["verl"] == []
    keys = {o.split("=", 1)[0] for o in merged["apply"]}
    assert keys <= TRL_NAMES and {"learning_rate", "beta"} <= keys, merged["apply"]
    shown = [o for a in diag["root_cause"]["actions"] for o in a["overrides"]]
    assert shown and all("." not in o.split("=", 1)[0] for o in shown)  # no actor_rollout_ref... path


def test_the_framework_comes_from_the_config_first_then_meta_then_metric_names():
    trl_keys = ["reward", "kl", "train/completions/mean_length", "loss"]
    assert metrics_framework(trl_keys) == "trl"
    assert metrics_framework(["actor/kl_loss", "critic/score/mean", "response_length/mean"]) is None
    assert metrics_framework(["reward", "kl", "loss"]) is None  # names both frameworks could log: no guess
    assert with_framework({"trainer_state": {"max_steps": 60}}, trl_keys)["framework"] == "trl"
    assert with_framework(None, [], {"framework": "trl"}) == {"framework": "trl"}
    ours = {"actor": {"optim": {"lr": 1e-5}}}
    assert with_framework(ours, trl_keys) == ours  # a config that tells its shape is never re-labelled
    verl = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}}}}
    assert "framework" not in with_framework(verl, trl_keys)
