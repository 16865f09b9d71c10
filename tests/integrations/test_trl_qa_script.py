"""A TRL user's GRPO script as TRL's docs write it (``GRPOTrainer(model=<path>, reward_funcs=..., args=GRPOConfig(...),
train_dataset=<conversational prompts>)``), on a tiny random Qwen2 with a BPE tokenizer trained in code, logged
both ways the docs offer a TRL user: ``CockpitCallback`` and ``report_to="wandb"`` offline + ``rlcockpit import``."""

from __future__ import annotations

import json

import pytest
from integrations_support import tiny_qwen2_dir as _model_dir

from rlcockpit.cli import main as cli_main
from rlcockpit.integrations.importer import import_run
from rlcockpit.store import open_store

pytestmark = pytest.mark.slow

def test_trl_docs_grpo_script_with_callback_and_wandb_offline_import(tmp_path, monkeypatch, capsys):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlcockpit.integrations.trl import CockpitCallback

    model = _model_dir(tmp_path / "tiny-qwen2")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"how many apples {i}"}] for i in range(16)]})

    def reward_len(completions, **kwargs):  # TRL docs' example reward
        return [-abs(20 - len(c[0]["content"])) for c in completions]

    args = GRPOConfig(output_dir="Qwen2-GRPO", max_steps=3, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, logging_steps=1, report_to="wandb", use_cpu=True, bf16=False)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=dataset)
    cb = CockpitCallback(dir=tmp_path / "store")
    trainer.add_callback(cb)
    trainer.train()
    import wandb

    wandb.finish()  # transformers leaves wandb.run open: a later test's trainer would reuse the torn-down run
    wandb.teardown()

    trl_keys = {"reward", "reward_std", "rewards/reward_len/mean", "completions/mean_length", "entropy", "grad_norm"}
    store = open_store(tmp_path / "store")
    assert trl_keys <= set(store.keys(cb.run.id))
    assert list(store.series(cb.run.id, "reward")[0]) == [1, 2, 3]
    rows = store.samples(cb.run.id, step=1)
    assert len(rows) == 4 and all(r["prompt"].startswith("user: how many apples") for r in rows)
    capsys.readouterr()  # the trainer's own prints
    assert cli_main(["diagnose", cb.run.id, "--dir", str(tmp_path / "store"), "--json"]) in (0, 1)
    diagnosis = json.loads(capsys.readouterr().out)
    assert diagnosis["run"]["id"] == cb.run.id
    # 3 steps of a random-weights model: too short for a baseline, nothing to paste (health/diagnosis/evidence.py)
    assert diagnosis["overrides"]["apply"] == [] and diagnosis["baseline"]["enough"] is False, diagnosis["overrides"]

    # the same run as W&B recorded it (transformers' WandbCallback), imported: the trainer's steps, TRL's keys
    res = import_run(str(tmp_path / "wandb"), dir=tmp_path / "imported")
    assert res.ok and res.kind == "wandb" and res.steps == 4, res  # steps 0..3 (step 0: TRL's profiling rows)
    imported = open_store(tmp_path / "imported")
    steps, values, _ = imported.series(res.run_id, "train/reward")
    assert list(steps) == [1, 2, 3]
    assert list(values) == pytest.approx(list(store.series(cb.run.id, "reward")[1]))
