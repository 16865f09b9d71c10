"""The trainer's config room: verl's key paths and defaults (``schema``), loading YAML and overrides (``load``),
value coercion (``values``), aliases and no-effect keys (``keys``), verl's precedence rules and override
syntax (``verl``); this module is its public face.

Trainer configuration: verl's key paths, verl's YAML and command-line grammar, typed validation.

Why dataclasses and not a free-form dict: a typo in a long command line (``actor_rollout_ref.actor.optim.lrr``)
must fail before minutes of model loading, naming the closest valid key, and a value of the wrong type must
fail naming the key and the type it expects. Why OmegaConf underneath: it is verl's own config library, so
verl's YAML files (interpolations, ``_target_`` entries) and overrides mean here what they mean in verl.

* the schema (keys, defaults, help, allowed values): :mod:`rlcockpit.trainer.config.schema`;
* aliases and verl's engine-only keys: :mod:`rlcockpit.trainer.config.keys`;
* parsing and merging: :mod:`rlcockpit.trainer.config.load`; verl's override grammar, retired flags and
  defaults: :mod:`rlcockpit.trainer.config.verl`; leaf types and choices: :mod:`rlcockpit.trainer.config.values`.

The resolved config is a plain nested dict (:func:`to_dict`) in verl's shape, stored with the run.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from importlib import resources
from pathlib import Path
from typing import Any

from rlcockpit.metrics.keys import SHORT_PREFIXES
from rlcockpit.trainer.config.keys import KEY_ALIASES, canonical_key, no_effect_reason
from rlcockpit.trainer.config.load import ConfigLoader
from rlcockpit.trainer.config.schema import (  # noqa: F401 - the public names of the config package
    OLDER_REWARD_MANAGERS,
    VERL_REWARD_MANAGERS,
    ActorConfig,
    ActorRolloutRefConfig,
    AlgorithmConfig,
    BuiltinDataConfig,
    Config,
    ConfigError,
    CriticConfig,
    CustomRewardFunctionConfig,
    DataConfig,
    FilterGroupsConfig,
    HealthConfig,
    KLCtrlConfig,
    ModelConfig,
    OptimConfig,
    OverlongBufferConfig,
    PolicyLossConfig,
    RewardConfig,
    RewardModelConfig,
    RolloutConfig,
    TinyModelConfig,
    TrainerConfig,
    link_model,
    schema_fields,
)
from rlcockpit.trainer.config.values import coerce
from rlcockpit.trainer.config.verl import parse_override_text

# rlcockpit's older short forms of the canonical prefixes, for key listings (all are accepted as input)
_SHORT = tuple((verl, short) for short, verl in SHORT_PREFIXES)


def schema_keys() -> dict[str, Any]:
    """Every canonical (verl-path) leaf key mapped to its type annotation."""
    return {k: v.type for k, v in schema_fields().items()}


def all_keys() -> dict[str, Any]:
    """Every key name the trainer accepts for a setting that does something: the canonical verl paths plus
    rlcockpit's short forms (``actor.optim.lr``) and the named aliases (``ppo_config.cliprange``)."""
    out = schema_keys()
    for key, tp in list(out.items()):
        for long, short in _SHORT:
            if key.startswith(long):
                out.setdefault(short + key[len(long):], tp)
                break
    for alias in KEY_ALIASES:
        target, _ = canonical_key(alias)
        if target in out:
            out.setdefault(alias, out[target])
            for long, short in _SHORT:
                if alias.startswith(long):
                    out.setdefault(short + alias[len(long):], out[target])
    out["actor.policy_loss"] = out["actor_rollout_ref.actor.policy_loss.loss_mode"]
    return out


def canonical(key: str) -> str:
    """The canonical verl path of ``key`` (an alias or short form)."""
    return canonical_key(key)[0]


def parse_override(text: str) -> tuple[str, Any]:
    """``"a.b=3e-5"`` -> ``("a.b", 3e-5)``; values follow OmegaConf's YAML rules; ``+``/``++`` are dropped."""
    ov = parse_override_text(text)
    if ov.op == "delete":
        raise ConfigError(f"override {text!r}: '~' deletes a key; it has no value to apply here")
    return ov.key, ov.value


