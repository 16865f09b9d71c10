"""W&B offline runs written the way transformers/TRL's ``WandbCallback`` writes them, imported."""

from __future__ import annotations

from rlcockpit.integrations.importer import import_run
from rlcockpit.store import open_store


def test_wandb_run_with_train_global_step_axis_imports_at_the_trainers_steps(tmp_path, monkeypatch):
    """transformers' WandbCallback declares ``train/global_step`` as every key's x axis and TRL logs extra
    rows (``profiling/...``) without it between trainer steps; W&B charts use the trainer's step."""
    import wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    run = wandb.init(mode="offline", project="huggingface", dir=str(tmp_path))
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step", step_sync=True)
    for step in (1, 2, 3):
        run.log({"profiling/Time taken: GRPOTrainer._prepare_inputs": 0.01 * step})
        run.log({"profiling/Time taken: GRPOTrainer.compute_loss": 0.02 * step})
        run.log({"train/reward": -5.0 + step, "train/loss": 0.1 * step, "train/global_step": step})
    run.finish()
    wandb.teardown()

    res = import_run(str(tmp_path / "wandb"), dir=tmp_path / "s")
    assert res.ok, res.error
    store = open_store(tmp_path / "s")
    steps, values, _ = store.series(res.run_id, "train/reward")
    assert list(steps) == [1, 2, 3] and list(values) == [-4.0, -3.0, -2.0]
    # a profiling row logged before the trainer's step-N row belongs to the last step seen (step_sync)
    steps, _, _ = store.series(res.run_id, "profiling/Time taken: GRPOTrainer.compute_loss")
    assert list(steps) == [0, 1, 2]
    assert res.steps == 4 and store.get_run(res.run_id)["meta"]["wandb_step_metric"] == "train/global_step"
