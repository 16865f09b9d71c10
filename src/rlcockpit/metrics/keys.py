"""Config-key spellings: the one table of how a setting is written in each vocabulary.

A setting's canonical name is its verl path (``actor_rollout_ref.actor.optim.lr``). rlcockpit's trainer also
accepts its older short forms (``actor.optim.lr``: verl's ``actor_rollout_ref`` group flattened), verl's renamed
keys (``optim.warmup_style``), and the names TRL and the seed articles use (``learning_rate``, ``beta``,
``ppo_config.cliprange``). Everything that reads or writes a config key in another vocabulary reads it here:

* the trainer's loader (:data:`PREFIX_ALIASES`, :data:`KEY_ALIASES`, via ``trainer/config/keys.py``) and its key
  listings (:data:`SHORT_PREFIXES`);
* the metric guide's knobs and advice (:func:`to_verl_key`), and the guardrails' step-size keys;
* health's view of any run's config and the actions it writes (:data:`VERL_KEYS`, :data:`TRL_KEYS`,
  :data:`ALIASES`): advice is written in short keys and rendered into the run's own vocabulary.

``tests/structure/test_structure_one_home.py`` fails if one of these tables is copied elsewhere in ``src``.
"""

from __future__ import annotations

# rlcockpit's short forms of verl's ``actor_rollout_ref`` prefixes, as (short, verl path), longest first
SHORT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("actor.model.", "actor_rollout_ref.model."),
    ("actor.", "actor_rollout_ref.actor."),
    ("rollout.", "actor_rollout_ref.rollout."),
)

# ----------------------------------------------------------------- input: any spelling -> the canonical verl path

# Applied in order; the first match rewrites the start of the key.
PREFIX_ALIASES: tuple[tuple[str, str], ...] = (
    *SHORT_PREFIXES,
    ("ref.", "actor_rollout_ref.ref."),
    ("model.", "actor_rollout_ref.model."),
    ("optim.", "actor_rollout_ref.actor.optim."),
    ("fsdp_config.", "actor_rollout_ref.actor.fsdp_config."),
    ("kl_controller.", "algorithm.kl_ctrl."),
    ("kl_ctrl.", "algorithm.kl_ctrl."),
    # verl's DAPO reward manager reads its overlong punishment from the manager's kwargs (verl 0.9 moves
    # reward_model.reward_kwargs to reward.reward_kwargs); the other manager kwargs reach no reward function
    ("reward_model.reward_kwargs.overlong_buffer_cfg.", "reward.overlong_buffer."),
    ("reward.reward_kwargs.overlong_buffer_cfg.", "reward.overlong_buffer."),
    ("reward_model.overlong_buffer.", "reward.overlong_buffer."),
    ("custom_reward_function.overlong_buffer.", "reward.overlong_buffer."),  # the first DAPO recipe's scripts
    ("custom_reward_function.reward_kwargs.", "reward.kwargs."),
    ("reward.custom_reward_function.reward_kwargs.", "reward.kwargs."),
    ("reward.custom_reward_function.", "custom_reward_function."),
)