def set_key(cfg: Config, key: str, value: Any, *, notes: list[str] | None = None) -> None:
    """Set one key (canonical, short form or alias) on ``cfg`` with the same checks as loading."""
    loader = ConfigLoader(values={"trainer.logger": list(cfg.trainer.logger)})  # use_wandb edits the list
    loader.set(key, value)
    if loader.aliases and notes is not None:
        notes.extend(f"config alias: {a} -> {c}" for a, c in loader.aliases.items())
    for k, v in loader.values.items():
        owner = next((f for f in _free_form() if k.startswith(f + ".")), None)
        if owner is not None:
            merged = copy.deepcopy(_get(cfg, owner) or {})
            _deep_set(merged, k[len(owner) + 1:], v)
            v, k = merged, owner
        loader._place(cfg, k, v, schema_fields())


def apply_dict(cfg: Config, data: Any, *, notes: list[str] | None = None) -> Config:
    """Apply a nested mapping (or OmegaConf config) onto ``cfg`` key by key, with :func:`set_key`'s checks."""
    from rlcockpit.trainer.config.load import flatten, to_plain

    for key, value in flatten(dict(to_plain(data))):
        set_key(cfg, key, value, notes=notes)
    return cfg


def _free_form() -> tuple[str, ...]:
    from rlcockpit.trainer.config.load import free_form_keys

    return free_form_keys()


def _get(cfg: Config, key: str) -> Any:
    obj: Any = cfg
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def get_key(cfg: Config, key: str) -> Any:
    """The value of ``key`` (any accepted spelling) in ``cfg``; engine-only keys come from ``cfg.extras``."""
    canon = canonical(key)
    if canon in schema_fields():
        return _get(cfg, canon)
    return cfg.extras.get(canon)


# --------------------------------------------------------------------------- presets and loading

