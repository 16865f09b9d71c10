"""What a verl command line means beyond plain key paths: Hydra's override grammar, retired flags that stand
for a value of today's key, and verl's defaults where rlcockpit's demo defaults differ.

Why apart from the loader: the loader merges and classifies keys; this module holds the knowledge of verl's
dialect (and of rlcockpit's own older spellings), which grows with every verl release a user brings.

Override grammar (Hydra's, as in verl's launch scripts): ``key=value``, ``+key=value`` (add a key the
schema does not know: stored, no effect), ``++key=value`` (add or override), ``~key`` (back to the default),
``key=null``, lists ``[a,b]``, quoted strings; values are parsed by OmegaConf's YAML rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlcockpit.trainer.config.schema import ConfigError
from rlcockpit.trainer.config.values import coerce

# The built-in demo task (no data.train_files) is sized for a CPU; these apply there to the keys not given.
# Every other run, a verl command line included, gets verl's defaults (the schema's).
DEMO_DEFAULTS: dict[str, Any] = {
    "algorithm.adv_estimator": "grpo", "actor_rollout_ref.rollout.n": 8, "data.train_batch_size": 16,
    "actor_rollout_ref.actor.ppo_mini_batch_size": 16, "data.max_response_length": 16,
    "trainer.total_training_steps": 100, "trainer.test_freq": 25, "trainer.log_val_generations": 8,
    "trainer.project_name": "rlcockpit", "trainer.experiment_name": None,
    "trainer.resume_mode": "disable"}

# Where rlcockpit's default differs from verl 0.9.1's generated config, and why (docs/config-reference.md
# renders this table; tests/trainer/config/test_trainer_verl_defaults.py fails on any other difference).
VERL_DEFAULT_DIFFERENCES: dict[str, str] = {
    "actor_rollout_ref.model.path": "verl's is a placeholder (~/models/deepseek-llm-7b-chat); rlcockpit's "
                                    "'tiny' is the built-in demo model",
    "critic.model.path": "null = the actor's model, which verl's placeholder path stands for in its examples",
    "data.train_files": "verl's is a placeholder path; empty = the built-in demo task",
    "data.val_files": "verl's is a placeholder path; empty = the built-in demo task's held-out split",
    "actor_rollout_ref.rollout.name": "verl requires it ('???'); 'hf' is the built-in engine, vllm is used when "
                                      "given and installed",
    "actor_rollout_ref.model.enable_gradient_checkpointing": "memory only (same math); off so small CPU runs are "
                                                             "not slowed down",
    "actor_rollout_ref.model.use_remove_padding": "same log-probs either way; off so the prompt-sharing forward "
                                                  "runs (it scores fewer tokens on small batches)",
    "actor_rollout_ref.rollout.calculate_log_probs": "metrics only (rollout_corr/*); off because the built-in "
                                                     "engine's sampling log-probs equal the trainer's",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "vLLM only; > 1 needs one torchrun rank per shard",
    "actor_rollout_ref.rollout.enforce_eager": "vLLM only: no CUDA-graph capture at start (short runs)",
    "critic.ppo_epochs": "null = the actor's ppo_epochs, what verl's ${oc.select:...actor.ppo_epochs} gives",
    "trainer.logger": "[console, rlcockpit]: the embedded store replaces wandb (add wandb to fan out to it)",
    "trainer.device": "auto = cuda when present, else cpu (verl: cuda)",
    "trainer.n_gpus_per_node": "1: rlcockpit launches one process per GPU it is asked for (verl's 8 would "
                               "start 8 processes on a one-GPU or CPU machine)",
}



# verl 0.9.1's own value for the differing keys above that are settings, not placeholders: what a verl run that
# leaves them out runs with (health's advice compares against these; tests/health/diagnosis/test_health_advice_acts.py
# checks them against verl's generated config).
VERL_DEFAULT_VALUES: dict[str, Any] = {
    "actor_rollout_ref.model.enable_gradient_checkpointing": True, "actor_rollout_ref.model.use_remove_padding": True,
    "actor_rollout_ref.rollout.calculate_log_probs": True, "actor_rollout_ref.rollout.tensor_model_parallel_size": 2,
    "actor_rollout_ref.rollout.enforce_eager": False, "trainer.device": "cuda", "trainer.n_gpus_per_node": 8,
}


# --------------------------------------------------------------------------- one override

@dataclass
class Override:
    op: str  # "set" | "add" (+) | "force" (++) | "delete" (~)
    key: str
    value: Any = None


def parse_value(raw: str) -> Any:
    """A command-line value by OmegaConf's YAML rules (``1e-6`` -> float, ``[a,b]`` -> list, ``null``)."""
    if raw == "":
        return ""
    from omegaconf import OmegaConf

    conf = OmegaConf.create()
    try:
        conf.merge_with_dotlist([f"v={raw}"])
    except Exception:  # noqa: BLE001 - not valid YAML: Hydra keeps it as a string too
        return raw
    return OmegaConf.to_container(conf, resolve=False)["v"]


