"""A verl user's command line, config file and GSM8K data work unchanged (issue 12's "Done when").

* all 37 overrides of verl's ``examples/grpo_trainer/run_qwen2-7b.sh`` (fixtures/verl/, verbatim) through
  ``rlcockpit train``, only paths and sizes pointed at a tiny local Qwen2 and a GSM8K-schema parquet;
* verl's full generated trainer config through ``--config``;
* GSM8K data with the default reward: a tiny model warmed up on ``#### N`` answers gets nonzero, varying rewards.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import rlcockpit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "verl"
PATH_KEYS = {"data.train_files", "data.val_files", "actor_rollout_ref.model.path"}
SIZE_KEYS = {"data.train_batch_size": 4, "data.max_response_length": 16,
             "actor_rollout_ref.actor.ppo_mini_batch_size": 4,
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 10,
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 10,
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 10}


def script_overrides(path: Path) -> list[str]:
    """The overrides a shell would pass to ``python3 -m verl.trainer.main_ppo`` (quotes removed as bash does)."""
    lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("#")]
    tokens = shlex.split(" ".join(lines).replace("\\ ", " "))
    args = tokens[tokens.index("verl.trainer.main_ppo") + 1:]
    return [a for a in args if a != "$@"]


def _env(tmp_path: Path) -> dict:
    return {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path / "wandb"), "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.mark.slow
def test_run_qwen2_7b_overrides_train_unchanged(hf_assets, tmp_path):
    original = script_overrides(FIXTURES / "run_qwen2-7b.sh")
    assert len(original) == 37
    new = {"data.train_files": hf_assets["train"], "data.val_files": hf_assets["val"],
           "actor_rollout_ref.model.path": str(hf_assets["models"]["qwen2"]), **SIZE_KEYS}
    overrides = [f"{k}={new[k]}" if (k := o.split("=", 1)[0]) in new else o for o in original]
    changed = {o.split("=", 1)[0] for o, n in zip(original, overrides) if o != n}
    assert changed <= PATH_KEYS | set(SIZE_KEYS)  # nothing but paths and sizes differs from verl's script
    store, ckpts = tmp_path / "store", tmp_path / "ckpt"
    extra = ["trainer.total_training_steps=2", f"trainer.rlcockpit_dir={store}", f"trainer.default_local_dir={ckpts}",
             "trainer.num_threads=1"]  # two steps on CPU, this test's folders, one thread on a shared machine
    # verl's own entry point name with one word changed (python3 -m verl.trainer.main_ppo -> rlcockpit...)
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.trainer.main_ppo", *overrides, *extra], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "rollout.name=vllm" in out or "vllm" in out.lower()  # the fallback is said, once
    assert "no effect here" in out and "tensor_model_parallel_size" in out
    assert "[rlcockpit] step 2/2" in out  # stdout is not a terminal: a plain line per step
    runs = rlcockpit.Api(str(store)).runs()
    assert len(runs) == 1
    run = runs[0]
    assert run.status == "finished" and run.project == "verl_grpo_example_gsm8k" and run.name == "qwen2_7b_function_rm"
    hist = run.history()
    assert hist["critic/score/mean"].notna().sum() == 2 and "actor/kl_loss" in hist.columns
    cfg = run.config
    assert cfg["actor_rollout_ref"]["rollout"]["tensor_model_parallel_size"] == 2  # stored, no effect
    assert cfg["actor_rollout_ref"]["actor"]["use_kl_loss"] is True and cfg["trainer"]["logger"] == ["console", "wandb"]
    (event,) = run.events("config")
    listed = {k for row in event["payload"]["no_effect"] for k in row["keys"]}
    assert {"actor_rollout_ref.rollout.gpu_memory_utilization",
            "actor_rollout_ref.actor.fsdp_config.param_offload"} <= listed
    # the script's 8 GPUs on a machine without one: one process, said (not 8 CPU processes on a few cores)
    assert "trainer.n_gpus_per_node=8 but this node has no GPU: training in one process" in out
    assert (ckpts / "global_step_2" / "actor" / "config.json").is_file()  # verl saves at the end too
    assert list((store / "wandb").rglob("*.wandb"))  # the wandb logger from the script ran (offline)


@pytest.mark.slow
def test_run_gemma_ppo_with_a_critic_samples_once_per_prompt_as_verl(hf_assets, tmp_path):
    """examples/ppo_trainer/run_gemma.sh sets a critic and no rollout.n: verl samples once per prompt. rlcockpit
    used a silent 8 (64 samples per step for a batch of 8)."""
    original = script_overrides(FIXTURES / "run_gemma.sh")
    model = str(hf_assets["models"]["qwen2"])
    new = {"data.train_files": hf_assets["train"], "data.val_files": hf_assets["val"],
           "actor_rollout_ref.model.path": model, "critic.model.path": model, "data.train_batch_size": 4,
           "data.val_batch_size": 8, "data.max_response_length": 8, "actor_rollout_ref.actor.ppo_mini_batch_size": 2,
           "actor_rollout_ref.actor.ppo_micro_batch_size": 2, "critic.ppo_micro_batch_size": 2}
    overrides = [f"{k}={new[k]}" if (k := o.split("=", 1)[0]) in new else o for o in original]
    assert not any(o.startswith(("algorithm.adv_estimator=", "actor_rollout_ref.rollout.n=")) for o in overrides)
    store = tmp_path / "store"
    extra = ["trainer.total_training_steps=2", f"trainer.rlcockpit_dir={store}",
             f"trainer.default_local_dir={tmp_path / 'ckpt'}", "trainer.num_threads=1"]
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.trainer.main_ppo", *overrides, *extra], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    (run,) = rlcockpit.Api(str(store)).runs()
    assert run.config["algorithm"]["adv_estimator"] == "gae" and run.config["actor_rollout_ref"]["rollout"]["n"] == 1
    hist = run.history()
    assert hist["critic/vf_loss"].notna().sum() == 2 and "demo" not in out


@pytest.mark.slow
def test_verl_generated_config_through_config_flag(hf_assets, tmp_path):
    store = tmp_path / "store"
    model = str(hf_assets["models"]["llama"])
    args = ["train", "--config", str(FIXTURES / "_generated_ppo_trainer.yaml"),
            f"data.train_files={hf_assets['train']}", f"data.val_files={hf_assets['val']}",
            f"actor_rollout_ref.model.path={model}", f"critic.model.path={model}",
            "data.train_batch_size=2", "data.max_response_length=8", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
            "actor_rollout_ref.rollout.n=2", "trainer.total_training_steps=2", f"trainer.rlcockpit_dir={store}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}", "trainer.num_threads=1"]
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.cli", *args], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "trainer.device=cuda but torch sees no CUDA device" in out  # verl's default, said once
    assert "Hydra" not in out or "defaults" in out
    (run,) = rlcockpit.Api(str(store)).runs()
    assert run.status == "finished" and run.config["algorithm"]["adv_estimator"] == "gae"  # verl's default
    assert "critic/vf_loss" in run.history().columns


@pytest.mark.slow
def test_gsm8k_default_reward_gives_a_warmed_model_varying_rewards(hf_assets, warm_qwen2, tmp_path):
    from rlcockpit.trainer.config import load_config
    from rlcockpit.trainer.loop import train

    cfg = load_config(overrides=[
        f"data.train_files={hf_assets['train']}", f"data.val_files={hf_assets['val']}",
        f"actor_rollout_ref.model.path={warm_qwen2}", "data.train_batch_size=8", "data.max_response_length=16",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.optim.lr=1e-5", "trainer.total_training_steps=3", "trainer.test_freq=3",
        "trainer.logger=[rlcockpit]", "trainer.num_threads=1", f"trainer.rlcockpit_dir={tmp_path / 'store'}",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}"], log=None)
    assert cfg.reward.name == "auto"  # nothing named: verl's rule for data_source openai/gsm8k
    result = train(cfg, log=lambda *_: None)
    assert result.status == "finished"
    hist = rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()
    score_max, score_min = hist["critic/score/max"].dropna(), hist["critic/score/min"].dropna()
    assert score_max.max() == 1.0  # correct "#### N" answers are rewarded...
    assert (score_max > score_min).any()  # ...and not all of them: the groups carry a learning signal
    assert (hist["actor/pg_clipfrac"].dropna() >= 0).all() and "val-core/openai/gsm8k/acc/mean@1" in hist.columns


def test_verls_entry_point_name_takes_a_verl_script_unchanged(tmp_path):
    """``python3 -m rlcockpit.trainer.main_ppo`` + verl's run_qwen2-7b.sh overrides, as the script has them."""
    overrides = script_overrides(FIXTURES / "run_qwen2-7b.sh")
    proc = subprocess.run([sys.executable, "-m", "rlcockpit.trainer.main_ppo", "--print-config", *overrides],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "adv_estimator: grpo" in proc.stdout and "tensor_model_parallel_size: 2" in proc.stdout