def preset_names() -> list[str]:
    root = resources.files("rlcockpit") / "presets"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_preset(name: str) -> dict[str, Any]:
    import yaml

    path = resources.files("rlcockpit") / "presets" / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(name, preset_names(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown preset {name!r}.{hint} Known: {', '.join(preset_names())}")
    return yaml.safe_load(path.read_text()) or {}


def read_config_file(path: str | Path) -> Any:
    """A YAML config file as OmegaConf reads it (interpolations are kept for after the merge)."""
    from omegaconf import OmegaConf

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file not found: {path}")
    try:
        data = OmegaConf.load(path)
    except Exception as exc:  # noqa: BLE001 - yaml.ScannerError, omegaconf GrammarParseError...
        raise ConfigError(f"{path}: not a readable YAML config: {exc}") from None
    if not OmegaConf.is_dict(data):
        raise ConfigError(f"{path}: a config file must be a mapping at the top level")
    return data


def load_config(preset: str | None = None, config_file: str | Path | None = None,
                overrides: list[str] | None = None, base: Any = None, *, validate: bool = True,
                log: Any = print) -> Config:
    """Defaults <- preset <- ``config_file`` <- ``base`` dict/OmegaConf <- overrides; ``validate=False``
    skips the batch-arithmetic checks of :func:`finalize` (preflight reports those as a row)."""
    loader = ConfigLoader()
    if preset:
        loader.add_mapping(load_preset(preset), f"preset {preset}")
    if config_file:
        loader.add_mapping(read_config_file(config_file), str(config_file))
    if base is not None:
        loader.add_mapping(base, "config")
    for text in overrides or []:
        loader.add_override(text)
    cfg = loader.build()
    if log is not None:
        if cfg.aliases:
            log("[rlcockpit] config aliases: " + ", ".join(f"{a} -> {c}" for a, c in cfg.aliases.items()))
        for note in cfg.notes:
            log(f"[rlcockpit] config: {note}")
    return finalize(cfg) if validate else cfg


def finalize(cfg: Config) -> Config:
    """Check batch arithmetic and value ranges before anything heavy starts."""
    a, d, n = cfg.actor, cfg.data, cfg.rollout.n
    if n < 1 or d.train_batch_size < 1:
        raise ConfigError("actor_rollout_ref.rollout.n and data.train_batch_size must be >= 1")
    dynamic = dynamic_batching(cfg)
    if a.ppo_mini_batch_size < 1 or (a.ppo_mini_batch_size > d.train_batch_size and not dynamic):
        raise ConfigError(
            f"actor_rollout_ref.actor.ppo_mini_batch_size={a.ppo_mini_batch_size} must be in [1, data.train_batch_size="
            f"{d.train_batch_size}]: it would give zero mini-batches per step")
    mini_samples = a.ppo_mini_batch_size * n
    micro = micro_batch_size(cfg)
    if micro is not None and not dynamic and not (1 <= micro <= mini_samples):
        which = "ppo_micro_batch_size_per_gpu" if a.ppo_micro_batch_size_per_gpu is not None else "ppo_micro_batch_size"
        raise ConfigError(
            f"actor_rollout_ref.actor.{which}={micro} must be in [1, ppo_mini_batch_size*rollout.n="
            f"{mini_samples}]: it would give zero micro-batches")
    if a.ppo_epochs < 1:
        raise ConfigError("actor_rollout_ref.actor.ppo_epochs must be >= 1")
    if cfg.algorithm.adv_estimator in ("grpo", "rloo") and n < 2:
        raise ConfigError(f"algorithm.adv_estimator={cfg.algorithm.adv_estimator} needs "
                          "actor_rollout_ref.rollout.n >= 2 (groups)")
    ob = cfg.reward.overlong_buffer
    if ob.enable:  # verl's DAPO reward manager asserts the same
        limit = ob.max_resp_len or d.max_response_length
        if not 0 < ob.len <= limit:
            raise ConfigError(f"reward.overlong_buffer.len={ob.len} must be in [1, max_resp_len={limit}] "
                              "(reward.overlong_buffer.max_resp_len, else data.max_response_length)")
    manager = cfg.reward_model.reward_manager
    if manager is not None and manager not in (*VERL_REWARD_MANAGERS, *OLDER_REWARD_MANAGERS):
        # verl 0.9.1 raises "Unknown reward manager" when its workers start; scoring with the naive manager instead
        # would train on another reward than the one asked for
        key = next((a for a, c in cfg.aliases.items() if c == "reward_model.reward_manager"), "reward_model.reward_manager")
        raise ConfigError(f"{key}={manager}: not a verl reward manager (verl 0.9.1 registers "
                          f"{', '.join(VERL_REWARD_MANAGERS)}; rlcockpit also runs the older "
                          f"{' and '.join(OLDER_REWARD_MANAGERS)}; a custom manager class, reward.reward_manager.source="
                          "importlib, is not run here). A reward computed another way (an LLM judge, a sandbox) goes in "
                          "a custom_reward_function.path file, async def allowed")
    rng = cfg.algorithm.kl_ctrl.kl_coef_range
    if rng is not None and (len(rng) != 2 or rng[0] > rng[1] or rng[0] < 0):
        raise ConfigError(f"algorithm.kl_ctrl.kl_coef_range={rng} must be [lo, hi] with 0 <= lo <= hi")
    from rlcockpit.trainer.algo_args import validate_algorithm

    validate_algorithm(cfg, ConfigError)  # rollout correction settings, dro_beta, gdpo keys
    return cfg


def dynamic_batching(cfg: Config) -> bool:
    """``actor_rollout_ref.actor.use_dynamic_bsz``: verl then packs micro-batches by token count and skips its
    batch-size checks (``validate_config``, ``ActorConfig.validate``), so a mini-batch larger than the step's batch
    is one mini-batch of the whole batch, not an error. rlcockpit's update clamps the same way
    (``update.ppo.mini_batch_size``); the key itself steers only verl's engines and is kept in ``cfg.extras``."""
    return bool(cfg.extras.get("actor_rollout_ref.actor.use_dynamic_bsz"))


def micro_batch_size(cfg: Config) -> int | None:
    """Samples per gradient-accumulation step: ``ppo_micro_batch_size_per_gpu``, else verl's global form
    (the same thing on one device); None = the whole mini-batch."""
    a = cfg.actor
    return a.ppo_micro_batch_size_per_gpu if a.ppo_micro_batch_size_per_gpu is not None else a.ppo_micro_batch_size


# --------------------------------------------------------------------------- output

def _deep_set(root: dict[str, Any], key: str, value: Any) -> None:
    node = root
    *parents, leaf = key.split(".")
    for p in parents:
        nxt = node.get(p)
        if not isinstance(nxt, dict):
            nxt = node[p] = {}
        node = nxt
    node[leaf] = value


def to_dict(cfg: Config) -> dict[str, Any]:
    """The config in verl's nested shape, engine-only keys included (what is stored with the run)."""
    out = {f.name: copy.deepcopy(dataclasses.asdict(getattr(cfg, f.name)) if dataclasses.is_dataclass(
        getattr(cfg, f.name)) else getattr(cfg, f.name)) for f in dataclasses.fields(cfg) if not f.metadata.get("internal")}
    for key, value in cfg.extras.items():
        _deep_set(out, key, copy.deepcopy(value))
    out["framework"] = "rlcockpit"  # who wrote it (integrations write "verl" / "trl"); health reads keys accordingly
    return out


def from_dict(data: dict[str, Any]) -> Config:
    loader = ConfigLoader()
    loader.add_mapping(data, "stored config")
    return finalize(loader.build())


# schema keys only the vLLM engine reads: with the built-in engine standing in they do nothing
ENGINE_ONLY_KEYS = ("actor_rollout_ref.rollout.tensor_model_parallel_size",
                    "actor_rollout_ref.rollout.gpu_memory_utilization", "actor_rollout_ref.rollout.enforce_eager",
                    "actor_rollout_ref.rollout.free_cache_engine")


def engine_fallback(cfg: Config) -> str | None:
    """Why the built-in engine will run (``rollout.name=hf``, vllm not importable, sglang not built in), else None."""
    import importlib.util

    name = cfg.rollout.name
    if name in ("hf", "torch"):
        return f"rollout.name={name}"
    if name == "sglang":
        return "rlcockpit has no SGLang engine"
    if name == "vllm" and importlib.util.find_spec("vllm") is None:
        return "vllm is not installed in this environment"
    return None


def no_effect_table(cfg: Config) -> list[tuple[str, list[str]]]:
    """``[(why, [keys])]`` for the accepted keys that steer only verl's engines, grouped by reason; with
    ``rollout.name=vllm|sglang`` falling back to the built-in engine, the vLLM settings given too."""
    groups: dict[str, list[str]] = {}
    for key in cfg.extras:
        why = no_effect_reason(key) or "added with '+': not a key rlcockpit reads (stored with the run)"
        groups.setdefault(why, []).append(key)
    fallback = engine_fallback(cfg)
    if fallback:
        from rlcockpit.trainer.config.load import defaults_table

        defaults, values = defaults_table(), flat_values(cfg)
        given = [k for k in ENGINE_ONLY_KEYS if values.get(k) != defaults.get(k)]
        if given:
            groups[f"read by the vLLM engine only ({fallback}: the built-in engine runs)"] = given
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def flat_values(cfg: Config) -> dict[str, Any]:
    """Every schema key's value in ``cfg``, by dotted key."""
    out = {}
    for key in schema_fields():
        value: Any = cfg
        for part in key.split("."):
            value = getattr(value, part)
        out[key] = value
    return out


def coerce_value(key: str, value: Any) -> Any:
    """``value`` checked against the schema type of ``key`` (for callers outside the loader)."""
    info = schema_fields()[canonical(key)]
    return coerce(info.key, value, info.type)
