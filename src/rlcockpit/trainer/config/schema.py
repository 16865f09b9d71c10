"""The trainer's config schema: dataclasses laid out exactly as verl's ``ppo_trainer.yaml``.

Each field is declared once, with :func:`opt`: its default, its help text (the config reference and
``--help`` read it from here), and where its allowed values come from: a fixed ``choices`` tuple or the
``registry`` that owns the names (``algorithm.adv_estimator`` -> :data:`rlcockpit.algos.ADV_ESTIMATORS`),
so a newly registered estimator is valid without touching this file. ``only_here=True`` marks a key
verl does not have (an rlcockpit extension, kept under the verl group it belongs to).

Adding a config key is one change: a field here (``name: type = opt(default, "help")``). Key lists,
validation, ``--print-config``, the stored run config and ``docs/config-reference.md`` all follow from it.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any


def opt(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = None,
        choices: tuple[Any, ...] | None = None, registry: str | None = None, only_here: bool = False,
        extra_choices: tuple[str, ...] = ()) -> Any:
    """A config field. ``registry`` is ``"module:NAME"`` of the :class:`~rlcockpit.registry.Registry`
    whose names are the allowed values (``extra_choices`` are accepted on top, e.g. ``auto``)."""
    meta = {"help": help, "choices": choices, "registry": registry, "only_here": only_here,
            "extra_choices": extra_choices}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def group(cls: type, help: str = "", **kwargs: Any) -> Any:
    """A nested section (its fields are the keys); ``kwargs`` override the section's defaults."""
    return field(default_factory=(lambda: cls(**kwargs)) if kwargs else cls, metadata={"help": help})


# --------------------------------------------------------------------------- algorithm

@dataclass
class KLCtrlConfig:
    type: str = opt("fixed", "KL controller of the in-reward penalty", registry="rlcockpit.algos:KL_CONTROLLERS")
    kl_coef: float = opt(0.001, "KL coefficient of the in-reward penalty (start value for adaptive)")
    target_kl: float = opt(0.1, "adaptive controller: the KL it steers towards")
    horizon: int = opt(10000, "adaptive controller: samples over which it moves the coefficient by at most 20%")
    kl_coef_range: list[float] | None = opt(None, "[lo, hi]: clamp the (adaptive) coefficient to this range "
                                            "(the articles' kl_controller.kl_coef_range)", only_here=True)


@dataclass
class FilterGroupsConfig:
    """DAPO dynamic sampling: drop groups whose rewards are all equal and refill the batch."""

    enable: bool = opt(False, "drop prompt groups whose `metric` is the same for all responses and generate more "
                              "prompts")
    metric: str | None = opt("reward", "the per-response value groups are compared on: acc, score, reward "
                                       "(verl 0.9's name of the sequence score), seq_reward, seq_final_reward or "
                                       "any key the reward function returns in its dict; null = seq_reward")
    max_num_gen_batches: int = opt(0, "generation batches allowed per step before it raises (<= 0 = no limit, "
                                      "as verl)")


@dataclass
class RolloutCorrectionConfig:
    """verl's rollout correction: IS weights / rejection for the gap between the rollout engine and the trainer."""

    rollout_is: str | None = opt(None, "IS weights pi_train / pi_rollout: null (metrics only), token or sequence",
                                 choices=("token", "sequence"))
    rollout_is_threshold: float | str = opt(2.0, "truncate the IS weights at it, or \"lower_upper\" (IcePop: zero "
                                                 "outside the bounds)")
    rollout_is_batch_normalize: bool = opt(False, "rescale the IS weights to mean 1 per batch")
    rollout_rs: str | None = opt(None, "rejection sampling: comma-separated criteria token_k1..3, seq_sum_k1..3, "
                                       "seq_mean_k1..3, seq_max_k2/k3")
    rollout_rs_threshold: float | str | None = opt(None, "one per rollout_rs criterion (k1: \"lower_upper\" ratio "
                                                         "bounds; k2/k3: an upper bound)")
    bypass_mode: bool = opt(False, "no old-policy pass: the rollout's log-probs are the old ones, the loss becomes "
                                   "bypass_mode")
    loss_type: str = opt("ppo_clip", "bypass mode's loss", choices=("ppo_clip", "reinforce"))


