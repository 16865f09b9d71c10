"""Any local HF causal LM trains (Qwen2, Llama, GPT-2 with a real BPE tokenizer); checkpoints are plain HF
folders (LoRA: peft adapters); ``export-model`` gives a folder ``from_pretrained`` loads and generates with;
two runs with the same project/name never share or rotate each other's checkpoints."""

from __future__ import annotations

import json

import pytest
import torch

import rlcockpit
from rlcockpit.trainer.checkpoints import checkpoint as ckpt
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.loop import train


def _cfg(hf_assets, tmp_path, model: str, *extra: str):
    return load_config(overrides=[
        f"data.train_files={hf_assets['train']}", f"data.val_files={hf_assets['val']}",
        f"actor_rollout_ref.model.path={model}", "data.train_batch_size=2", "data.max_response_length=6",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2", "actor_rollout_ref.rollout.n=2", "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.optim.lr=1e-3", "trainer.total_training_steps=2", "trainer.test_freq=0",
        "trainer.val_before_train=false", "trainer.save_freq=2", "trainer.logger=[rlcockpit]", "trainer.num_threads=1",
        "health.enable=false", f"trainer.rlcockpit_dir={tmp_path / 'store'}",
        f"trainer.default_local_dir={tmp_path / 'ckpt'}", *extra], log=None)


def _generate(folder, tokenizer_folder=None) -> str:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(folder))
    tok = AutoTokenizer.from_pretrained(str(tokenizer_folder or folder))
    ids = tok("Tom has 3 apples", return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=4, do_sample=False, pad_token_id=tok.pad_token_id)
    assert out.shape[1] > ids["input_ids"].shape[1]
    return tok.decode(out[0])


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["qwen2", "llama", "gpt2"])
def test_architecture_trains_and_saves_a_loadable_hf_model(hf_assets, tmp_path, arch):
    cfg = _cfg(hf_assets, tmp_path, str(hf_assets["models"][arch]), "actor_rollout_ref.actor.use_kl_loss=true")
    result = train(cfg, log=lambda *_: None)
    assert result.status == "finished" and result.steps == 2
    actor = tmp_path / "ckpt" / "global_step_2" / "actor"
    assert (actor / "config.json").is_file() and (actor / "tokenizer.json").is_file()
    assert (tmp_path / "ckpt" / ckpt.LATEST).read_text() == "2"
    _generate(actor)
    from transformers import AutoModelForCausalLM

    before = AutoModelForCausalLM.from_pretrained(str(hf_assets["models"][arch]))
    after = AutoModelForCausalLM.from_pretrained(str(actor))
    changed = [n for (n, a), (_, b) in zip(before.named_parameters(), after.named_parameters()) if not torch.equal(a, b)]
    assert changed, "the saved actor is the untrained model"


@pytest.mark.slow
@pytest.mark.parametrize("arch,targets", [("llama", "[q_proj,v_proj]"), ("gpt2", "all-linear")])
def test_lora_checkpoint_is_a_peft_adapter_and_exports(hf_assets, tmp_path, arch, targets, capsys):
    from rlcockpit.cli import main

    cfg = _cfg(hf_assets, tmp_path, str(hf_assets["models"][arch]), "actor_rollout_ref.model.lora_rank=4",
               "actor_rollout_ref.model.lora_alpha=8", f"actor_rollout_ref.model.target_modules={targets}")
    assert train(cfg, log=lambda *_: None).status == "finished"
    step = tmp_path / "ckpt" / "global_step_2"
    adapter = json.loads((step / "actor" / "adapter_config.json").read_text())
    assert adapter["r"] == 4 and adapter["lora_alpha"] == 8
    assert adapter["base_model_name_or_path"] == str(hf_assets["models"][arch])
    # merged: a plain model folder, no peft needed to load it
    assert main(["export-model", str(step), str(tmp_path / "merged"), "--merge-lora"]) == 0
    assert not (tmp_path / "merged" / "adapter_config.json").exists()
    _generate(tmp_path / "merged")
    # not merged: the adapter folder, which from_pretrained resolves to base + adapter
    assert main(["export-model", str(tmp_path / "ckpt"), str(tmp_path / "adapter")]) == 0  # the latest checkpoint
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    _generate(tmp_path / "adapter")
    assert "from_pretrained" in capsys.readouterr().out
    assert main(["export-model", str(step), str(tmp_path / "merged")]) == 2  # refuses a non-empty folder


def test_two_runs_with_the_same_name_keep_their_own_checkpoints(tmp_path):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.AdamW(model.parameters())
    root = tmp_path / "checkpoints" / "proj" / "name"
    for step in (1, 2, 3):
        ckpt.save_checkpoint(root, step, models={"actor": model}, optimizers={"actor": opt}, schedulers={},
                             trainer_state={"run_id": "aaaa"}, keep=2)
    assert [ckpt.checkpoint_step(p) for p in ckpt.list_checkpoints(root)] == [2, 3]
    # a fresh second run with the same project/name is given its own folder ...
    other = ckpt.claim_dir(root, "bbbb", resuming=False)
    assert other != root and other.name == "name-bbbb"
    # ... and even in a shared folder, rotation only removes the saving run's own checkpoints
    for step in (10, 11, 12):
        ckpt.save_checkpoint(root, step, models={"actor": model}, optimizers={"actor": opt}, schedulers={},
                             trainer_state={"run_id": "bbbb"}, keep=1)
    assert [ckpt.checkpoint_step(p) for p in ckpt.list_checkpoints(root)] == [2, 3, 12]
    assert ckpt.claim_dir(root, "aaaa", resuming=True) == root  # resuming continues in place
    assert ckpt.find_latest(root).name == "global_step_12"  # verl's latest_checkpointed_iteration.txt
    (root / ckpt.LATEST).write_text("3")
    assert ckpt.find_latest(root).name == "global_step_3"


@pytest.mark.slow
def test_second_fresh_run_does_not_touch_the_first_runs_checkpoints(tiny_cfg, tmp_path):
    first = train(tiny_cfg("trainer.save_freq=1", "trainer.max_actor_ckpt_to_keep=1",
                           "trainer.project_name=p", "trainer.experiment_name=same"))
    first_ckpts = sorted(p.name for p in (tmp_path / "ckpt").glob("global_step_*"))
    second = train(tiny_cfg("trainer.save_freq=1", "trainer.max_actor_ckpt_to_keep=1",
                            "trainer.project_name=p", "trainer.experiment_name=same"))
    assert first.run_id != second.run_id
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("global_step_*")) == first_ckpts
    assert second.checkpoint_dir.endswith(f"ckpt-{second.run_id}")
    stored = rlcockpit.Api(str(tmp_path / "store")).run(second.run_id).config
    assert stored["trainer"]["default_local_dir"] == second.checkpoint_dir  # the stored config says where