# Whole keys (looked up after the prefix aliases, so "actor.optim.warmup_style" arrives here canonicalised).
KEY_ALIASES: dict[str, str] = {
    # verl renames
    "actor_rollout_ref.actor.optim.warmup_style": "actor_rollout_ref.actor.optim.lr_scheduler_type",
    "critic.optim.warmup_style": "critic.optim.lr_scheduler_type",
    "actor_rollout_ref.actor.optim.warmup_steps_ratio": "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio",
    "actor_rollout_ref.actor.optim.clip_grad": "actor_rollout_ref.actor.grad_clip",
    "critic.optim.clip_grad": "critic.grad_clip",
    "actor_rollout_ref.rollout.val_temperature": "actor_rollout_ref.rollout.val_kwargs.temperature",
    "actor_rollout_ref.model.ulysses_sequence_parallel_size": "actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    "trainer.val_generations_to_log_to_wandb": "trainer.log_val_generations",
    "reward.reward_model.enable": "reward_model.enable",
    "reward.reward_model.model_path": "reward_model.model.path",
    # verl 0.9.1's home of the manager; its legacy reward_model.reward_manager is copied there at start
    "reward.reward_manager.name": "reward_model.reward_manager",
    "algorithm.rollout_correction.bypass_old_logprob_for_rollout": "algorithm.rollout_correction.bypass_mode",
    "actor_rollout_ref.model.use_rmpad": "actor_rollout_ref.model.use_remove_padding",  # verl's old name
    # verl's generated trainer config repeats it under the actor as ${oc.select:...model.use_remove_padding}
    "actor_rollout_ref.actor.use_remove_padding": "actor_rollout_ref.model.use_remove_padding",
    "reward_model.reward_kwargs.max_resp_len": "reward.overlong_buffer.max_resp_len",
    "reward.reward_kwargs.max_resp_len": "reward.overlong_buffer.max_resp_len",
    # rlcockpit's older keys
    "critic.model_path": "critic.model.path",
    "reward.model_path": "reward_model.model.path",
    # TRL's PPOConfig and the seed articles
    "ppo_config.target_kl": "actor_rollout_ref.actor.target_kl",
    "target_kl": "actor_rollout_ref.actor.target_kl",
    "ppo_config.early_stopping": "actor_rollout_ref.actor.early_stopping",
    "early_stopping": "actor_rollout_ref.actor.early_stopping",
    "ppo_config.cliprange": "actor_rollout_ref.actor.clip_ratio",
    "cliprange": "actor_rollout_ref.actor.clip_ratio",
    "ppo_config.cliprange_value": "critic.cliprange_value",
    "cliprange_value": "critic.cliprange_value",
    "ppo_config.gamma": "algorithm.gamma",
    "ppo_config.lam": "algorithm.lam",
    "ppo_config.kl_coef": "algorithm.kl_ctrl.kl_coef",
    "ppo_config.init_kl_coef": "algorithm.kl_ctrl.kl_coef",
    "init_kl_coef": "algorithm.kl_ctrl.kl_coef",
    "kl_coef": "algorithm.kl_ctrl.kl_coef",
    "reward_config.kl_coef": "algorithm.kl_ctrl.kl_coef",
    "reward_config.entropy_coef": "actor_rollout_ref.actor.entropy_coeff",
    "entropy_coef": "actor_rollout_ref.actor.entropy_coeff",
    "ppo_config.learning_rate": "actor_rollout_ref.actor.optim.lr",
    "learning_rate": "actor_rollout_ref.actor.optim.lr",
    "lr": "actor_rollout_ref.actor.optim.lr",  # the articles' sweep file
    "value_update_steps": "critic.ppo_epochs",
    "ppo_config.cliprange_reward": "ppo_config.cliprange_reward",  # no effect (below), kept under its own name
    "data.micro_batch_size_per_gpu": "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "data.num_workers": "data.dataloader_num_workers",
    # the articles' command-line flags (--project, --exp_name, ...)
    "project": "trainer.project_name",
    "group": "trainer.group",
    "entity": "trainer.entity",
    "exp_name": "trainer.experiment_name",
    "rollout_batch_size": "data.train_batch_size",
    "save_policy_model": "trainer.save_policy_model",
}


# ----------------------------------------------------------------- rlcockpit trainer key -> verl path

