"""Trainer configuration: typed dataclasses with verl's key names, YAML presets, dotted overrides.

Why dataclasses and not a free-form dict: a typo in a long command line (``actor.optim.lrr=1e-5``)
must fail before minutes of model loading, naming the closest valid key, and a value of the wrong
type must fail naming the key and the type it expects.  The resolved config is a plain dict
(:func:`to_dict`) that is stored with the run.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml


@dataclass
class KLCtrlConfig:
    type: str = "fixed"  # fixed | adaptive
    kl_coef: float = 0.001
    target_kl: float = 0.1
    horizon: int = 10000


@dataclass
class FilterGroupsConfig:
    """DAPO dynamic sampling: drop groups whose rewards are all equal and refill the batch."""

    enable: bool = False
    max_num_gen_batches: int = 4  # extra generation rounds allowed per step (0 = unlimited)


@dataclass
class AlgorithmConfig:
    adv_estimator: str = "grpo"
    gamma: float = 1.0
    lam: float = 1.0
    norm_adv_by_std_in_grpo: bool = True
    use_kl_in_reward: bool = False
    kl_penalty: str = "kl"
    kl_ctrl: KLCtrlConfig = field(default_factory=KLCtrlConfig)
    filter_groups: FilterGroupsConfig = field(default_factory=FilterGroupsConfig)


@dataclass
class OptimConfig:
    lr: float = 1e-6
    lr_warmup_steps_ratio: float = 0.0
    warmup_style: str = "constant"  # constant | cosine
    weight_decay: float = 0.01
    betas: list[float] = field(default_factory=lambda: [0.9, 0.999])


@dataclass
class TinyModelConfig:
    """The built-in demo model (``actor.model.path=tiny``): a small Qwen2 built from a config."""

    hidden_size: int = 256
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 1024
    sft_steps: int = 200  # supervised warm-up on the task before RL (correct answers)
    sft_lr: float = 1e-3
    sft_batch_size: int = 256
    # then a short "sloppy" fine-tune where carries are often forgotten ("07+45=" -> "042"): the model
    # still knows the right answer but no longer prefers it, the situation RL with a verifiable reward fixes
    sft_slip_steps: int = 50
    sft_slip_rate: float = 0.7  # share of the sloppy phase's answers written without their carries
    sft_slip_lr: float = 5e-4
    cache: bool = True  # reuse a warmed-up model built with the same settings (under ~/.cache/rlcockpit)


@dataclass
class ModelConfig:
    path: str = "tiny"  # a local Hugging Face model directory, or the built-in "tiny"
    dtype: str = "fp32"  # fp32 | bf16 (bf16 = autocast on CPU, bf16 weights on CUDA)
    enable_gradient_checkpointing: bool = False
    lora_rank: int = 0  # > 0 enables LoRA via peft; the reference policy is then the adapter-free model
    lora_alpha: int = 16
    target_modules: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)


@dataclass
class ActorConfig:
    clip_ratio: float = 0.2
    clip_ratio_low: float | None = None
    clip_ratio_high: float | None = None
    clip_ratio_c: float = 3.0
    policy_loss: str = "vanilla"
    entropy_coeff: float = 0.0
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "low_var_kl"
    loss_agg_mode: str = "token-mean"
    ppo_epochs: int = 1
    ppo_mini_batch_size: int = 16  # in prompts, as verl (multiplied by rollout.n)
    ppo_micro_batch_size: int | None = None  # in samples; None = the whole mini-batch
    grad_clip: float = 1.0
    target_kl: float | None = None  # stop the PPO epochs early when the measured KL passes it
    # score each distinct prompt/row once (same math, fewer FLOPs); off for models that can't take a KV cache
    share_prefix: bool = True
    optim: OptimConfig = field(default_factory=OptimConfig)
    model: ModelConfig = field(default_factory=ModelConfig)


@dataclass
class CriticConfig:
    """Used by ``algorithm.adv_estimator=gae``; the critic is a value head on ``model.path``."""

    model_path: str | None = None  # None = same architecture and initial weights as the actor
    cliprange_value: float = 0.5
    ppo_epochs: int | None = None  # None = actor.ppo_epochs
    grad_clip: float = 1.0
    loss_agg_mode: str = "token-mean"
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-5))


@dataclass
class RolloutConfig:
    name: str = "hf"  # registry ROLLOUT_ENGINES
    n: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1  # -1 = off (verl)
    val_temperature: float = 0.0  # 0 = greedy validation


@dataclass
class BuiltinDataConfig:
    """The demo task generator used when ``data.train_files`` is empty."""

    name: str = "arith"
    digits: int = 2
    train_size: int = 20000
    val_size: int = 200
    seed: int = 1234


@dataclass
class DataConfig:
    train_files: list[str] = field(default_factory=list)
    val_files: list[str] = field(default_factory=list)
    train_batch_size: int = 16  # prompts per step
    val_batch_size: int = 256
    max_prompt_length: int = 512
    max_response_length: int = 16
    truncation: str = "drop"  # drop | left | right | error, for prompts over max_prompt_length
    shuffle: bool = True
    seed: int = 1
    builtin: BuiltinDataConfig = field(default_factory=BuiltinDataConfig)


@dataclass
class OverlongBufferConfig:
    enable: bool = False
    len: int = 4
    penalty_factor: float = 1.0


@dataclass
class RewardConfig:
    name: str = "arith"  # registry REWARDS
    val_name: str | None = None  # reward used for validation accuracy; None = name
    custom_fn: str | None = None  # path/to/file.py:function (verl's compute_score signature)
    model_path: str | None = None  # local HF sequence-classification reward model
    max_failure_rate: float = 0.2  # stop when this fraction of reward calls has raised
    kwargs: dict[str, Any] = field(default_factory=dict)
    overlong_buffer: OverlongBufferConfig = field(default_factory=OverlongBufferConfig)


@dataclass
class HealthConfig:
    enable: bool = True
    on_critical: str = "warn"  # warn | stop | rollback
    max_rollbacks: int = 3
    reports: list[str] = field(default_factory=list)  # scheduled health reports: 1h, 6h, daily, checkpoint


@dataclass
class TrainerConfig:
    project_name: str = "rlcockpit"
    experiment_name: str | None = None
    total_training_steps: int | None = 100
    total_epochs: int = 1
    save_freq: int = -1
    max_actor_ckpt_to_keep: int | None = None  # None = keep every checkpoint
    test_freq: int = 25
    logger: list[str] = field(default_factory=lambda: ["console", "rlcockpit"])
    default_local_dir: str = "checkpoints/${trainer.project_name}/${trainer.experiment_name}"
    resume_mode: str = "disable"  # disable | auto | <path to a global_step_N directory>
    preflight: str = "warn"  # strict | warn | off
    preflight_skip: list[str] = field(default_factory=list)  # checks to leave out (batch, data, memory...)
    device: str = "auto"  # auto | cpu | cuda
    seed: int = 42
    num_threads: int = 0  # torch threads on CPU; 0 = all cores
    log_samples_freq: int = 10
    num_log_samples: int = 8
    max_consecutive_nonfinite: int = 3
    rlcockpit_dir: str | None = None  # tracking store (else $RLCOCKPIT_DIR, else ./rlcockpit)
    tags: list[str] = field(default_factory=list)


@dataclass
class Config:
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    actor: ActorConfig = field(default_factory=ActorConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    data: DataConfig = field(default_factory=DataConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    health: HealthConfig = field(default_factory=HealthConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    # free-form alert rules/channels in rlcockpit.alerts.config.load_alerts_config's format; passed to init()
    alerts: dict[str, Any] | None = None


class ConfigError(ValueError):
    """A config key or value is invalid; the message names the key."""


# Keys used by the two articles our users learn from (TRL's PPOConfig, older scripts) that verl lacks.
ALIASES: dict[str, str] = {
    "ppo_config.target_kl": "actor.target_kl",
    "target_kl": "actor.target_kl",
    "kl_coef": "algorithm.kl_ctrl.kl_coef",
    "ppo_config.kl_coef": "algorithm.kl_ctrl.kl_coef",
    "init_kl_coef": "algorithm.kl_ctrl.kl_coef",
    "ppo_config.init_kl_coef": "algorithm.kl_ctrl.kl_coef",
    "learning_rate": "actor.optim.lr",
    "ppo_config.learning_rate": "actor.optim.lr",
    "use_wandb": "trainer.logger",  # true -> add "wandb", false -> remove it
}

VALID_LIST_CHOICES: dict[str, tuple[str, ...]] = {"health.reports": ("1h", "6h", "daily", "checkpoint")}
VALID_CHOICES: dict[str, tuple[str, ...]] = {
    "algorithm.kl_ctrl.type": ("fixed", "adaptive"),
    "actor.model.dtype": ("fp32", "bf16"),
    "actor.loss_agg_mode": ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"),
    "data.truncation": ("drop", "left", "right", "error"),
    "health.on_critical": ("warn", "stop", "rollback"),
    "trainer.preflight": ("strict", "warn", "off"),
    "trainer.device": ("auto", "cpu", "cuda"),
    "actor.optim.warmup_style": ("constant", "cosine"),
}


def all_keys(cls: type = Config, prefix: str = "") -> dict[str, Any]:
    """Every dotted leaf key of the config schema mapped to its type annotation."""
    out: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(tp):
            out.update(all_keys(tp, key + "."))
        else:
            out[key] = tp
    return out


def _closest(key: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.4)
    if not close:  # match on the last component, e.g. "actor.lr" -> "actor.optim.lr"
        leaf = key.rsplit(".", 1)[-1]
        close = [c for c in candidates if c.rsplit(".", 1)[-1] == leaf][:1]
    return f" Did you mean {close[0]!r}?" if close else ""


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Check ``value`` against the annotation ``tp`` (ints are accepted for floats)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(key, value, arg)
            except ConfigError:
                continue
        raise ConfigError(f"config key {key!r} expects {_type_name(tp)}, got {value!r} ({type(value).__name__})")
    if origin is list:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            value = [value]  # trainer.logger=console
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} expects a list, got {value!r}")
        (item_tp,) = typing.get_args(tp) or (Any,)
        return [_coerce(f"{key}[{i}]", v, item_tp) for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"config key {key!r} expects a mapping, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-5 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(float(value)) if float(value).is_integer() else _fail(key, value, tp)
            except ValueError:
                pass
    elif tp is str:
        if isinstance(value, bool) and "off" in VALID_CHOICES.get(key, ()):  # YAML 1.1 reads `off` as False
            return "off" if not value else _fail(key, value, tp)
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    raise ConfigError(f"config key {key!r} expects {_type_name(tp)}, got {value!r} ({type(value).__name__})")


def _fail(key: str, value: Any, tp: Any) -> Any:
    raise ConfigError(f"config key {key!r} expects {_type_name(tp)}, got {value!r} ({type(value).__name__})")


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and key not in ("reward.kwargs", "alerts"):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def set_key(cfg: Config, key: str, value: Any, *, notes: list[str] | None = None) -> None:
    """Set one dotted key on ``cfg`` with alias resolution, unknown-key and type checks."""
    schema = all_keys()
    if key not in schema and key in ALIASES:
        target = ALIASES[key]
        if key == "use_wandb":
            loggers = [x for x in cfg.trainer.logger if x != "wandb"]
            value = loggers + ["wandb"] if _coerce(key, value, bool) else loggers
        msg = f"config alias: {key} -> {target}"
        if notes is not None:
            notes.append(msg)
        print(f"[rlcockpit] {msg}")
        key = target
    if key not in schema:
        prefix = key.split(".")[0]
        if prefix == "reward" and key.startswith("reward.kwargs."):
            cfg.reward.kwargs[key.split(".", 2)[2]] = value
            return
        if prefix == "alerts" and key.count(".") >= 1:  # alerts.<section>=... into the free-form dict
            cfg.alerts = dict(cfg.alerts or {})
            cfg.alerts[key.split(".", 1)[1]] = value
            return
        raise ConfigError(f"unknown config key {key!r}.{_closest(key, sorted(schema))}")
    value = _coerce(key, value, schema[key])
    choices = VALID_CHOICES.get(key)
    if choices and value not in choices:
        raise ConfigError(f"config key {key!r} must be one of {', '.join(choices)}; got {value!r}")
    for item in value if key in VALID_LIST_CHOICES and isinstance(value, list) else ():
        if item not in VALID_LIST_CHOICES[key]:
            raise ConfigError(f"config key {key!r}: {item!r} is not one of {', '.join(VALID_LIST_CHOICES[key])}")
    obj: Any = cfg
    *parents, leaf = key.split(".")
    for p in parents:
        obj = getattr(obj, p)
    setattr(obj, leaf, value)


def parse_override(text: str) -> tuple[str, Any]:
    """``"a.b=3e-5"`` -> ``("a.b", 3e-5)``; values are YAML (``[a,b]``, ``null``, ``true``)."""
    text = text.lstrip("+")
    if text.startswith("--"):  # --kl_coef=0.1 as in the articles
        text = text[2:]
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key=value")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError:
        value = raw
    if isinstance(value, str) and value.lower() in ("none", "null", "~"):
        value = None
    return key.strip(), value


def to_plain(obj: Any) -> dict[str, Any]:
    """Accept a dict or an OmegaConf DictConfig and return a plain nested dict."""
    if isinstance(obj, dict):
        return obj
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(obj):
            return OmegaConf.to_container(obj, resolve=True)  # type: ignore[return-value]
    except ImportError:
        pass
    raise ConfigError(f"config must be a mapping, got {type(obj).__name__}")


def apply_dict(cfg: Config, data: Any, *, notes: list[str] | None = None) -> Config:
    for key, value in _flatten(to_plain(data)).items():
        set_key(cfg, key, value, notes=notes)
    return cfg


def preset_names() -> list[str]:
    root = resources.files("rlcockpit") / "presets"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_preset(name: str) -> dict[str, Any]:
    path = resources.files("rlcockpit") / "presets" / f"{name}.yaml"
    if not path.is_file():
        close = difflib.get_close_matches(name, preset_names(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown preset {name!r}.{hint} Known: {', '.join(preset_names())}")
    return yaml.safe_load(path.read_text()) or {}


def load_config(
    preset: str | None = None,
    config_file: str | Path | None = None,
    overrides: list[str] | None = None,
    base: Any = None,
) -> Config:
    """Defaults <- preset <- ``config_file`` <- ``base`` dict/OmegaConf <- dotted overrides."""
    cfg = Config()
    notes: list[str] = []
    if preset:
        apply_dict(cfg, load_preset(preset), notes=notes)
    if config_file:
        path = Path(config_file)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        apply_dict(cfg, yaml.safe_load(path.read_text()) or {}, notes=notes)
    if base is not None:
        apply_dict(cfg, base, notes=notes)
    for text in overrides or []:
        key, value = parse_override(text)
        set_key(cfg, key, value, notes=notes)
    return finalize(cfg)


def finalize(cfg: Config) -> Config:
    """Fill derived defaults and check batch arithmetic before anything heavy starts."""
    t = cfg.trainer
    if not t.experiment_name:
        t.experiment_name = f"{cfg.algorithm.adv_estimator}"
    t.default_local_dir = t.default_local_dir.replace("${trainer.project_name}", t.project_name).replace(
        "${trainer.experiment_name}", t.experiment_name
    )
    a, d, n = cfg.actor, cfg.data, cfg.rollout.n
    if n < 1 or d.train_batch_size < 1:
        raise ConfigError("rollout.n and data.train_batch_size must be >= 1")
    if a.ppo_mini_batch_size < 1 or a.ppo_mini_batch_size > d.train_batch_size:
        raise ConfigError(
            f"actor.ppo_mini_batch_size={a.ppo_mini_batch_size} must be in [1, data.train_batch_size="
            f"{d.train_batch_size}]: it would give zero mini-batches per step"
        )
    mini_samples = a.ppo_mini_batch_size * n
    if a.ppo_micro_batch_size is not None and not (1 <= a.ppo_micro_batch_size <= mini_samples):
        raise ConfigError(
            f"actor.ppo_micro_batch_size={a.ppo_micro_batch_size} must be in [1, ppo_mini_batch_size*rollout.n="
            f"{mini_samples}]: it would give zero micro-batches"
        )
    if a.ppo_epochs < 1:
        raise ConfigError("actor.ppo_epochs must be >= 1")
    if cfg.algorithm.adv_estimator in ("grpo", "rloo") and n < 2:
        raise ConfigError(f"algorithm.adv_estimator={cfg.algorithm.adv_estimator} needs rollout.n >= 2 (groups)")
    return cfg


def to_dict(cfg: Config) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def from_dict(data: dict[str, Any]) -> Config:
    return finalize(apply_dict(Config(), data))
