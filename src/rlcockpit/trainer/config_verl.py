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

from rlcockpit.trainer.config_schema import ConfigError
from rlcockpit.trainer.config_values import coerce

# rlcockpit's defaults (tuned for the built-in task) that differ from verl's and change the experiment
VERL_DEMO_DEFAULTS = {"algorithm.adv_estimator": "gae", "actor_rollout_ref.rollout.n": 1}


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
    """verl's defaults where a verl command line relies on them and rlcockpit's demo defaults differ.

    ``values`` is the merged flat table (edited in place), ``given`` the keys the user set, ``notes`` what the
    user is told.

    * ``trainer.total_epochs`` given without ``trainer.total_training_steps``: verl trains that many epochs
      (its ``total_training_steps`` defaults to null); rlcockpit's default of 100 steps must not win.
    * a critic configured (``critic.*``) without ``algorithm.adv_estimator``: verl's default estimator is
      ``gae`` (PPO) with ``rollout.n=1``; every verl PPO script relies on it, and rlcockpit's demo default
      (``grpo``, n=8) would silently train another algorithm and leave the critic unused.
    """
    _note_demo_defaults(values, given, notes)
    if "trainer.total_epochs" in given and "trainer.total_training_steps" not in given:
        values["trainer.total_training_steps"] = None
        notes.append("trainer.total_epochs given without trainer.total_training_steps: training runs "
                     "total_epochs over the data, as verl does")
    if "algorithm.adv_estimator" not in given and any(k.startswith("critic.") for k in given):
        values["algorithm.adv_estimator"] = "gae"
        set_n = "actor_rollout_ref.rollout.n" not in given
        if set_n:
            values["actor_rollout_ref.rollout.n"] = 1
        notes.append("critic.* set without algorithm.adv_estimator: verl's defaults apply, "
                     "algorithm.adv_estimator=gae" + (" and actor_rollout_ref.rollout.n=1" if set_n else ""))


def _note_demo_defaults(values: dict[str, Any], given: dict[str, str], notes: list[str]) -> None:
    """Say which of rlcockpit's demo defaults that change the experiment stand in for verl's, when the
    user brings their own data (a verl command line) and leaves them unset."""
    if not values.get("data.train_files") or any(k.startswith("critic.") for k in given):
        return  # the built-in demo task; or a PPO script, which gets verl's gae/n=1 below
    differ = [f"{k}={values[k]} (verl: {v})" for k, v in VERL_DEMO_DEFAULTS.items() if k not in given]
    if differ:
        notes.append("not set, so rlcockpit's defaults apply where verl's differ: " + ", ".join(differ))