@dataclass
class AlgorithmConfig:
    adv_estimator: str = opt("gae", "how advantages are computed (verl's default gae: PPO with a critic; the built-in demo task uses grpo)", registry="rlcockpit.algos:ADV_ESTIMATORS")
    gamma: float = opt(1.0, "discount factor (GAE, REINFORCE++)")
    lam: float = opt(1.0, "GAE lambda")
    norm_adv_by_std_in_grpo: bool = opt(True, "GRPO: divide group-centred scores by the group std "
                                              "(false: Dr. GRPO style)")
    use_kl_in_reward: bool = opt(False, "subtract kl_ctrl.kl_coef x KL(policy, reference) from the rewards "
                                        "(classic PPO)")
    kl_penalty: str = opt("kl", "KL estimator of the in-reward penalty", registry="rlcockpit.algos:KL_ESTIMATORS")
    kl_ctrl: KLCtrlConfig = group(KLCtrlConfig)
    filter_groups: FilterGroupsConfig = group(FilterGroupsConfig)
    rollout_correction: RolloutCorrectionConfig = group(RolloutCorrectionConfig)
    handle_zero_tail: bool = opt(True, "optimal token baselines: no baseline past the second-longest response of a "
                                       "group")
    gdpo_reward_keys: list[str] | None = opt(None, "gdpo: the reward components, keys of the dict the reward "
                                                   "function returns (e.g. [acc, format])")
    gdpo_reward_weights: list[float] | None = opt(None, "gdpo: one weight per reward key; null = 1 each")


# --------------------------------------------------------------------------- actor_rollout_ref

@dataclass
class OptimConfig:
    optimizer: str = opt("AdamW", "optimizer (torch.optim.AdamW; Megatron's adam and VeOmni's adamw are the same "
                                   "decoupled-weight-decay Adam)", choices=("AdamW", "adamw", "adam"))
    lr: float = opt(1e-6, "learning rate")
    lr_warmup_steps_ratio: float = opt(0.0, "fraction of the total steps spent in linear warm-up")
    lr_warmup_steps: int = opt(-1, "warm-up steps; -1 = use lr_warmup_steps_ratio")
    lr_scheduler_type: str = opt("constant", "learning-rate schedule after the warm-up",
                                 choices=("constant", "cosine"))
    min_lr_ratio: float = opt(0.0, "cosine: the lr decays to this fraction of lr")
    num_cycles: float = opt(0.5, "cosine: number of cosine cycles over the run (0.5 = one decay)")
    weight_decay: float = opt(0.01, "AdamW weight decay")
    betas: list[float] = opt(factory=lambda: [0.9, 0.999], help="AdamW betas")


@dataclass
class TinyModelConfig:
    """The built-in demo model (``actor_rollout_ref.model.path=tiny``): a small Qwen2 built from a config."""

    hidden_size: int = opt(256, "hidden size")
    num_layers: int = opt(4, "decoder layers")
    num_heads: int = opt(4, "attention heads")
    intermediate_size: int = opt(1024, "MLP width")
    sft_steps: int = opt(200, "supervised warm-up steps on the task before RL (correct answers)")
    sft_lr: float = opt(1e-3, "warm-up learning rate")
    sft_batch_size: int = opt(256, "warm-up batch size")
    # then a short "sloppy" fine-tune where carries are often forgotten ("07+45=" -> "042"): the model
    # still knows the right answer but no longer prefers it, the situation RL with a verifiable reward fixes
    sft_slip_steps: int = opt(50, "steps of the sloppy second warm-up phase (0 = none)")
    sft_slip_rate: float = opt(0.7, "share of the sloppy phase's answers written without their carries")
    sft_slip_lr: float = opt(5e-4, "sloppy-phase learning rate")
    cache: bool = opt(True, "reuse a warmed-up model built with the same settings (under ~/.cache/rlcockpit)")
    seed: int | None = opt(None, "seed of the model's init and warm-up; null = trainer.seed (a verify branch "
                                 "keeps its parent's starting model while its training seed varies)", only_here=True)


