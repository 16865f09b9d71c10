"""Read a run's config whichever shape it has, and write actions in the key paths that run understands.

Diagnosis consults the run's config ("``kl_coef=0.001`` is far below the usual 0.01-0.1"). Configs arrive
as rlcockpit's nested dict (``actor.optim.lr``), as verl's (``actor_rollout_ref.actor.optim.lr``), as TRL's
``GRPOConfig`` (``learning_rate``, ``beta``, ``num_generations``), flat with dotted keys, or seed-article style
(``kl_coef``, ``ppo_config.target_kl``, ``kl_controller.type``). :class:`RunConfigView` answers questions in
rlcockpit key names for all of them, and :func:`make_action` writes a suggested change in the run's own
vocabulary (verl paths for a verl run, ``GRPOConfig`` names for a TRL run, trainer keys for ours), so what a
diagnosis prints can be pasted back into the launcher the run came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from rlcockpit.health.findings import Action
from rlcockpit.metrics.keys import ALIASES, TRL_KEYS, VERL_KEYS

FRAMEWORKS = ("rlcockpit", "verl", "trl")
# the free-form keyword arguments a launcher hands its reward function: a key below one is that run's own knob
REWARD_KWARGS = {"rlcockpit": "reward.kwargs", "verl": "custom_reward_function.reward_kwargs"}
# knobs only rlcockpit's trainer has, under the verl-shaped paths its config uses
RLCOCKPIT_PATHS: dict[str, str] = {"actor.target_kl": "actor_rollout_ref.actor.target_kl"}
# trainer settings verl does not have: a verl-shaped config carrying one was written by rlcockpit's trainer
RLCOCKPIT_MARKERS = ("trainer.preflight", "trainer.rlcockpit_dir", "trainer.log_samples_freq")

# advice key -> the advice keys that act in its place where verl's precedence rules make it change nothing
# (``PROVIDERS["verl_inactive_reason"]``): low/high clip over ``clip_ratio``; the KL coefficient of whichever KL
# path (``use_kl_loss`` / ``use_kl_in_reward``) the run has on. The first group whose keys all act is proposed.
ACTING_INSTEAD: dict[str, tuple[tuple[str, ...], ...]] = {
    "actor.clip_ratio": (("actor.clip_ratio_low", "actor.clip_ratio_high"),),
    "actor.kl_loss_coef": (("algorithm.kl_ctrl.kl_coef",),),
    "algorithm.kl_ctrl.kl_coef": (("actor.kl_loss_coef",),),
}

_MISSING = object()


def _get_path(cfg: Mapping[str, Any], path: str) -> Any:
    """Value at dotted ``path`` in nested ``cfg`` (also accepts flat dotted keys at any level); ``None`` if absent."""
    found = _find_path(cfg, path)
    return None if found is _MISSING else found


def _find_path(cfg: Mapping[str, Any], path: str) -> Any:
    """Like :func:`_get_path`, but an explicit ``None`` is returned as such and a missing key as ``_MISSING``."""
    if path in cfg:
        return cfg[path]
    head, _, rest = path.partition(".")
    if rest and isinstance(cfg.get(head), Mapping):
        return _find_path(cfg[head], rest)
    return _MISSING


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class RunConfigView:
    """rlcockpit-named view over any run config shape (``None`` or ``{}`` is fine: every answer is ``None``)."""

    def __init__(self, config: Mapping[str, Any] | None) -> None:
        if config is not None and not isinstance(config, Mapping):
            raise TypeError(f"run_config must be a mapping, got {type(config).__name__}")
        self.raw: Mapping[str, Any] = config or {}
        self.framework = detect_framework(self.raw)
        self.is_verl = self.framework == "verl"
        self.is_trl = self.framework == "trl"
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
        trl = TRL_KEYS.get(key)
        if trl and self.is_trl:
            candidates.insert(0, trl)
        candidates.extend(ALIASES.get(key, ()))
        for path in candidates:
            value = _get_path(self.raw, path)
            if value is not None:
                return value
        return None

    def number(self, key: str) -> float | None:
        """``get`` as a float (``None`` when missing or not numeric)."""
        return _as_number(self.get(key))

    def flag(self, key: str) -> bool | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)

    def current(self, key: str) -> Any:
        """The value advice key ``key`` has when this run runs: its config's value, else (a verl or rlcockpit
        config that is known, i.e. not empty) the framework's default (:func:`trainer_defaults`). ``None`` when neither says: advice then falls back to the usual
        values. Advice values are relative to this (``lr`` 10x below the run's)."""
        value = self.get(key)
        if value is None and (path := VERL_KEYS.get(key) or RLCOCKPIT_PATHS.get(key)):
            value = self.effective_verl().get(path)
        return value

    def current_number(self, key: str) -> float | None:
        return _as_number(self.current(key))

    def effective_verl(self) -> dict[str, Any]:
        """verl path -> the value this run runs with, by verl's (and rlcockpit's trainer's) defaults overlaid with
        the run's config; empty for TRL runs and unknown (empty) configs. An explicit ``null`` in the config
        counts (verl before 0.5 wrote ``clip_ratio_low: null``)."""
        return self.memo("effective_verl", self._effective_verl)

    def _effective_verl(self) -> dict[str, Any]:
        if self.is_trl or not self.raw:
            return {}
        values = dict(trainer_defaults(self.framework))
        for path in values:
            found = _find_path(self.raw, path)
            if found is not _MISSING:
                values[path] = found
        for key, path in (*VERL_KEYS.items(), *RLCOCKPIT_PATHS.items()):
            if path and (value := self.get(key)) is not None:
                values[path] = value
        return values

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

    def key_for(self, key: str) -> str | None:
        """The key to write advice key ``key`` as in this run's own vocabulary (``None``: the run's launcher has
        no such knob): verl paths for verl, ``GRPOConfig`` names for TRL, and for rlcockpit's trainer its short
        keys (``actor.optim.lr``, ``actor.target_kl``), which its guardrails apply and ``rlcockpit train``
        accepts, else the verl path it accepts."""
        home = key.rpartition(".")[0]
        if home in REWARD_KWARGS.values():  # a reward function's own keyword argument, where its launcher has them
            return key if REWARD_KWARGS.get(self.framework) == home else None
        if self.is_verl:
            return VERL_KEYS.get(key)
        if self.is_trl:
            return TRL_KEYS.get(key)
        known = trainer_keys()
        for path in (key, VERL_KEYS.get(key), RLCOCKPIT_PATHS.get(key)):
            if path and (path in known or not known):
                return path
        return None


def detect_framework(config: Mapping[str, Any]) -> str:
    """"verl", "trl" or "rlcockpit": which launcher's vocabulary a stored run config speaks. Runs watched,
    imported or logged in-process from verl or TRL are marked ``framework``; a bare verl config is recognised
    by ``actor_rollout_ref``, a bare ``GRPOConfig``/``TrainingArguments`` dict by its argument names."""
    return config_framework(config) or "rlcockpit"


def config_framework(config: Mapping[str, Any]) -> str | None:
    """The framework ``config`` itself names or is shaped like (see :func:`detect_framework`); ``None`` when it
    says nothing about it (an empty config, an imported ``trainer_state.json``'s counters)."""
    marked = config.get("framework")
    if marked in FRAMEWORKS:
        return str(marked)
    if _get_path(config, "actor_rollout_ref") is not None or any(str(k).startswith("actor_rollout_ref.") for k in config):
        return "rlcockpit" if any(_get_path(config, m) is not None for m in RLCOCKPIT_MARKERS) else "verl"
    if "learning_rate" in config and ("num_generations" in config or "per_device_train_batch_size" in config):
        return "trl"
    if any(_get_path(config, section) is not None for section in ("actor", "algorithm", "rollout", "trainer")):
        return "rlcockpit"
    return None


# metric names only TRL's trainers log (verl logs these as ``actor/...``, ``response_length/...``): a run with no
# config that tells its framework speaks TRL when it logged them (``train/`` is the prefix W&B and TensorBoard add)
TRL_METRIC_PREFIXES = ("completions/", "rewards/", "clip_ratio/")
TRL_METRIC_NAMES = frozenset({"num_tokens", "reward_std", "frac_reward_zero_std", "learning_rate"})
VERL_METRIC_PREFIXES = ("actor/", "critic/", "response_length/", "timing_s/", "actor_rollout_ref/")


def metrics_framework(keys: Iterable[str]) -> str | None:
    """"trl" when the logged metric ``keys`` are TRL's (some TRL-only name, no verl one), else ``None``."""
    trl = verl = False
    for key in keys:
        name = key[len("train/"):] if key.startswith("train/") else key
        verl = verl or key.startswith(VERL_METRIC_PREFIXES)
        trl = trl or name in TRL_METRIC_NAMES or name.startswith(TRL_METRIC_PREFIXES)
    return "trl" if trl and not verl else None


def with_framework(config: Mapping[str, Any] | None, metric_keys: Iterable[str] = (),
                   meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``config`` marked with the framework the run came from when the config does not say so itself: from the
    run's ``meta`` (importers and integrations record it), else from the metric names it logged. So advice on
    an imported TRL ``trainer_state.json`` (no config stored) is written as ``learning_rate``, ``beta``..."""
    config = dict(config or {})
    if config_framework(config) is None:
        marked = (meta or {}).get("framework")
        framework = str(marked) if marked in FRAMEWORKS else metrics_framework(metric_keys)
        if framework is not None:
            config["framework"] = framework
    return config


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


@lru_cache(maxsize=4)
def trainer_defaults(framework: str) -> dict[str, Any]:
    """verl path -> what a ``framework`` ("verl" or "rlcockpit") run has where its config is silent: verl 0.9.1's
    defaults, which rlcockpit's trainer shares but for a few documented keys (handed down as
    ``PROVIDERS["trainer_defaults"]``: health never imports trainer code; empty without it)."""
    from rlcockpit.registry import PROVIDERS

    return dict(PROVIDERS.get("trainer_defaults")()(framework)) if "trainer_defaults" in PROVIDERS else {}


def _inactive_rule() -> Callable[[str, dict[str, Any]], str | None] | None:
    """verl's precedence rules (``PROVIDERS["verl_inactive_reason"]``: one home, in the trainer's config code)."""
    from rlcockpit.registry import PROVIDERS

    return PROVIDERS.get("verl_inactive_reason")() if "verl_inactive_reason" in PROVIDERS else None


def _verl_path(key: str) -> str | None:
    return VERL_KEYS.get(key) or RLCOCKPIT_PATHS.get(key)


ALREADY_SET = "already the run's value"


def acting_changes(view: RunConfigView, changes: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``changes`` (advice keys -> values) as they act in the run's framework, and why each change left out was.

    For verl and rlcockpit runs each key is checked against the effective config (:meth:`RunConfigView.effective_verl`
    with the other proposed changes applied) by verl's precedence rules: a key that would change nothing there is
    replaced by the keys that act (:data:`ACTING_INSTEAD`: ``clip_ratio`` -> ``clip_ratio_low/high``), or left out
    with the reason. Any framework: a change to the value the run already has is left out."""
    out: dict[str, Any] = {}
    dropped: list[str] = []
    values, rule = view.effective_verl(), _inactive_rule()
    if values and rule is not None:
        proposed = {**values, **{p: v for k, v in changes.items() if (p := _verl_path(k))}}
        for key, value in changes.items():
            path = _verl_path(key)
            why = rule(path, proposed) if path else None
            if why is None:
                out.setdefault(key, value)
                continue
            group = next((g for g in ACTING_INSTEAD.get(key, ()) if all(
                rule(_verl_path(k) or k, {**proposed, **{_verl_path(a) or a: value for a in g}}) is None for k in g)), None)
            if group is None:
                dropped.append(f"{view.key_for(key) or key}={format_value(value)}: changes nothing ({why})")
                continue
            for alt in group:
                out.setdefault(alt, value)
    else:
        out = dict(changes)
    for key in list(out):
        current = view.current(key)
        if current is not None and format_value(current) == format_value(out[key]):
            dropped.append(f"{view.key_for(key) or key}={format_value(out.pop(key))}: {ALREADY_SET}")
    return out, dropped


