"""The memory estimate's terms follow what the trainer will actually run: its config decides the phases."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rlcockpit.preflight import load_cfg
from rlcockpit.preflight.memory import LORA_MODULES, ModelShape, TrainShape, estimate_memory, lora_params
from rlcockpit.preflight.runner import train_shape_for

SMALL = {"model_type": "qwen2", "vocab_size": 1000, "hidden_size": 128, "intermediate_size": 320,
         "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2, "tie_word_embeddings": True}


@pytest.mark.parametrize("targets", ["all-linear", ["q_proj", "v_proj"], ["gate_proj", "down_proj", "o_proj"]])
def test_lora_param_count_matches_peft(targets):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    model = get_peft_model(Qwen2ForCausalLM(Qwen2Config(**SMALL)),
                           LoraConfig(r=4, target_modules=targets, task_type="CAUSAL_LM"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    names = LORA_MODULES if targets == "all-linear" else tuple(targets)
    assert lora_params(ModelShape.from_hf_config(SMALL), 4, names) == trainable


def test_config_decides_the_no_grad_passes():
    single = train_shape_for(load_cfg(overrides=["data.train_batch_size=8", "actor.ppo_mini_batch_size=8"]), "cpu")
    assert not single.old_log_prob_pass and not single.needs_ref and single.weight_dtype == "fp32"
    two_epochs = train_shape_for(load_cfg(overrides=["actor.ppo_epochs=2"]), "cpu")
    assert two_epochs.old_log_prob_pass
    kl = train_shape_for(load_cfg(overrides=["actor.use_kl_loss=true", "actor.model.dtype=bf16"]), "cuda")
    assert kl.needs_ref and kl.ref_dtype == "bf16" and kl.weight_dtype == "fp32"
    lora = train_shape_for(load_cfg(overrides=["actor.use_kl_loss=true", "actor.model.lora_rank=8"]), "cpu")
    assert lora.lora_targets == LORA_MODULES  # all-linear, the default
    m = ModelShape.from_hf_config(SMALL)
    assert "log_prob_passes" not in estimate_memory(m, single).phases
    assert "log_prob_passes" in estimate_memory(m, two_epochs).phases
    assert estimate_memory(m, lora).components["reference"] == 0


def test_whole_batch_pass_scales_with_the_batch_not_the_micro_batch():
    """A model scored through its logits (not one of the chunked output layer's families) holds the whole
    batch's (rows, tokens, vocab) logits in the no-grad pass."""
    m = ModelShape.from_hf_config({**SMALL, "vocab_size": 151936})
    t = TrainShape(train_batch_size=8, rollout_n=8, micro_batch_size=8, prompt_length=64, response_length=256,
                   needs_ref=True, device="cpu", compute_dtype="fp32", fused_head=False)
    base = estimate_memory(m, t)
    smaller_micro = estimate_memory(m, dataclasses.replace(t, micro_batch_size=2))
    bigger_batch = estimate_memory(m, dataclasses.replace(t, train_batch_size=16))
    assert smaller_micro.components["log_prob_pass"] == base.components["log_prob_pass"]
    assert bigger_batch.components["log_prob_pass"] == 2 * base.components["log_prob_pass"]
    assert base.peak_phase == "log_prob_passes"  # 64 rows x 256 tokens x 152k vocabulary at once
    # the chunked output layer (update/fused_logprobs.py) scores hidden states: no whole-batch logits
    fused = estimate_memory(m, dataclasses.replace(t, fused_head=True))
    assert fused.components["log_prob_pass"] < base.components["log_prob_pass"] / 10


def test_optimizer_step_temporaries_per_device():
    m = ModelShape.from_hf_config({**SMALL, "vocab_size": 151936})
    t = TrainShape(device="cpu", compute_dtype="fp32")
    cpu = estimate_memory(m, t).components["adamw_temporaries"]
    assert cpu == 0  # the trainer's CPU optimizer is torch's fused AdamW: no temporaries
    from types import SimpleNamespace

    from rlcockpit.trainer.state import make_optimizer

    opt = make_optimizer(torch.nn.Linear(4, 4).parameters(), SimpleNamespace(lr=1e-3, weight_decay=0.0,
                                                                             betas=[0.9, 0.999]))
    assert opt.defaults["fused"] is True
    cuda = estimate_memory(m, dataclasses.replace(t, device="cuda")).components["adamw_temporaries"]
    assert cuda == 4 * int(m.n_params or 0)  # foreach: one fp32 copy of every parameter at once


def test_data_parallel_ranks_share_host_ram_but_not_a_gpu():
    m = ModelShape.from_hf_config(SMALL)
    one = train_shape_for(load_cfg(overrides=["data.train_batch_size=8", "actor.ppo_mini_batch_size=8"]), "cpu")
    two = dataclasses.replace(one, world_size=2)
    e1, e2 = estimate_memory(m, one), estimate_memory(m, two)
    assert e2.peak_bytes > 1.5 * e1.peak_bytes and any("share host RAM" in n for n in e2.notes)
    g1 = estimate_memory(m, dataclasses.replace(one, device="cuda"))
    g2 = estimate_memory(m, dataclasses.replace(two, device="cuda"))
    assert g2.components["kv_cache"] == g1.components["kv_cache"] // 2  # each rank generates half the prompts
    assert g2.peak_bytes <= g1.peak_bytes