@dataclass
class ModelConfig:
    path: str = opt("tiny", "a local Hugging Face causal-LM directory, or the built-in \"tiny\" model")
    tokenizer_path: str | None = opt(None, "tokenizer directory; null = the model's (or data.tokenizer)")
    trust_remote_code: bool = opt(False, "allow model code shipped in the (local) model directory")
    external_lib: str | None = opt(None, "a module to import first (registers custom model classes)")
    override_config: dict[str, Any] = opt(factory=dict, help="HF config attributes to override when loading")
    custom_chat_template: str | None = opt(None, "a Jinja chat template replacing the tokenizer's")
    enable_gradient_checkpointing: bool = opt(False, "recompute activations in the backward pass (less memory)")
    lora_rank: int = opt(0, "> 0 trains a LoRA adapter (peft); the reference policy is then the adapter-free model")
    lora_alpha: int = opt(16, "LoRA alpha")
    target_modules: str | list[str] = opt("all-linear", "modules LoRA adapts (a list, or all-linear)")
    exclude_modules: str | list[str] | None = opt(None, "modules LoRA leaves alone")
    lora_adapter_path: str | None = opt(None, "start from this saved peft adapter instead of a fresh one")
    dtype: str = opt("fp32", "bf16 = autocast over fp32 weights (the frozen reference model is bf16 on CUDA)", choices=("fp32", "bf16"),
                     only_here=True)
    use_remove_padding: bool = opt(False, "pack each micro-batch's rows without their padding (position_ids restart "
                                          "per row; same log-probs) in the actor/reference/old-policy passes, or "
                                          "share prompts instead where that runs fewer tokens")
    tiny: TinyModelConfig = group(TinyModelConfig)


@dataclass
class PolicyLossConfig:
    loss_mode: str = opt("vanilla", "policy loss", registry="rlcockpit.algos:POLICY_LOSSES")
    clip_cov_ratio: float = opt(0.0002, "clip_cov: share of tokens whose gradient Clip-Cov detaches")
    clip_cov_lb: float = opt(1.0, "clip_cov: lower bound of the covariance window")
    clip_cov_ub: float = opt(5.0, "clip_cov: upper bound of the covariance window")
    kl_cov_ratio: float = opt(0.0002, "kl_cov: share of top-covariance tokens that get the KL penalty")
    ppo_kl_coef: float = opt(0.1, "kl_cov: weight of that |log ratio| penalty")
    dro_beta: float | None = opt(None, "dro: weight of the quadratic log-ratio penalty (required, > 0)")