def _render(changes: Mapping[str, Any], name: Callable[[str], str | None]) -> list[str]:
    """``key=value`` texts for ``changes`` under the naming ``name`` (keys it cannot name are left out; two
    advice keys naming one knob, as TRL's ``beta`` for both KL coefficients, keep the first value)."""
    out: dict[str, str] = {}
    for key, value in changes.items():
        target = name(key)
        if target and target not in out:
            out[target] = f"{target}={format_value(value)}"
    return list(out.values())


def make_action(view: RunConfigView | None, title: str, changes: Mapping[str, Any], why: str = "") -> Action:
    """An :class:`Action` setting ``changes`` (advice keys -> values).

    ``overrides`` are written in the run's own vocabulary, as users paste them back into the same launcher:
    verl paths for a verl config (keys verl lacks left out), ``GRPOConfig`` names for a TRL run (keys TRL
    lacks left out), else rlcockpit trainer keys (keys the trainer lacks left out; the trainer's guardrails
    apply these). ``verl_overrides`` carries verl's paths where verl has the key (empty for TRL runs, whose
    users do not launch verl). An action whose knob exists only in verl thus has empty ``overrides`` for an
    rlcockpit run. ``changes`` itself is kept (advice keys) so diagnosis can merge actions by knob.
    """
    view = view if view is not None else RunConfigView(None)
    changes, dropped = acting_changes(view, changes)
    verl = _render(changes, VERL_KEYS.get) if not view.is_trl else []
    ours = _render(changes, view.key_for)
    return Action(title=title, overrides=ours, verl_overrides=verl, why=why,
                  changes={k: v for k, v in changes.items()}, dropped=dropped)
