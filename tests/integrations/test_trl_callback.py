"""A real TRL GRPOTrainer run on CPU (built-in tiny Qwen2 + char tokenizer) logged with CockpitCallback."""

from __future__ import annotations

import random

import pytest
from integrations_support import require_findings

pytestmark = pytest.mark.slow


def _tiny_model_dir(path):
    """The built-in tiny Qwen2 (hidden 64, 2 layers) saved as an ordinary HF model directory, as a user's
    model would be (GRPOTrainer builds its KL reference model from the policy's path)."""
    from rlcockpit.trainer.config import TinyModelConfig
    from rlcockpit.trainer.tiny import build_char_tokenizer, build_tiny_model

    tok = build_char_tokenizer()
    model = build_tiny_model(tok, TinyModelConfig(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128))
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path), tok


def test_grpo_trainer_run_is_stored_with_metrics_samples_config_and_findings(tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlcockpit.integrations.trl import CockpitCallback
    from rlcockpit.store import open_store

    model, tok = _tiny_model_dir(tmp_path / "tiny")
    calls = {"n": 0}
    rng = random.Random(0)

    def rigged_reward(completions, **kwargs):
        # healthy-looking reward for the first steps, then it collapses: the reward-cliff pattern
        calls["n"] += 1
        base = 0.8 if calls["n"] <= 22 else 0.02
        return [base + rng.uniform(-0.05, 0.05) for _ in completions]

    ds = Dataset.from_dict({"prompt": [f"{a}+{a + 1}=" for a in range(16)]})
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=30, per_device_train_batch_size=4,
                      num_generations=4, max_completion_length=6, logging_steps=1, learning_rate=1e-4,
                      report_to=[], use_cpu=True, bf16=False, save_strategy="no", log_completions=False,
                      hub_token="hf_secret_value", beta=0.04, run_name="grpo-tiny")
    cb = CockpitCallback(project="trl-test", dir=tmp_path / "store")
    trainer = GRPOTrainer(model=model, reward_funcs=rigged_reward, args=args, train_dataset=ds,
                          processing_class=tok, callbacks=[cb])
    trainer.train()

    store = open_store(tmp_path / "store")
    run = store.get_run(cb.run.id)
    assert run["name"] == "grpo-tiny" and run["stored_status"] == "finished"
    assert run["meta"]["framework"] == "trl" and run["meta"]["trainer_class"] == "GRPOTrainer"
    # args as config, secrets redacted
    assert run["config"]["max_steps"] == 30 and run["config"]["hub_token"] == "***"
    keys = set(store.keys(run["id"]))
    assert {"reward", "reward_std", "kl", "entropy", "grad_norm", "learning_rate"} <= keys, keys
    assert any(k.startswith("completions/") for k in keys) and any(k.startswith("clip_ratio/") for k in keys)
    steps, values, _ = store.series(run["id"], "reward")
    assert list(steps) == list(range(1, 31))
    assert values[:20].mean() > 0.7 and values[-5:].mean() < 0.1  # TRL's own reward metric, stored verbatim
    # completions as samples, with the per-function reward and advantage columns
    sample_steps = store.sample_steps(run["id"])
    assert len(sample_steps) >= 25
    rows = store.samples(run["id"], step=sample_steps[0])
    assert len(rows) == 4 and all(r["prompt"] and "rewards/rigged_reward" in r and "advantage" in r for r in rows)
    assert all(abs(r["reward"] - r["rewards/rigged_reward"]) < 1e-9 for r in rows)
    require_findings(store.findings(run["id"]), "reward_cliff", "reward_drop")

    # the same run's trainer_state.json (written by transformers) imports post-mortem as a TRL run
    from rlcockpit.integrations.importer import import_run

    trainer.save_state()
    res = import_run(str(tmp_path / "out"), dir=tmp_path / "imported")
    assert res.ok and res.kind == "trl" and res.steps >= 30
    imported = open_store(tmp_path / "imported")
    assert list(imported.series(res.run_id, "reward")[0])[:30] == list(range(1, 31))
    require_findings(res.findings, "reward_cliff", "reward_drop")