@dataclass
class ActorConfig:
    ppo_mini_batch_size: int = opt(256, "prompts per optimizer step (multiplied by rollout.n), as verl")
    ppo_micro_batch_size: int | None = opt(None, "samples per gradient-accumulation step (verl's global form)")
    ppo_micro_batch_size_per_gpu: int | None = opt(None, "samples per gradient-accumulation step; null = the "
                                                         "whole mini-batch (one device: same as ppo_micro_batch_size)")
    clip_ratio: float = opt(0.2, "PPO clip epsilon where clip_ratio_low/high are null (verl sets both to 0.2, "
                                 "so clip_ratio alone changes nothing, as in verl)")
    clip_ratio_low: float | None = opt(0.2, "lower clip epsilon; null = clip_ratio")
    clip_ratio_high: float | None = opt(0.2, "upper clip epsilon (DAPO clip-higher: 0.28); null = clip_ratio")
    clip_ratio_c: float = opt(3.0, "dual-clip bound for negative advantages")
    policy_loss: PolicyLossConfig = group(PolicyLossConfig)
    loss_agg_mode: str = opt("token-mean", "how token losses are averaged into one number",
                             registry="rlcockpit.algos:LOSS_AGG_MODES")
    loss_scale_factor: int | None = opt(None, "seq-mean-token-sum-norm (Dr. GRPO) divisor; null = "
                                              "data.max_response_length")
    tau_pos: float = opt(1.0, "sapo: gate temperature for tokens with a positive advantage")
    tau_neg: float = opt(1.05, "sapo: gate temperature for tokens with a negative advantage")
    calculate_sum_pi_squared: bool = opt(False, "compute sum_v pi(v)^2 in the old-policy pass (on by itself for the "
                                                "optimal token baselines)")
    entropy_coeff: float = opt(0.0, "entropy bonus weight (negative: an entropy penalty)")
    calculate_entropy: bool = opt(False, "also score the entropy in the update with entropy_coeff=0, for the "
                                         "actor/entropy_loss metric (actor/entropy is always logged)")
    use_kl_loss: bool = opt(False, "add kl_loss_coef x KL(policy, reference) to the actor loss (GRPO style)")
    kl_loss_coef: float = opt(0.001, "weight of the KL loss")
    kl_loss_type: str = opt("low_var_kl", "KL estimator of the KL loss", registry="rlcockpit.algos:KL_ESTIMATORS")
    ppo_epochs: int = opt(1, "passes over each step's batch")
    grad_clip: float = opt(1.0, "max gradient norm")
    target_kl: float | None = opt(None, "stop the PPO epochs early when the measured KL passes it (TRL's "
                                        "ppo_config.target_kl)", only_here=True)
    early_stopping: bool = opt(True, "with target_kl: stop early (false: target_kl is ignored)", only_here=True)
    # score each distinct prompt/row once (same math, fewer FLOPs); off for models that can't take a KV cache
    share_prefix: bool = opt(True, "score each distinct prompt and row once (same math, fewer FLOPs); false = "
                                   "plain forward", only_here=True)
    optim: OptimConfig = group(OptimConfig)


@dataclass
class ValKwargsConfig:
    temperature: float = opt(0.0, "validation sampling temperature; 0 = greedy")
    top_p: float = opt(1.0, "validation nucleus sampling")
    top_k: int = opt(-1, "validation top-k; -1 = off")
    n: int = opt(1, "responses per validation prompt (accuracy is mean@n; n > 1 adds std@n, best@k, worst@k, maj@k)")
    do_sample: bool = opt(False, "false = greedy validation")


@dataclass
class RolloutConfig:
    name: str = opt("hf", "rollout engine (vllm/sglang fall back to hf where not installed)",
                    registry="rlcockpit.trainer.rollout.engine:ROLLOUT_ENGINES", extra_choices=("vllm", "sglang"))
    n: int = opt(1, "responses sampled per prompt (the group size of GRPO/RLOO: set it >= 2 there)")
    temperature: float = opt(1.0, "sampling temperature (also used for the training log-probs)")
    top_p: float = opt(1.0, "nucleus sampling")
    top_k: int = opt(-1, "top-k sampling; -1 = off")
    do_sample: bool = opt(True, "false = greedy rollouts")
    calculate_log_probs: bool = opt(False, "the engine reports each sampled token's log-prob: rollout_corr/* metrics "
                                           "(on by itself with algorithm.rollout_correction)")
    val_kwargs: ValKwargsConfig = group(ValKwargsConfig)
    # engine settings of rollout.name=vllm (verl's keys and defaults; the built-in engine has no use for them)
    gpu_memory_utilization: float = opt(0.5, "vllm: share of GPU memory for the engine (on CPU: of RAM, caps the "
                                             "KV cache, which is sized to the rollout batch)")
    tensor_model_parallel_size: int = opt(1, "vllm: tensor-parallel shards; > 1 needs torchrun (one shard per rank)")
    enforce_eager: bool = opt(True, "vllm: no CUDA graphs / torch.compile")
    free_cache_engine: bool = opt(True, "vllm: release the KV cache between generations (sleep mode on CUDA)")


