"""Which names the trainer accepts besides its schema: aliases, and verl's keys that have no effect here.

Three tables, all data:

* :data:`PREFIX_ALIASES` / :data:`KEY_ALIASES` (their home is :mod:`rlcockpit.metrics.keys`, the one table of
  config-key spellings): rlcockpit's older short keys (``actor.optim.lr``), TRL /
  seed-article names (``ppo_config.cliprange``, ``kl_controller.kl_coef_range``) and verl's renamed keys
  (``optim.warmup_style``) mapped to the canonical verl path. Each one used is reported once per run.
* :data:`NO_EFFECT`: verl keys that only steer verl's distributed engines (FSDP, vLLM servers, Ray,
  profilers...). They are accepted, stored with the run and listed in one "no effect here: why" table;
  never an error, never silently dropped. A key that is also in the schema is a schema key: moving a key
  from here into a dataclass is all it takes to make it do something.
* :data:`UNSUPPORTED`: switches of verl features this trainer does not have (multi-turn tool rollouts,
  custom dataset classes). Their default is accepted; turning them on is an error, since training without
  the feature would silently be a different experiment.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from rlcockpit.metrics.keys import KEY_ALIASES, PREFIX_ALIASES

# A scalar given for a section means one field of it (``actor.policy_loss=gspo``: older verl and rlcockpit).
SHORTHAND: dict[str, str] = {"actor_rollout_ref.actor.policy_loss": "loss_mode"}

# Flags people type from the articles; the value is the override key (``use_wandb`` is special-cased).
SEED_FLAGS: tuple[str, ...] = ("use_wandb", "project", "group", "entity", "exp_name", "learning_rate", "kl_coef",
                               "target_kl", "rollout_batch_size", "save_policy_model")


@dataclass(frozen=True)
class NoEffect:
    why: str
    patterns: tuple[str, ...]


_ROLLOUT_SERVER = tuple(f"actor_rollout_ref.rollout.{k}" for k in (
    "mode", "dtype", "ignore_eos", "cudagraph_capture_sizes", "data_parallel_size", "expert_parallel_size",
    "pipeline_model_parallel_size", "max_num_batched_tokens", "max_model_len", "max_num_seqs",
    "enable_chunked_prefill", "enable_prefix_caching", "logprobs_mode", "scheduling_policy", "load_format",
    "layered_summon", "disable_log_stats", "engine_kwargs.*", "multi_stage_wake_up", "skip_tokenizer_init",
    "checkpoint_engine.*", "router_config_path", "enable_rollout_routing_replay",
    "moe_load_balance_metrics_interval", "prometheus.*", "quantization", "quantization_config_file", "mtp", "mtp.*",
    "qat", "qat.*", "disaggregation.*", "full_determinism", "seed", "over_sample_rate", "trace.*", "agent.*",
    "swap_space", "update_weights_bucket_megabytes", "limit_images", "val_kwargs.n_gpus"))

NO_EFFECT: tuple[NoEffect, ...] = (
    NoEffect("distributed execution (FSDP/Megatron sharding and offload, sequence/tensor parallelism, dynamic "
             "batching, Ray): rlcockpit trains data-parallel on one node (trainer.n_gpus_per_node)", (
                 "actor_rollout_ref.actor.fsdp_config.*", "actor_rollout_ref.ref.fsdp_config.*", "critic.fsdp_config.*",
                 "reward_model.model.fsdp_config.*", "reward_model.fsdp_config.*",
                 "critic.fsdp.*", "*.megatron.*", "*.strategy", "*.ulysses_sequence_parallel_size", "*.use_dynamic_bsz",
                 "*.ppo_max_token_len_per_gpu", "*.forward_max_token_len_per_gpu", "*.rollout_n",
                 "trainer.balance_batch", "trainer.ray_wait_register_center_timeout", "trainer.use_v1",
                 "trainer.v1.*", "trainer.use_legacy_worker_impl", "actor_rollout_ref.hybrid_engine",
                 "actor_rollout_ref.nccl_timeout", "critic.nccl_timeout", "*.veomni.*", "*.torchtitan.*", "actor_rollout_ref.rollout.nnodes",
                 "actor_rollout_ref.rollout.n_gpus_per_node", "ray_kwargs.*", "ray_init.*", "transfer_queue.*")),
    NoEffect("GPU kernel and memory optimisations (remove-padding, Liger, fused kernels, torch.compile, chunked "
             "entropy, activation offload, QAT, MTP): the math is the same without them", (
                 "critic.model.use_remove_padding", "reward_model.model.use_remove_padding", "*.use_rmpad",
                 "actor_rollout_ref.model.use_liger", "*.use_fused_kernels",
                 "actor_rollout_ref.model.fused_kernel_options.*", "actor_rollout_ref.model.enable_activation_offload",
                 "actor_rollout_ref.model.tiled_mlp.*", "*.use_torch_compile", "*.entropy_from_logits_with_chunking",
                 "*.entropy_from_logits_chunk_size", "*.entropy_checkpointing", "*.pad_to_length", "*.use_shm",
                 "actor_rollout_ref.actor.qat.*", "actor_rollout_ref.model.mtp.*", "actor_rollout_ref.model.hf_config_path",
                 "actor_rollout_ref.model.lora.*", "model.use_liger",
                 "actor_rollout_ref.model.use_efficient_resharding")),
    NoEffect("micro-batching of verl's log-prob passes: rlcockpit scores a step's batch in one prompt-sharing "
             "forward (actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu splits the update)", (
                 "*.log_prob_micro_batch_size", "*.log_prob_micro_batch_size_per_gpu", "*.log_prob_use_dynamic_bsz",
                 "*.log_prob_max_token_len_per_gpu")),
    NoEffect("settings of verl's vLLM/SGLang rollout servers: the built-in engine does not read them",
             _ROLLOUT_SERVER),
    NoEffect("derived from data.max_prompt_length / data.max_response_length, which the rollout reads", (
        "actor_rollout_ref.rollout.prompt_length", "actor_rollout_ref.rollout.response_length")),
    NoEffect("the reference policy is a frozen copy of the actor (or the adapter-free LoRA base) on the same "
             "device", ("actor_rollout_ref.ref._target_", "actor_rollout_ref.ref.optim.*")),  # verl 0.9.1's other ref keys:
    # listed by concern (a wildcard here took any key, sync_ref_model included, which verl refuses)
    NoEffect("the critic shares the actor's batch sizes and loads critic.model.path like the actor", (
        "critic.model.*", "critic.enable", "critic.ppo_mini_batch_size", "critic.ppo_micro_batch_size",
        "critic.ppo_micro_batch_size_per_gpu", "critic.forward_micro_batch_size", "critic.forward_micro_batch_size_per_gpu",
        "critic.loss_scale_factor", "critic.shuffle", "critic.data_loader_seed")),
    NoEffect("verl's profilers (nsys, torch, NPU): rlcockpit logs timing_s/* per step", (
        "*.profiler.*", "global_profiler.*")),
    NoEffect("checkpoint contents and HDFS upload: rlcockpit saves the model in HF format, optimizer and trainer "
             "state locally; trainer.max_actor_ckpt_to_keep rotates whole global_step_N folders (actor and critic)", (
                 "*.checkpoint.*", "trainer.default_hdfs_dir", "trainer.del_local_ckpt_after_load",
                 "trainer.remove_previous_ckpt_in_save",
                 "trainer.checkpoint_callback_class", "trainer.esi_redundant_time", "trainer.max_critic_ckpt_to_keep")),
    NoEffect("JSONL dumps of rollouts: rlcockpit stores samples with the run (rlcockpit show, rlcockpit ui)", (
        "trainer.rollout_data_dir", "trainer.validation_data_dir")),
    NoEffect("dataloader workers, multimodal inputs and verl's dataset output format: prompts are tokenized once "
             "in-process, text only", (
                 "data.dataloader_num_workers", "data.prefetch_factor", "data.filter_overlong_prompts_workers",
                 "data.video_key", "data.audio_key", "data.image_patch_size",
                 "data.return_multi_modal_inputs", "data.mm_processor_kwargs", "data.mm_processor_kwargs.*",
                 "data.return_raw_input_ids", "data.return_raw_chat", "data.return_full_prompt", "data.validation_shuffle",
                 "data.trust_remote_code", "data.tool_config_path", "data.function_tool_path", "data.custom_cls.*",
                 "data.sampler.*", "data.datagen.*", "actor_rollout_ref.actor.shuffle",
                 "actor_rollout_ref.actor.data_loader_seed", "actor_rollout_ref.actor.freeze_vision_tower")),
    NoEffect("verl's reward workers and managers: rlcockpit scores each response in-process (verl's naive "
             "manager) with custom_reward_function.* or reward.name", (
                 "reward_model.num_workers", "reward_model.enable_resource_pool",
                 "reward_model.n_gpus_per_node", "reward_model.nnodes", "reward_model.reward_loop_*",
                 "reward_model.model.external_lib", "reward_model.model.trust_remote_code", "reward_model.model.input_tokenizer",
                 "reward_model.rollout.*", "reward_model.launch_reward_fn_async", "reward_model.sandbox_fusion.*",
                 "reward_model.micro_batch_size*", "reward_model.max_length", "reward_model.strategy",
                 "reward_model.use_dynamic_bsz", "reward_model.forward_max_token_len_per_gpu", "reward.num_workers",
                 "reward.reward_manager.*", "reward.reward_model.*", "reward.sandbox_fusion.*", "sandbox_fusion.*")),
    NoEffect("keyword arguments of verl's reward manager class (not of the reward function; DAPO's "
             "overlong_buffer_cfg and max_resp_len are read, as reward.overlong_buffer.*)", (
                 "reward_model.reward_kwargs.*", "reward.reward_kwargs.*")),
    NoEffect("optimizer implementation details: rlcockpit uses torch.optim.AdamW and derives the step count from "
             "trainer.total_training_steps", (
                 "*.optim.optimizer_impl", "*.optim.override_optimizer_config", "*.optim.zero_indexed_step",
                 "*.optim.total_training_steps", "*.optim.weight_decay_incl_bias")),
    NoEffect("Megatron/TorchTitan optimizer and scheduler settings (decay styles, Muon, precision-aware and "
             "distributed optimizers): rlcockpit's optimizer is torch.optim.AdamW with optim.lr_scheduler_type", (
                 "*.optim.lr_warmup_init", "*.optim.lr_decay_steps", "*.optim.lr_decay_style", "*.optim.min_lr",
                 "*.optim.weight_decay_incr_style", "*.optim.lr_wsd_*", "*.optim.use_checkpoint_opt_param_scheduler",
                 "*.optim.use_precision_aware_optimizer", "*.optim.main_grads_dtype", "*.optim.exp_avg_dtype",
                 "*.optim.exp_avg_sq_dtype", "*.optim.use_layer_wise_distributed_optimizer", "*.optim.muon_*",
                 "*.optim.name", "*.optim.eps", "*.optim.decay_type", "*.optim.min_lr_factor", "*.optim.lr_min",
                 "*.optim.lr_start", "*.optim.lr_decay_ratio")),
    NoEffect("MoE routing replay (R2/R3: the trainer replays the rollout's expert choices): rlcockpit's models are "
             "dense here; on an MoE model a mode other than disabled changes the log-probs (a warning is printed)",
             ("*.router_replay.*",)),
    NoEffect("verl's HF model loading details: rlcockpit loads in fp32 and computes in "
             "actor_rollout_ref.model.dtype (verl's FSDP worker: fsdp_config.model_dtype + bf16 mixed precision)", (
                 "actor_rollout_ref.model.torch_dtype", "critic.model.torch_dtype",
                 "actor_rollout_ref.model.attn_implementation", "actor_rollout_ref.model.local_path",
                 "actor_rollout_ref.model.local_hf_config_path", "actor_rollout_ref.model.local_tokenizer_path",
                 "actor_rollout_ref.model.model_type", "actor_rollout_ref.model.load_tokenizer",
                 "actor_rollout_ref.model.target_parameters", "actor_rollout_ref.model.architectures",
                 "actor_rollout_ref.model.use_fused_kernels", "critic.model.attn_implementation")),
    NoEffect("verl algorithm variants not implemented in rlcockpit's trainer yet (docs/trainer.md lists why)", (
        "actor_rollout_ref.actor.use_prefix_grouper", "actor_rollout_ref.actor.tis_imp_ratio_cap", "algorithm.use_pf_ppo", "algorithm.pf_ppo.*",
        "algorithm.filter_groups.max_inflight_gen_batches")),
    NoEffect("verl features this trainer does not have: knowledge distillation, multi-turn/tool rollouts, the "
             "rollout debug cache", ("distillation.*", "actor_rollout_ref.rollout.multi_turn.*", "skip.*")),
    NoEffect("TRL's reward clipping: rlcockpit (like verl) does not clip sequence scores",
             ("ppo_config.cliprange_reward",)),
    NoEffect("the articles' FSDP offload flags (verl: actor_rollout_ref.actor.fsdp_config.param_offload): one "
             "process, nothing to offload", ("actor_rollout_ref.actor.fsdp_config.cpu_offload",
                                             "actor_rollout_ref.actor.fsdp_config.offload_params")),
)

# key -> (values that mean "off", why turning it on is refused)
UNSUPPORTED: dict[str, tuple[tuple[Any, ...], str]] = {
    "data.custom_cls.path": ((None, ""), "custom dataset classes are not loaded: give verl-layout parquet/JSONL files"),
    "actor_rollout_ref.rollout.multi_turn.enable": ((False, None), "multi-turn/tool rollouts are not supported"),
    "actor_rollout_ref.rollout.agent.default_agent_loop": (("single_turn_agent", None, ""), "multi-turn/tool "
                                                           "agent loops are not supported: each prompt gets one "
                                                           "response, as verl's single_turn_agent"),
    "distillation.enabled": ((False, None), "knowledge distillation is not supported"),
    "algorithm.use_pf_ppo": ((False, None), "PF-PPO sample reweighting is not implemented"),
    "actor_rollout_ref.rollout.use_fire_sampling": ((False, None), "FIRE sampling (a high temperature for the "
                                                    "first token) is not implemented"),
    # keys of verl's first rollout-correction release (examples/rollout_correction before verl 0.9)
    "algorithm.rollout_correction.rollout_rs_threshold_lower": ((None,), "give the bounds in "
                                                                "algorithm.rollout_correction.rollout_rs_threshold "
                                                                "as 'lower_upper', as verl 0.9 does"),
    "algorithm.rollout_correction.rollout_token_veto_threshold": ((None,), "the per-token veto is gone in verl "
                                                                  "0.9; use algorithm.rollout_correction.rollout_rs"),
}

# Accepted without effect, but a value other than these changes the math in verl: a warning is printed.
MATH_WARNINGS: dict[str, tuple[tuple[Any, ...], str]] = {
    "actor_rollout_ref.actor.router_replay.mode": (("disabled", None), "MoE routing replay is not implemented: "
                                                   "experts are routed afresh in the update"),
    "actor_rollout_ref.actor.megatron.router_replay.mode": (("disabled", None), "MoE routing replay is not "
                                                            "implemented: experts are routed afresh in the update"),
    "actor_rollout_ref.actor.tis_imp_ratio_cap": ((-1, None), "truncated IS in the actor loss is not read: use "
                                                  "algorithm.rollout_correction.rollout_is=token"),
    "actor_rollout_ref.model.torch_dtype": ((None, "float32", "fp32", "torch.float32"), "weights are kept in fp32; "
                                            "set actor_rollout_ref.model.dtype=bf16 for bf16 compute"),
}

# verl's older YAML files write null for "unset" where the key now has a number: null means verl's default.
NULL_IS_DEFAULT: tuple[str, ...] = ("actor_rollout_ref.actor.optim.min_lr_ratio", "critic.optim.min_lr_ratio")

# Hydra plumbing inside verl's YAML files: dropped silently (they name classes, not settings).
IGNORED_LEAVES = ("_target_",)


@lru_cache(maxsize=1)
def _compiled() -> list[tuple[re.Pattern[str], str, bool]]:
    return [(re.compile(fnmatch.translate(p)), entry.why, "*" in p) for entry in NO_EFFECT for p in entry.patterns]


@lru_cache(maxsize=1)
def verl_keys() -> frozenset[str]:
    """Every key path of verl 0.9.1's generated trainer configs (``verl_keys.txt``, written by
    ``scripts/gen_verl_keys.py``): what verl's Hydra compose takes without a ``+``."""
    text = resources.files("rlcockpit.trainer.config").joinpath("verl_keys.txt").read_text()
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


