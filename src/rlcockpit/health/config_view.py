"""Read a run's config whichever shape it has, and write actions in the key paths that run understands.

Diagnosis consults the run's config ("``kl_coef=0.001`` is far below the usual 0.01-0.1"). Configs arrive
as rlcockpit's nested dict (``actor.optim.lr``), as verl's (``actor_rollout_ref.actor.optim.lr``), flat
with dotted keys, or seed-article style (``kl_coef``, ``ppo_config.target_kl``, ``kl_controller.type``).
:class:`RunConfigView` answers questions in rlcockpit key names for all of them, and
:func:`make_action` renders a suggested change with rlcockpit keys and verl keys side by side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from rlcockpit.health.findings import Action

# advice key -> verl key path (None: verl has no equivalent). Advice names its changes in rlcockpit's key
# names; a knob only verl has (vLLM's gpu_memory_utilization) is named by the path rlcockpit would give it and
# lands in the verl overrides only (see :func:`trainer_keys`).
VERL_KEYS: dict[str, str | None] = {
    "actor.optim.lr": "actor_rollout_ref.actor.optim.lr",
    "actor.optim.lr_warmup_steps_ratio": "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio",
    "actor.optim.warmup_style": "actor_rollout_ref.actor.optim.warmup_style",
    "algorithm.kl_ctrl.kl_coef": "algorithm.kl_ctrl.kl_coef",
    "algorithm.kl_ctrl.type": "algorithm.kl_ctrl.type",
    "algorithm.kl_ctrl.target_kl": "algorithm.kl_ctrl.target_kl",
    "algorithm.use_kl_in_reward": "algorithm.use_kl_in_reward",
    "actor.use_kl_loss": "actor_rollout_ref.actor.use_kl_loss",
    "actor.kl_loss_coef": "actor_rollout_ref.actor.kl_loss_coef",
    "actor.entropy_coeff": "actor_rollout_ref.actor.entropy_coeff",
    "actor.clip_ratio": "actor_rollout_ref.actor.clip_ratio",
    "actor.clip_ratio_high": "actor_rollout_ref.actor.clip_ratio_high",
    "actor.grad_clip": "actor_rollout_ref.actor.grad_clip",
    "actor.ppo_epochs": "actor_rollout_ref.actor.ppo_epochs",
    "actor.target_kl": None,
    "actor.ppo_micro_batch_size": "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor.model.enable_gradient_checkpointing": "actor_rollout_ref.model.enable_gradient_checkpointing",
    "actor.model.path": "actor_rollout_ref.model.path",
    "rollout.temperature": "actor_rollout_ref.rollout.temperature",
    "rollout.n": "actor_rollout_ref.rollout.n",
    "rollout.gpu_memory_utilization": "actor_rollout_ref.rollout.gpu_memory_utilization",  # verl only
    "data.max_response_length": "data.max_response_length",
    "data.dataloader_num_workers": "data.dataloader_num_workers",  # verl only
    "algorithm.filter_groups.enable": "algorithm.filter_groups.enable",
    "data.train_batch_size": "data.train_batch_size",
    "critic.optim.lr": "critic.optim.lr",
    "trainer.total_training_steps": "trainer.total_training_steps",
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


def _get_path(cfg: Mapping[str, Any], path: str) -> Any:
    """Value at dotted ``path`` in nested ``cfg`` (also accepts flat dotted keys at any level)."""
    if path in cfg:
        return cfg[path]
    head, _, rest = path.partition(".")
    if rest and isinstance(cfg.get(head), Mapping):
        return _get_path(cfg[head], rest)
    return None


class RunConfigView:
    """rlcockpit-named view over any run config shape (``None`` or ``{}`` is fine: every answer is ``None``)."""

    def __init__(self, config: Mapping[str, Any] | None) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"run_config must be a mapping, got {type(config).__name__}")
        self.raw: Mapping[str, Any] = config or {}
        # verl runs (watched, imported or logged in-process) are marked framework=verl even without a config
        # rlcockpit's own trainer stores its config in verl's shape too, marked framework=rlcockpit: its actions
        # stay in rlcockpit keys (short forms the trainer accepts), so rlcockpit-only knobs are not dropped
        self.is_verl = self.raw.get("framework") != "rlcockpit" and (
            self.raw.get("framework") == "verl"
            or _get_path(self.raw, "actor_rollout_ref") is not None
            or any(str(k).startswith("actor_rollout_ref.") for k in self.raw)
        )
        # answers are memoised (advice asks ~20 questions per finding, on the tracking writer thread);
        # :meth:`revalidate` drops them when a top-level section of the config was added or replaced
        self._memo: dict[str, Any] = {}
        self._sections: tuple[Any, ...] = tuple(self.raw.values())

    def revalidate(self) -> None:
        """Forget memoised answers if the config changed since they were computed (``run.config.update`` adds
        or replaces top-level entries; an in-place edit deep inside a section is not noticed)."""
        sections = self._sections
        if len(sections) != len(self.raw) or any(a is not b for a, b in zip(sections, self.raw.values())):
            self._memo.clear()
            self._sections = tuple(self.raw.values())

    def get(self, key: str, default: Any = None) -> Any:
        """The value of rlcockpit key ``key`` in this config, looked up in every shape we know."""
        try:
            value = self._memo[key]
        except KeyError:
            value = self._memo[key] = self._lookup(key)
        return default if value is None else value

    def memo(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, remembered until the config changes (see :meth:`revalidate`): for answers derived from
        several keys, such as the config causes advice ranks."""
        key = "\0" + name  # cannot collide with a config key
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def _lookup(self, key: str) -> Any:
        candidates = [key]
        verl = VERL_KEYS.get(key)
        if verl:
            candidates.insert(0 if self.is_verl else 1, verl)
        candidates.extend(ALIASES.get(key, ()))
        for path in candidates:
            value = _get_path(self.raw, path)
            if value is not None:
                return value
        return None

    def number(self, key: str) -> float | None:
        """``get`` as a float (``None`` when missing or not numeric)."""
        value = self.get(key)
        if isinstance(value, bool):
            return float(value)
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    def flag(self, key: str) -> bool | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)

    def model_size_b(self) -> float | None:
        """Model size in billions of parameters: parsed from the model path (``Qwen2.5-7B`` -> 7.0), or for
        rlcockpit's built-in ``tiny`` model estimated from its ``actor.model.tiny`` shape (~0.004B). ``None``
        when unknown: advice must then not compare the run against size-based norms."""
        return self.memo("model_size_b", self._model_size_b)

    def _model_size_b(self) -> float | None:
        path = str(self.get("actor.model.path") or "")
        if path == "tiny":
            hidden = self.number("actor.model.tiny.hidden_size") or 256.0
            layers = self.number("actor.model.tiny.num_layers") or 4.0
            inter = self.number("actor.model.tiny.intermediate_size") or 4 * hidden
            return layers * (4 * hidden * hidden + 3 * hidden * inter) / 1e9  # attention + MLP weights
        match = re.search(r"(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z])", path.rsplit("/", 1)[-1])
        if not match:
            return None
        size = float(match.group(1))
        return size / 1000.0 if match.group(2).lower() == "m" else size

    def key_for(self, key: str) -> str:
        """The key path to write ``key`` as in this run's own config shape."""
        if self.is_verl:
            return VERL_KEYS.get(key) or key
        return key


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@lru_cache(maxsize=1)
def trainer_keys() -> frozenset[str]:
    """Every key rlcockpit's trainer config accepts (``rlcockpit train ... key=value``), as handed down by
    the top-level wiring (``PROVIDERS["trainer_keys"]``, see :mod:`rlcockpit.defaults`): health never
    imports trainer code."""
    from rlcockpit.registry import PROVIDERS

    return frozenset(PROVIDERS.get("trainer_keys")()) if "trainer_keys" in PROVIDERS else frozenset()


def make_action(view: RunConfigView | None, title: str, changes: Mapping[str, Any], why: str = "") -> Action:
    """An :class:`Action` setting ``changes`` (advice keys -> values).

    ``overrides`` are written in the run's own shape, as users paste them back into the same launcher: verl
    paths for a verl config (keys verl lacks left out), else rlcockpit trainer keys (keys the trainer lacks
    left out; the trainer's guardrails apply these). ``verl_overrides`` always carries verl's paths where verl
    has the key. An action whose knob exists only in verl thus has empty ``overrides`` for an rlcockpit run.
    """
    is_verl = bool(view and view.is_verl)
    ours_keys = trainer_keys()
    verl = [f"{VERL_KEYS[k]}={format_value(v)}" for k, v in changes.items() if VERL_KEYS.get(k)]
    if is_verl:
        ours = list(verl)
    else:
        ours = [f"{k}={format_value(v)}" for k, v in changes.items() if k in ours_keys]
    return Action(title=title, overrides=ours, verl_overrides=verl, why=why)