@dataclass
class ActorRolloutRefConfig:
    model: ModelConfig = group(ModelConfig)
    actor: ActorConfig = group(ActorConfig)
    rollout: RolloutConfig = group(RolloutConfig)


# --------------------------------------------------------------------------- critic, rewards

@dataclass
class CriticModelConfig:
    path: str | None = opt(None, "value model directory; null = the actor's weights")


@dataclass
class CriticConfig:
    """Used by ``algorithm.adv_estimator=gae``; the critic is a value head on ``critic.model.path``."""

    model: CriticModelConfig = group(CriticModelConfig)
    cliprange_value: float = opt(0.5, "value clip range")
    ppo_epochs: int | None = opt(None, "critic passes per step; null = actor's ppo_epochs")
    grad_clip: float = opt(1.0, "max gradient norm")
    loss_agg_mode: str = opt("token-mean", "how token value losses are averaged",
                             registry="rlcockpit.algos:LOSS_AGG_MODES")
    optim: OptimConfig = group(OptimConfig, lr=1e-5)


@dataclass
class RewardModelPathConfig:
    path: str | None = opt(None, "local HF sequence-classification reward model (score = logit 0 at the last "
                                 "token of the chat + response through the RM's own chat template, as verl 0.9.1)")


# verl 0.9.1's reward managers (verl/experimental/reward_loop/reward_manager), then the two older ones rlcockpit
# also runs (verl/workers/reward_manager: batch calls once per batch with lists, prime once per response)
VERL_REWARD_MANAGERS = ("naive", "dapo", "gdpo", "remote", "rate_limited")
OLDER_REWARD_MANAGERS = ("batch", "prime")


@dataclass
class RewardModelConfig:
    enable: bool | None = opt(None, "score with the reward model; null = on when model.path is set")
    model: RewardModelPathConfig = group(RewardModelPathConfig)
    reward_manager: str | None = opt(None, "verl's reward manager (verl 0.9.1: reward.reward_manager.name): null / "
                                     "naive / dapo / gdpo / remote / rate_limited / prime call the reward function "
                                     "once per response, extra_info as that manager fills it (naive: + num_turns=2, "
                                     "rollout_reward_scores, turn_scores, tool_rewards, raw_prompt); batch calls it "
                                     "once per batch with lists (data_sources, solution_strs, ground_truths, "
                                     "extra_infos); another name is refused, as verl does")


@dataclass
class CustomRewardFunctionConfig:
    path: str | None = opt(None, "a .py file with a reward function, verl's compute_score signature (verl's forms: "
                                 "a file, file://FILE, pkg://module.path)")
    name: str | None = opt(None, "the function in that file; null = compute_score")


@dataclass
class OverlongBufferConfig:
    enable: bool = opt(False, "DAPO soft overlong punishment")
    len: int = opt(4, "tokens before data.max_response_length where the penalty ramps up")
    penalty_factor: float = opt(1.0, "penalty at the length limit")
    max_resp_len: int | None = opt(None, "length the penalty ramps to; null = data.max_response_length (verl's "
                                   "DAPO reward manager: reward_model.reward_kwargs.max_resp_len)", only_here=True)
    log: bool = opt(False, "add each response's overlong_reward and overlong (penalised?) to its reward extras: "
                           "samples, reward_extra/overlong*/mean and val-aux/<src>/overlong*/mean@N (verl's "
                           "overlong_buffer_cfg.log)")