@lru_cache(maxsize=4096)
def no_effect_reason(key: str) -> str | None:
    """Why ``key`` does nothing here, or None when it is not a known verl engine key."""
    for pattern, why, _wild in _compiled():
        if pattern.match(key):
            return why
    return None


def only_a_wildcard_knows(key: str) -> bool:
    """A no-effect key that verl 0.9.1's config does not have and no entry names in full: an older or newer verl's
    engine key (``megatron.grad_offload``), which stays accepted, or a typo (``fsdp_config.param_ofload``), which
    verl would refuse. Either way the user is told."""
    named = any(not wild and pattern.match(key) for pattern, _why, wild in _compiled())
    return not named and key not in verl_keys() and no_effect_reason(key) is not None


def explicit_no_effect_keys() -> list[str]:
    """The no-effect keys written out in full (no wildcard): candidates for "did you mean"."""
    return [p for entry in NO_EFFECT for p in entry.patterns if "*" not in p]


def canonical_key(key: str) -> tuple[str, bool]:
    """``(canonical key, was it an alias)`` for a dotted key as a user typed it."""
    out = key
    for prefix, target in PREFIX_ALIASES:
        if out.startswith(prefix):
            out = target + out[len(prefix):]
            break
    out = KEY_ALIASES.get(out, KEY_ALIASES.get(key, out))
    return out, out != key
