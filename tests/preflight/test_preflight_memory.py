"""The memory estimator: exact parameter counts, sensible responses to each knob, and (slow) measured error."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlcockpit.preflight.memory import ModelShape, TrainShape, alternatives, estimate_memory, fits

QWEN2_7B = {"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
            "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064, "tie_word_embeddings": False}


@pytest.mark.parametrize("kw", [
    dict(vocab_size=103, hidden_size=256, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=4,
         num_key_value_heads=4, tie_word_embeddings=True),
    dict(vocab_size=1000, hidden_size=128, intermediate_size=320, num_hidden_layers=3, num_attention_heads=8,
         num_key_value_heads=2, tie_word_embeddings=False),
])
def test_param_count_matches_transformers(kw):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(**kw)
    model = Qwen2ForCausalLM(cfg)
    assert ModelShape.from_hf_config(cfg.to_dict()).n_params == sum(p.numel() for p in model.parameters())


def test_qwen2_7b_from_config_dict():
    m = ModelShape.from_hf_config(QWEN2_7B)
    assert 7.6e9 < m.n_params < 7.63e9  # Qwen2-7B has 7.62B parameters
    est = estimate_memory(m, TrainShape(micro_batch_size=8, prompt_length=1024, response_length=1024))
    assert est.components["actor_weights"] == m.n_params * 4  # the trainer keeps fp32 weights (autocast)
    assert est.components["optimizer_states"] == m.n_params * 8  # AdamW fp32 states
    assert not fits(est.peak_bytes, 80 * 2**30)


def test_each_knob_moves_the_estimate_the_right_way():
    m = ModelShape.from_hf_config(QWEN2_7B)
    base = TrainShape(micro_batch_size=8, prompt_length=512, response_length=512)
    e0 = estimate_memory(m, base)
    ck = estimate_memory(m, dataclasses.replace(base, grad_checkpointing=True))
    plain = estimate_memory(m, dataclasses.replace(base, share_prefix=False))
    assert ck.components["activations"] < plain.components["activations"] / 3
    assert e0.components["activations"] < 0.7 * plain.components["activations"]  # the group's prompt runs once
    lora = estimate_memory(m, dataclasses.replace(base, lora_rank=16))
    assert lora.trainable_params < m.n_params / 100 and lora.components["optimizer_states"] < 0.01 * e0.components[
        "optimizer_states"]
    ref = estimate_memory(m, dataclasses.replace(base, needs_ref=True, ref_dtype="bf16"))
    assert ref.components["reference"] == m.n_params * 2  # the frozen copy in bf16 on a GPU
    assert ref.peak_bytes - e0.peak_bytes >= m.n_params * 2  # + the no-grad reference pass
    ref_lora = estimate_memory(m, dataclasses.replace(base, needs_ref=True, lora_rank=16))
    assert ref_lora.components["reference"] == 0  # adapters off = reference
    critic = estimate_memory(m, dataclasses.replace(base, needs_critic=True))
    assert critic.components["critic_weights"] > 0 and "critic_update" in critic.phases
    small = estimate_memory(m, dataclasses.replace(base, micro_batch_size=2, share_prefix=False))
    assert small.components["activations"] == plain.components["activations"] // 4
    more_rollout = estimate_memory(m, dataclasses.replace(base, rollout_n=16))
    assert more_rollout.components["kv_cache"] > 1.9 * e0.components["kv_cache"]


def test_alternatives_each_have_an_estimate_and_overrides():
    m = ModelShape.from_hf_config(QWEN2_7B)
    base = TrainShape(micro_batch_size=16, prompt_length=1024, response_length=1024)
    alts = alternatives(m, base)
    names = [a[0] for a in alts]
    assert any(n.startswith("micro-batch 8") for n in names) and "gradient checkpointing" in names
    assert any(n.startswith("LoRA rank 16") for n in names) and any("offload" in n for n in names)
    base_peak = estimate_memory(m, base).peak_bytes
    assert all(a[2].peak_bytes < base_peak for a in alts) and all(a[1] for a in alts)


@pytest.mark.slow
def test_measured_error_within_bound(tmp_path):
    """Two real RL steps of a small Qwen2 (32k vocabulary) on CPU through the trainer's own components: the
    estimate is within -10%/+15% of the peak RSS growth (measured -5.8% and -0.0% in two runs with the trainer's
    16 MiB mmap threshold; issue 18's bound is no underestimate worse than -10%). The model the child saved is
    gone afterwards: each run once left ~47 MB in /tmp, and the piles filled a CI disk. The bench runs as its own
    script, not in this process: Linux keeps a process's peak RSS across exec (``ru_maxrss``), so a scenario child
    forked from a pytest process grown to 1.4 GB late in the suite reports that peak (in-process it measured
    -65.8% in a fresh-clone make test)."""
    bench = Path(__file__).resolve().parents[2] / "bench" / "memory_estimate.py"
    out = subprocess.run([sys.executable, str(bench), "--json", "--only", "qwen2 32k fp32"], capture_output=True,
                         text=True, timeout=1200, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    (row,) = json.loads(out.stdout)["scenarios"]
    assert -10 <= row["error_pct"] <= 15, row
    assert list(tmp_path.iterdir()) == []