@dataclass
class RewardConfig:
    """Rule rewards by name; ``auto`` picks one per ``data_source`` as verl's ``default_compute_score``."""

    name: str = opt("auto", "rule reward; auto = by data_source as verl (gsm8k, MATH, math_dapo/AIME, arith)",
                    registry="rlcockpit.trainer.reward.rewards:REWARDS", only_here=True)
    val_name: str | None = opt(None, "reward used for validation accuracy; null = the training reward",
                               registry="rlcockpit.trainer.reward.rewards:REWARDS", only_here=True)
    kwargs: dict[str, Any] = opt(factory=dict, help="extra keyword arguments for the reward function",
                                 only_here=True)
    max_failure_rate: float = opt(0.2, "stop when this fraction of reward calls has raised", only_here=True)
    overlong_buffer: OverlongBufferConfig = group(OverlongBufferConfig)


# --------------------------------------------------------------------------- data

@dataclass
class BuiltinDataConfig:
    """The demo task generator used when ``data.train_files`` is empty."""

    name: str = opt("arith", "built-in task: arith (addition, text) or bars (which bar is taller: a picture, for a vision-language policy)", choices=("arith", "bars"))
    digits: int = opt(2, "operand digits")
    train_size: int = opt(20000, "training prompts generated")
    val_size: int = opt(200, "held-out validation prompts (never in training)")
    seed: int = opt(1234, "generator seed")


@dataclass
class DataConfig:
    train_files: list[str] = opt(factory=list, help="parquet/JSONL files in verl's row layout (a path or a list); "
                                                    "empty = the built-in task")
    val_files: list[str] = opt(factory=list, help="validation files (same layout)")
    prompt_key: str = opt("prompt", "column holding the chat messages")
    reward_fn_key: str = opt("data_source", "column that picks the reward function")
    image_key: str = opt("images", "column of a multimodal row's images ({'bytes': ...} cells or paths), paired "
                                   "one to one with the <image> placeholders of its prompt")
    tokenizer: str | None = opt(None, "tokenizer directory; null = the model's")
    train_batch_size: int = opt(1024, "prompts per step")
    val_batch_size: int | None = opt(None, "prompts per validation generation batch; null = 256")
    gen_batch_size: int | None = opt(None, "prompts per generation round with filter_groups; null = train_batch_size")
    max_prompt_length: int = opt(512, "prompt tokens")
    max_response_length: int = opt(512, "new tokens per response")
    filter_overlong_prompts: bool = opt(False, "drop prompts longer than max_prompt_length when loading")
    truncation: str = opt("error", "prompts over max_prompt_length: error, or keep the left/right/middle part "
                                   "(drop = filter them)", choices=("error", "left", "right", "middle", "drop"))
    train_max_samples: int = opt(-1, "use at most this many training rows; -1 = all")
    val_max_samples: int = opt(-1, "use at most this many validation rows; -1 = all")
    apply_chat_template_kwargs: dict[str, Any] = opt(factory=dict, help="extra arguments of apply_chat_template")
    shuffle: bool = opt(True, "shuffle the prompts each epoch")
    seed: int | None = opt(None, "shuffling seed; null = 1")
    builtin: BuiltinDataConfig = group(BuiltinDataConfig)


# --------------------------------------------------------------------------- trainer, health

@dataclass
class HealthConfig:
    enable: bool = opt(True, "run the health detectors live", only_here=True)
    on_critical: str = opt("warn", "what a critical finding does", choices=("warn", "stop", "rollback"),
                           only_here=True)
    max_rollbacks: int = opt(3, "after this many rollbacks a further critical finding stops the run", only_here=True)
    reports: list[str] = opt(factory=list, help="scheduled health reports, stored with the run and sent through the "
                             "alert channels: 1h, 6h, daily, checkpoint", choices=("1h", "6h", "daily", "checkpoint"),
                             only_here=True)


