"""The per-step metric keys verl 0.9.1's PPO trainer logs for a config, from verl itself.

The batch-derived keys come from running verl's own functions in .venv-verl (``compute_data_metrics``,
``compute_timing_metrics`` on the stage timers ``RayPPOTrainer.fit`` opens for that config,
``compute_throughout_metrics``, ``log_seqlen_unbalance`` as ``_balance_batch`` calls it,
``compute_policy_loss_vanilla``); the worker-side keys, which need a Ray cluster and GPUs, are read from the
code (``ray_trainer.py`` fit/_update_actor/_update_critic/apply_kl_penalty, ``workers/engine_workers.py``
``_postprocess_output``, ``workers/utils/losses.py`` ``ppo_loss``/``value_loss``) and listed below with where.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

VERL_PY = Path(__file__).parents[2] / ".venv-verl" / "bin" / "python"

SCRIPT = r"""
import json, sys, torch
from verl import DataProto
from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla
from verl.trainer.ppo.metric_utils import (compute_data_metrics, compute_throughout_metrics,
                                           compute_timing_metrics, compute_variance_proxy_metrics)
from verl.utils.seqlen_balancing import calculate_workload, get_seqlen_balanced_partitions, log_seqlen_unbalance
from verl.workers.config import ActorConfig

flags = json.loads(sys.argv[1])
g = torch.Generator().manual_seed(0)
bs, P, T = 8, 5, 6
resp = (torch.arange(T)[None] < torch.randint(1, T + 1, (bs,), generator=g)[:, None]).long()
prompt = torch.ones(bs, P, dtype=torch.long)
rand = lambda: torch.randn(bs, T, generator=g) * resp
fields = {"prompts": prompt, "responses": resp, "attention_mask": torch.cat([prompt, resp], 1),
          "response_mask": resp, "token_level_scores": rand(), "token_level_rewards": rand(),
          "advantages": rand(), "returns": rand(), "old_log_probs": rand(), "ref_log_prob": rand()}
if flags["use_critic"]:
    fields["values"] = rand()
batch = DataProto.from_dict(fields)
batch.meta_info["global_token_num"] = fields["attention_mask"].sum(-1).tolist()
# the stage timers RayPPOTrainer.fit opens on a step without checkpoint or validation
stages = ["start_profile", "gen", "reward", "old_log_prob", "adv", "update_actor", "update_weights", "step",
          "stop_profile"]
if flags["use_kl_loss"] or flags["use_kl_in_reward"]:  # need_reference_policy -> marked_timer(str(Role.RefPolicy))
    stages.append("ref")
if flags["use_critic"]:
    stages += ["values", "update_critic"]
timing = {s: 0.1 for s in stages}
keys = set(compute_data_metrics(batch, use_critic=flags["use_critic"]))
keys |= set(compute_timing_metrics(batch, timing))
keys |= set(compute_throughout_metrics(batch, timing, n_gpus=1))
keys |= set(compute_variance_proxy_metrics(batch, gradient_norm=1.0))  # {} without sum_pi_squared
seqlens = fields["attention_mask"].sum(-1)
parts = get_seqlen_balanced_partitions(calculate_workload(seqlens), k_partitions=1, equal_size=True)
keys |= set(log_seqlen_unbalance(seqlen_list=seqlens.tolist(), partitions=parts, prefix="global_seqlen"))
cfg = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1)
_, pg_metrics = compute_policy_loss_vanilla(fields["old_log_probs"], fields["old_log_probs"], fields["advantages"],
                                            resp, loss_agg_mode="token-mean", config=cfg)
keys |= set(pg_metrics)
print(json.dumps(sorted(keys)))
"""

# ray_trainer.fit: always
FIT = {"training/global_step", "training/epoch"}
# ray_trainer.fit, the old-log-prob pass (not in bypass mode): agg_loss of its entropy, the pass's MFU
OLD_LOG_PROB = {"actor/entropy", "perf/mfu/actor_infer"}
# engine_workers._postprocess_output of one update, under the role's prefix (rename_dict) + perf/mfu/<role>;
# the accelerator peaks are logged on accelerators only here (verl reads torch.cuda, which fails on CPU)
WORKER = {"loss", "grad_norm", "lr", "perf/cpu_memory_used_gb"}
WORKER_ACCELERATOR = {"perf/max_memory_allocated_gb", "perf/max_memory_reserved_gb"}
# losses.ppo_loss: pg_loss always (the pg metrics come from the policy loss), the others conditional
PPO_LOSS = {"actor/pg_loss"}
ENTROPY_LOSS = {"actor/entropy_loss"}  # calculate_entropy or entropy_coeff != 0
KL_LOSS = {"actor/kl_loss", "actor/kl_coef"}  # actor.use_kl_loss
VALUE_LOSS = {"critic/vf_loss", "critic/vf_clipfrac", "critic/vpred_mean"}
KL_IN_REWARD = {"actor/reward_kl_penalty", "actor/reward_kl_penalty_coeff"}  # apply_kl_penalty


def verl_step_keys(*, use_critic: bool, use_kl_loss: bool = False, use_kl_in_reward: bool = False,
                   entropy_loss: bool = False, accelerator: bool = False) -> set[str]:
    """Every key of one training step's ``logger.log`` in verl 0.9.1 for the config (no checkpoint or
    validation that step, a single-turn rollout, no rollout correction)."""
    flags = {"use_critic": use_critic, "use_kl_loss": use_kl_loss, "use_kl_in_reward": use_kl_in_reward}
    proc = subprocess.run([str(VERL_PY), "-c", SCRIPT, json.dumps(flags)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    keys = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    worker = WORKER | (WORKER_ACCELERATOR if accelerator else set())
    keys |= FIT | OLD_LOG_PROB | PPO_LOSS | {f"actor/{k}" for k in worker} | {"perf/mfu/actor"}
    if entropy_loss:
        keys |= ENTROPY_LOSS
    if use_kl_loss:
        keys |= KL_LOSS
    if use_kl_in_reward:
        keys |= KL_IN_REWARD
    if use_critic:
        keys |= VALUE_LOSS | {f"critic/{k}" for k in worker} | {"perf/mfu/critic"}
    return keys