# rlcockpit's trainer flattens verl's ``actor_rollout_ref`` group: ``actor.optim.lr`` here is
# ``actor_rollout_ref.actor.optim.lr`` in verl, and the model lives under ``actor.model``. These
# prefixes are rewritten (longest first); other groups (algorithm, data, critic, trainer) match verl.
TO_VERL_PREFIXES = (
    ("rollout.val_temperature", "actor_rollout_ref.rollout.val_kwargs.temperature"),
    ("actor.ppo_micro_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
    *SHORT_PREFIXES,
    ("reward.overlong_buffer.", "reward_model.overlong_buffer."),
    ("reward.custom_fn", "custom_reward_function.path"),
    ("reward.model_path", "reward_model.model.path"),
    ("critic.model_path", "critic.model.path"),
)
# rlcockpit keys verl has no counterpart for.
NO_VERL_KEY = (
    "actor.target_kl",
    "health.",
    "reward.name",
    "reward.val_name",
    "reward.kwargs",
    "reward.max_failure_rate",
    "trainer.preflight",
    "trainer.rlcockpit_dir",
    "trainer.num_threads",
    "trainer.device",
)


def to_verl_key(key: str) -> str | None:
    """verl's full config path for an rlcockpit trainer key (``rollout.n`` -> ``actor_rollout_ref.rollout.n``);
    ``None`` where verl has no such setting (``actor.target_kl``, ``health.*``)."""
    if any(key == p or (p.endswith(".") and key.startswith(p)) for p in NO_VERL_KEY):
        return None
    for prefix, verl in TO_VERL_PREFIXES:
        if key == prefix or (prefix.endswith(".") and key.startswith(prefix)):
            return verl + key[len(prefix) :]
    return key


# ----------------------------------------------------------------- advice keys in each run's vocabulary

# The keys advice names its changes in (rlcockpit's trainer keys; a knob only verl has, like vLLM's
# gpu_memory_utilization, is named by the path rlcockpit would give it and lands in the verl overrides only).
ADVICE_KEYS: tuple[str, ...] = (
    "actor.optim.lr",
    "actor.optim.lr_warmup_steps_ratio",
    "actor.optim.warmup_style",
    "algorithm.kl_ctrl.kl_coef",
    "algorithm.kl_ctrl.type",
    "algorithm.kl_ctrl.target_kl",
    "algorithm.use_kl_in_reward",
    "actor.use_kl_loss",
    "actor.kl_loss_coef",
    "actor.entropy_coeff",
    "actor.clip_ratio",
    "actor.clip_ratio_low",
    "actor.clip_ratio_high",
    "actor.grad_clip",
    "actor.ppo_epochs",
    "actor.target_kl",
    "actor.ppo_micro_batch_size",
    "actor.ppo_mini_batch_size",
    "actor.model.enable_gradient_checkpointing",
    "actor.model.path",
    "rollout.temperature",
    "rollout.n",
    "rollout.gpu_memory_utilization",  # verl only
    "data.max_response_length",
    "data.dataloader_num_workers",  # verl only
    "algorithm.adv_estimator",
    "algorithm.filter_groups.enable",
    "algorithm.filter_groups.metric",
    "algorithm.filter_groups.max_num_gen_batches",
    "data.train_batch_size",
    "critic.optim.lr",
    "trainer.total_training_steps",
    # verl V1 / rollout knobs of the off-policy detectors (detectors/offpolicy.py)
    "trainer.v1.sampler.max_off_policy_threshold",  # verl only
    "algorithm.rollout_correction.rollout_is",
    "rollout.log_prob_micro_batch_size_per_gpu",
)


# advice key -> verl key path (None: verl has no equivalent, e.g. ``actor.target_kl``)
VERL_KEYS: dict[str, str | None] = {key: to_verl_key(key) for key in ADVICE_KEYS}

# advice key -> TRL ``GRPOConfig`` field (None: TRL has no such knob). TRL's KL term is always in the loss,
# weighted by ``beta``; warm-up is ``warmup_steps`` (a float in [0, 1) is a ratio of the total steps).
TRL_KEYS: dict[str, str | None] = {
    "actor.optim.lr": "learning_rate",
    "actor.optim.lr_warmup_steps_ratio": "warmup_steps",
    "actor.optim.warmup_style": "lr_scheduler_type",
    "actor.kl_loss_coef": "beta",
    "algorithm.kl_ctrl.kl_coef": "beta",
    "actor.entropy_coeff": "entropy_coef",
    "actor.clip_ratio": "epsilon",
    "actor.clip_ratio_low": "epsilon",
    "actor.clip_ratio_high": "epsilon_high",
    "actor.grad_clip": "max_grad_norm",
    "actor.ppo_epochs": "num_iterations",
    "actor.ppo_micro_batch_size": "per_device_train_batch_size",
    "actor.model.enable_gradient_checkpointing": "gradient_checkpointing",
    "actor.model.path": "model_name_or_path",
    "rollout.temperature": "temperature",
    "rollout.n": "num_generations",
    "rollout.gpu_memory_utilization": "vllm_gpu_memory_utilization",
    "data.max_response_length": "max_completion_length",
    "data.dataloader_num_workers": "dataloader_num_workers",
    "data.train_batch_size": "per_device_train_batch_size",
    "trainer.total_training_steps": "max_steps",
    "actor.mask_truncated_completions": "mask_truncated_completions",  # TRL only
}

# extra spellings people type (seed articles, TRL) for an rlcockpit key; tried after the two main shapes
ALIASES: dict[str, tuple[str, ...]] = {
    "algorithm.kl_ctrl.kl_coef": ("kl_coef", "reward_config.kl_coef", "ppo_config.kl_coef", "beta", "init_kl_coef"),
    "algorithm.kl_ctrl.type": ("kl_controller.type", "kl_ctrl.type"),
    "algorithm.kl_ctrl.target_kl": ("kl_controller.target_kl", "ppo_config.target_kl", "target_kl"),
    "actor.optim.lr": ("optim.lr", "lr", "learning_rate"),
    "actor.optim.lr_warmup_steps_ratio": ("optim.warmup_steps_ratio", "warmup_ratio", "optim.lr_warmup_steps_ratio"),
    "actor.entropy_coeff": ("entropy_coef", "reward_config.entropy_coef", "entropy_coeff"),
    "actor.clip_ratio": ("ppo_config.cliprange", "cliprange", "clip_ratio", "epsilon"),
    "actor.grad_clip": ("max_grad_norm", "grad_clip"),
    "rollout.temperature": ("temperature",),
    "rollout.n": ("num_generations", "n_samples_per_prompt"),
    "data.max_response_length": ("max_response_length", "max_completion_length", "max_new_tokens"),
    "actor.model.path": ("model.path", "model_name_or_path", "model"),
}