@dataclass
class TrainerConfig:
    project_name: str = opt("verl_examples", "tracking project")
    experiment_name: str | None = opt("gsm8k", "run name; null = algorithm.adv_estimator")
    group: str | None = opt(None, "run group (W&B group)", only_here=True)
    entity: str | None = opt(None, "W&B entity (user or team)", only_here=True)
    tags: list[str] = opt(factory=list, help="run tags", only_here=True)
    total_training_steps: int | None = opt(None, "steps to train; null = total_epochs over the data")
    total_epochs: int = opt(30, "epochs when total_training_steps is null")
    critic_warmup: int = opt(0, "steps that update only the critic before the actor starts")
    val_before_train: bool = opt(True, "validate before the first step")
    val_only: bool = opt(False, "validate once and stop")
    test_freq: int = opt(-1, "validate every N steps and after the last; <= 0 = only before training (val_before_train)")
    log_val_generations: int = opt(0, "validation responses stored per validation as the probe set (kind=probe): the same prompts each time, for the dashboard's prompt-across-steps view")
    save_freq: int = opt(-1, "checkpoint every N steps (and at the end); -1 = never")
    save_policy_model: bool = opt(False, "save the actor at the end even when save_freq=-1", only_here=True)
    max_actor_ckpt_to_keep: int | None = opt(None, "keep only the newest N checkpoints; null = all")
    default_local_dir: str = opt("checkpoints/${trainer.project_name}/${trainer.experiment_name}",
                                 "checkpoint directory")
    resume_mode: str = opt("auto", "disable | auto (newest checkpoint in default_local_dir) | resume_path "
                                      "(resume_from_path) | a global_step_N path")
    resume_from_path: str | None = opt(None, "checkpoint (global_step_N) for resume_mode=resume_path")
    branch_of: str | None = opt(None, "run id this run branches from (`rlcockpit diagnose --verify`): a resume then "
                                      "starts a new run from the checkpoint instead of continuing the checkpoint's "
                                      "run", only_here=True)
    stop_at_step: int | None = opt(None, "stop after this step, keeping total_training_steps' lr schedule (a "
                                         "branch runs part of its parent's schedule); null = run to the end",
                                   only_here=True)
    logger: list[str] = opt(factory=lambda: ["console", "rlcockpit"],
                            help="loggers: console (live progress), rlcockpit, wandb, tensorboard, mlflow, swanlab...")
    store: bool = opt(True, "write the embedded store even when trainer.logger does not list rlcockpit",
                      only_here=True)
    rlcockpit_dir: str | None = opt(None, "tracking store (else $RLCOCKPIT_DIR, else ./rlcockpit)", only_here=True)
    preflight: str = opt("strict", "checks before training: strict stops on a failure, warn continues",
                         choices=("strict", "warn", "off"), only_here=True)
    preflight_skip: list[str] = opt(factory=list, help="preflight checks to leave out (batch, data, memory...)",
                                    only_here=True)
    device: str = opt("auto", "auto | cpu | cuda (cuda without a GPU falls back to cpu with a note)",
                      choices=("auto", "cpu", "cuda"))
    seed: int = opt(42, "global random seed", only_here=True)
    n_gpus_per_node: int = opt(1, "data-parallel processes on this node (GPUs, or CPU processes with gloo); > 1 "
                                  "launches them with torch.distributed.run unless torchrun already did "
                                  "(docs/trainer.md)")
    nnodes: int = opt(1, "nodes; only 1 here (several nodes: verl on Ray, watched with `rlcockpit watch`)")
    profile_steps: list[int] = opt(factory=list, help="steps run under torch.profiler; traces stored with the run "
                                                      "(docs/trainer.md)")
    num_threads: int = opt(0, "torch threads on CPU; 0 = auto: the usable CPUs (affinity, cgroup quota) less "
                              "those other processes keep busy at start (docs/trainer.md)", only_here=True)
    log_samples_freq: int = opt(10, "store rollout samples every N steps (and at step 1); 0 = never", only_here=True)
    num_log_samples: int = opt(512, "responses stored per logged step, in whole GRPO groups (every group of a "
                                    "batch up to this size); 0 = the whole batch", only_here=True)
    max_consecutive_nonfinite: int = opt(3, "stop after this many steps in a row with non-finite losses",
                                         only_here=True)