def parse_override_text(text: str) -> Override:
    """``+a.b=3``, ``~a.b``, ``--kl_coef=0.1`` (an article flag written with ``=``) -> :class:`Override`."""
    text = text.strip()
    if text.startswith("--"):
        text = text[2:]
    op = "set"
    if text.startswith("++"):
        op, text = "force", text[2:]
    elif text.startswith("+"):
        op, text = "add", text[1:]
    elif text.startswith("~"):
        key = text[1:].split("=", 1)[0].strip()
        if not key:
            raise ConfigError(f"override {text!r}: '~' needs a key (~key or ~key=value)")
        return Override("delete", key)
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key=value (or +key=value, ~key)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {text!r} has no key")
    return Override(op, key, parse_value(raw))


# --------------------------------------------------------------------------- retired flags

def retired_flag_settings(canonical: str, key: str, value: Any) -> tuple[list[tuple[str, Any]], str] | None:
    """A retired flag (typed as ``key``) -> the settings of today's keys it stands for and the alias note shown
    to the user; ``None`` when ``canonical`` is no retired flag. ``use_wandb`` edits a list: see
    :func:`loggers_with_wandb`."""
    if canonical == "actor_rollout_ref.actor.use_token_level_loss":  # verl <= 0.3 (the first DAPO scripts)
        mode = "token-mean" if coerce(key, value, bool) else "seq-mean-token-mean"
        return [("actor_rollout_ref.actor.loss_agg_mode", mode)], f"actor_rollout_ref.actor.loss_agg_mode={mode}"
    if canonical == "actor_rollout_ref.actor.use_gpg_loss":  # verl's examples/gpg_trainer scripts
        settings = [("actor_rollout_ref.actor.policy_loss.loss_mode", "gpg")] if coerce(key, value, bool) else []
        return settings, "actor_rollout_ref.actor.policy_loss.loss_mode=gpg (when true)"
    if canonical == "algorithm.rollout_correction.use_pure_rollout_correction":  # verl's first release
        settings = [("algorithm.rollout_correction.loss_type", "reinforce")] if coerce(key, value, bool) else []
        return settings, "algorithm.rollout_correction.loss_type=reinforce (when true)"
    if canonical == "reward.custom_fn":  # rlcockpit's older "file.py:function" form
        path, _, name = str(value).rpartition(":")
        settings = [("custom_reward_function.path", path or value), ("custom_reward_function.name", name if path else None)]
        return settings, "custom_reward_function.path + custom_reward_function.name"
    return None


def loggers_with_wandb(value: Any, loggers: Any) -> list[str]:
    """``use_wandb=true|false`` (the articles' flag) -> ``trainer.logger`` with ``wandb`` added or removed."""
    on = coerce("use_wandb", value, bool)
    kept = [x for x in coerce("trainer.logger", loggers, list[str]) if x != "wandb"]
    return kept + ["wandb"] if on else kept


# --------------------------------------------------------------------------- verl's defaults