@dataclass
class Config:
    """The whole trainer config; ``cfg.actor``, ``cfg.rollout`` and ``cfg.model`` are shortcuts into
    ``cfg.actor_rollout_ref`` (and ``cfg.actor.model`` is ``cfg.model``, as in rlcockpit's older short keys)."""

    algorithm: AlgorithmConfig = group(AlgorithmConfig)
    actor_rollout_ref: ActorRolloutRefConfig = group(ActorRolloutRefConfig)
    critic: CriticConfig = group(CriticConfig)
    reward_model: RewardModelConfig = group(RewardModelConfig)
    custom_reward_function: CustomRewardFunctionConfig = group(CustomRewardFunctionConfig)
    reward: RewardConfig = group(RewardConfig)
    data: DataConfig = group(DataConfig)
    trainer: TrainerConfig = group(TrainerConfig)
    health: HealthConfig = group(HealthConfig)
    # free-form alert rules/channels in rlcockpit.alerts.config.load_alerts_config's format; passed to init()
    alerts: dict[str, Any] | None = opt(None, "alert rules and channels (see docs/alerts.md)", only_here=True)
    # accepted keys that steer only verl's engines ({dotted key: value}); stored with the run
    extras: dict[str, Any] = field(default_factory=dict, metadata={"internal": True})
    aliases: dict[str, str] = field(default_factory=dict, metadata={"internal": True})  # used -> canonical
    notes: list[str] = field(default_factory=list, metadata={"internal": True})

    def __post_init__(self) -> None:
        link_model(self)

    @property
    def actor(self) -> ActorConfig:
        return self.actor_rollout_ref.actor

    @property
    def rollout(self) -> RolloutConfig:
        return self.actor_rollout_ref.rollout

    @property
    def model(self) -> ModelConfig:
        return self.actor_rollout_ref.model


def link_model(cfg: Config) -> None:
    """``cfg.actor.model`` -> ``cfg.model`` (not a field: only the attribute path of the old short keys)."""
    object.__setattr__(cfg.actor_rollout_ref.actor, "model", cfg.actor_rollout_ref.model)


class ConfigError(ValueError):
    """A config key or value is invalid; the message names the key."""


@dataclass(frozen=True)
class FieldInfo:
    """One schema key: its annotation, default and the metadata given to :func:`opt`."""

    key: str
    type: Any
    default: Any
    help: str
    choices: tuple[Any, ...] | None
    registry: str | None
    extra_choices: tuple[str, ...]
    only_here: bool
    section: type  # the dataclass the field belongs to


def _walk(cls: type, instance: Any, prefix: str, out: dict[str, FieldInfo]) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):
            continue
        tp, key = hints[f.name], f"{prefix}{f.name}"
        if dataclasses.is_dataclass(tp):
            _walk(tp, getattr(instance, f.name), key + ".", out)
            continue
        m = f.metadata
        out[key] = FieldInfo(key=key, type=tp, default=getattr(instance, f.name), help=m.get("help", ""),
                             choices=m.get("choices"), registry=m.get("registry"),
                             extra_choices=tuple(m.get("extra_choices") or ()), only_here=bool(m.get("only_here")),
                             section=cls)


@functools.lru_cache(maxsize=1)
def _schema() -> tuple[tuple[str, FieldInfo], ...]:
    out: dict[str, FieldInfo] = {}
    _walk(Config, Config(), "", out)
    return tuple(out.items())


def schema_fields() -> dict[str, FieldInfo]:
    """Every canonical (verl-path) leaf key of the schema, in declaration order."""
    return dict(_schema())