def apply_verl_defaults(values: dict[str, Any], given: dict[str, str], notes: list[str]) -> None:
    """The built-in demo task's settings (:data:`DEMO_DEFAULTS`) for the keys not given, when no
    ``data.train_files`` is set; everything else keeps verl's defaults.

    ``values`` is the merged flat table (edited in place), ``given`` the keys the user set, ``notes`` what the
    user is told. A config with ``critic.*`` keeps verl's PPO (gae, n=1) even on the demo task, and
    ``trainer.total_epochs`` given keeps ``total_training_steps`` null (train that many epochs, as verl).
    """
    if "critic.loss_agg_mode" not in given:  # verl: ${oc.select:actor_rollout_ref.actor.loss_agg_mode,token-mean}
        values["critic.loss_agg_mode"] = values.get("actor_rollout_ref.actor.loss_agg_mode", "token-mean")
    _note_clip_precedence(values, given, notes)
    if values.get("data.train_files"):
        return
    skip = set(given)
    if any(k.startswith("critic.") for k in given) and "algorithm.adv_estimator" not in given:
        skip |= {"algorithm.adv_estimator", "actor_rollout_ref.rollout.n"}  # verl's PPO: gae, one sample
    if "trainer.total_epochs" in given:
        skip.add("trainer.total_training_steps")
    for key, value in DEMO_DEFAULTS.items():
        if key not in skip:
            values[key] = value


A_ = "actor_rollout_ref.actor."


def inactive_reason(key: str, values: dict[str, Any]) -> str | None:
    """Why setting ``key`` (a canonical verl path) changes nothing in a config whose flat values are ``values``,
    by verl's precedence rules; None when it acts. The one home of those rules: the trainer's notes and the
    health advice (``PROVIDERS["verl_inactive_reason"]``) both ask here.

    * ``actor.clip_ratio`` is read only where ``clip_ratio_low/high`` are null (verl's ``compute_policy_loss``);
    * ``actor.kl_loss_coef/kl_loss_type`` only with ``actor.use_kl_loss``; ``algorithm.kl_ctrl.*`` and
      ``algorithm.kl_penalty`` only with ``algorithm.use_kl_in_reward``;
    * ``critic.*`` and ``algorithm.lam`` only with ``algorithm.adv_estimator=gae``;
      ``algorithm.norm_adv_by_std_in_grpo`` only with a grpo estimator;
    * ``algorithm.filter_groups.*`` only with ``algorithm.filter_groups.enable``.
    """
    if key == A_ + "clip_ratio":
        shadow = [f"{A_}clip_ratio_{s}" for s in ("low", "high") if values.get(f"{A_}clip_ratio_{s}") is not None]
        if shadow:
            return f"{' and '.join(shadow)} take precedence over clip_ratio (set them to change the clip range)"
        return None
    if key in (A_ + "kl_loss_coef", A_ + "kl_loss_type") and not values.get(A_ + "use_kl_loss"):
        return f"read only with {A_}use_kl_loss=true"
    if (key.startswith("algorithm.kl_ctrl.") or key == "algorithm.kl_penalty") and not values.get(
            "algorithm.use_kl_in_reward"):
        return "read only with algorithm.use_kl_in_reward=true"
    estimator = str(values.get("algorithm.adv_estimator", ""))
    if (key.startswith("critic.") or key == "algorithm.lam") and estimator != "gae":
        return f"the critic (and GAE's lam) is used only by algorithm.adv_estimator=gae, not {estimator}"
    if key == "algorithm.norm_adv_by_std_in_grpo" and not estimator.startswith("grpo"):
        return f"read only by the grpo estimators, not {estimator}"
    if key.startswith("algorithm.filter_groups.") and key != "algorithm.filter_groups.enable" and not values.get(
            "algorithm.filter_groups.enable"):
        return "read only with algorithm.filter_groups.enable=true"
    return None


def _note_clip_precedence(values: dict[str, Any], given: dict[str, str], notes: list[str]) -> None:
    """``actor.clip_ratio`` given while ``clip_ratio_low/high`` keep verl's explicit 0.2: the losses read
    low/high first (verl's ``compute_policy_loss``), so clip_ratio changes nothing; say so."""
    base = A_ + "clip_ratio"
    if base not in given:
        return
    shadow = {k: v for k, v in values.items() if k.startswith(base + "_") and k[len(base) + 1:] in ("low", "high")
              and k not in given}
    why = inactive_reason(base, shadow)
    if why:
        notes.append(f"{given[base]}={values.get(base)} has no effect on the clip range: {why}; as in verl")
