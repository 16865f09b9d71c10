"""Reading configs the way verl users write them: verl YAML, command-line overrides, OmegaConf interpolation.

The pipeline (:class:`ConfigLoader`): every source (dataclass defaults, preset, ``--config`` file, a dict,
command-line overrides) is flattened to dotted keys, each key is mapped to its canonical verl path
(aliases), the sources are merged in order into one flat table, the table becomes one OmegaConf tree so
``${...}`` interpolations (``${oc.select:...}`` in verl's generated YAML, relative ``${.x}``) resolve against
the merged result, and then every leaf is classified: a schema key is type-checked and set, a verl engine
key is kept as an extra (no effect here), anything else is an unknown key. All problems are reported
together, so a pasted command line is fixed in one pass instead of one key per run.

The override grammar, retired verl flags and verl's defaults: :mod:`rlcockpit.trainer.config.verl`; what a
leaf may hold: :mod:`rlcockpit.trainer.config.values`.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rlcockpit.trainer.config.keys import (
    IGNORED_LEAVES,
    MATH_WARNINGS,
    NULL_IS_DEFAULT,
    SHORTHAND,
    UNSUPPORTED,
    canonical_key,
    explicit_no_effect_keys,
    no_effect_reason,
    only_a_wildcard_knows,
    verl_keys,
)
from rlcockpit.trainer.config.schema import Config, ConfigError, FieldInfo, schema_fields
from rlcockpit.trainer.config.values import check_choice, coerce, takes_text
from rlcockpit.trainer.config.verl import (
    apply_verl_defaults,
    loggers_with_wandb,
    parse_override_text,
    retired_flag_settings,
)

MISSING = "???"  # verl's YAML placeholder for a value the user must give

# --------------------------------------------------------------------------- sources

def flatten(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested mapping -> ``[(dotted key, leaf)]``; empty mappings and lists are leaves."""
    out: list[tuple[str, Any]] = []
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.extend(flatten(v, key + "."))
        else:
            out.append((key, v))
    return out


def to_plain(obj: Any) -> dict[str, Any]:
    """A dict or an OmegaConf DictConfig (unresolved: interpolations resolve after merging)."""
    if isinstance(obj, dict):
        return obj
    from omegaconf import OmegaConf

    if OmegaConf.is_config(obj):
        return OmegaConf.to_container(obj, resolve=False)  # type: ignore[return-value]
    raise ConfigError(f"config must be a mapping, got {type(obj).__name__}")


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for key, value in flat.items():
        node = root
        *parents, leaf = key.split(".")
        for i, p in enumerate(parents):
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"config key {'.'.join(parents[:i + 1])!r} is set to a value and also has "
                                  f"sub-keys ({key!r})")
            node = nxt
        if isinstance(node.get(leaf), dict) and isinstance(value, dict):
            node[leaf] = {**node[leaf], **value}
        elif isinstance(node.get(leaf), dict) and node[leaf]:
            raise ConfigError(f"config key {key!r} is a section; it cannot be set to {value!r}")
        else:
            node[leaf] = value
    return root


@dataclass
class ConfigLoader:
    """Merges sources into one flat table of canonical keys, then builds a :class:`Config`."""

    values: dict[str, Any] = field(default_factory=dict)
    typed_as: dict[str, str] = field(default_factory=dict)  # canonical key -> as the user wrote it
    aliases: dict[str, str] = field(default_factory=dict)  # alias used -> canonical key
    added: set[str] = field(default_factory=set)  # keys added with + / ++
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.values:
            self.values = defaults_table()

    # ---- input ----------------------------------------------------------------------------------
    def add_mapping(self, data: Any, source: str) -> None:
        data = dict(to_plain(data))
        if "defaults" in data and isinstance(data["defaults"], list):
            data.pop("defaults")
            self.notes.append(f"{source}: Hydra 'defaults:' list ignored (rlcockpit reads the keys given; verl's "
                              "_generated_ppo_trainer.yaml is the flattened form)")
        for key, value in flatten(data):
            self.set(key, value, source=source)

    def add_override(self, text: str) -> None:
        ov = parse_override_text(text)
        if ov.op == "delete":
            self.delete(ov.key)
        else:
            self.set(ov.key, ov.value, source="command line", added=ov.op in ("add", "force"))

    def set(self, key: str, value: Any, *, source: str = "", added: bool = False) -> None:
        if key.rsplit(".", 1)[-1] in IGNORED_LEAVES or value == MISSING or key == "framework":
            return  # Hydra plumbing, unset placeholders, and the marker to_dict writes
        if isinstance(value, dict) and value and canonical_key(key)[0] not in SHORTHAND:
            for sub, leaf in flatten(value):  # a section given as a mapping: each leaf by its own alias
                self.set(f"{key}.{sub}", leaf, source=source, added=added)
            return
        canonical, is_alias = canonical_key(key)
        if canonical in SHORTHAND and not isinstance(value, dict):
            canonical = f"{canonical}.{SHORTHAND[canonical]}"
            is_alias = True
        if is_alias:
            if value is None:  # verl's YAML keeps renamed keys as null placeholders: not a setting
                return
            self.aliases.setdefault(key, canonical)
        if canonical == "use_wandb":
            self.values["trainer.logger"] = loggers_with_wandb(value, self.values.get("trainer.logger"))
            self.aliases["use_wandb"] = "trainer.logger (adds/removes wandb)"
            return
        retired = retired_flag_settings(canonical, key, value)
        if retired is not None:
            settings, note = retired
            for today_key, today_value in settings:
                self.set(today_key, today_value, source=source)
            self.aliases[key] = note
            return
        for sub, leaf in flatten({canonical: value}) if isinstance(value, dict) and value else [(canonical, value)]:
            self.values.pop(sub, None)  # re-insert: later sources come later (interpolation order is irrelevant)
            self.values[sub] = leaf
            self.typed_as[sub] = key if sub == canonical else sub
            if added:
                self.added.add(sub)

    def delete(self, key: str) -> None:
        canonical, _ = canonical_key(key)
        defaults = defaults_table()
        hit = [k for k in self.values if k == canonical or k.startswith(canonical + ".")]
        if not hit:
            raise ConfigError(f"~{key}: no such key to delete")
        for k in hit:
            del self.values[k]
            if k in defaults:
                self.values[k] = defaults[k]

    # ---- output ---------------------------------------------------------------------------------
    def resolve(self) -> dict[str, Any]:
        """The flat table with every ``${...}`` resolved against the merged whole."""
        from omegaconf import OmegaConf

        values = dict(self.values)
        if values.get("trainer.experiment_name") is None:
            values["trainer.experiment_name"] = "${algorithm.adv_estimator}"
        tree = OmegaConf.create(unflatten(values))
        try:
            resolved = OmegaConf.to_container(tree, resolve=True, throw_on_missing=False)
            return dict(flatten(resolved))  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - find the leaves that do not resolve, below
            pass
        out: dict[str, Any] = {}
        for key, raw in values.items():
            try:
                out[key] = OmegaConf.to_container(OmegaConf.create({"v": OmegaConf.select(tree, key)}),
                                                  resolve=True)["v"] if isinstance(raw, str) and "${" in raw else raw
            except Exception as exc:  # noqa: BLE001
                if key in schema_fields():
                    raise ConfigError(f"config key {key!r}: cannot resolve {raw!r}: {exc}") from None
                out[key] = raw  # an engine-only key: keep the text, it is only stored
        return out

    def build(self) -> Config:
        """Classify every resolved leaf and build the config; all problems in one :class:`ConfigError`."""
        apply_verl_defaults(self.values, self.typed_as, self.notes)
        resolved = self.resolve()
        fields = schema_fields()
        free = free_form_keys()
        cfg = Config()
        problems: list[str] = []
        grouped: dict[str, dict[str, Any]] = {}
        for key, value in resolved.items():
            if value == MISSING:
                continue
            owner = next((f for f in free if key.startswith(f + ".")), None)
            if owner is not None:
                grouped.setdefault(owner, {})[key[len(owner) + 1:]] = value
                continue
            try:
                self._place(cfg, key, value, fields)
            except ConfigError as exc:
                problems.append(self._where(key, str(exc)))
        for owner, sub in grouped.items():
            base = resolved.get(owner) if isinstance(resolved.get(owner), dict) else {}
            try:
                self._place(cfg, owner, {**(base or {}), **unflatten(sub)}, fields)
            except ConfigError as exc:
                problems.append(self._where(owner, str(exc)))
        if problems:
            if len(problems) == 1:
                raise ConfigError(problems[0])
            raise ConfigError(f"{len(problems)} config problems:\n  - " + "\n  - ".join(problems))
        cfg.aliases = dict(self.aliases)
        cfg.notes = list(self.notes)
        return cfg

    def _where(self, key: str, message: str) -> str:
        typed = self.typed_as.get(key)
        return f"{message} (given as {typed!r})" if typed and typed != key and repr(typed) not in message else message

    def _place(self, cfg: Config, key: str, value: Any, fields: dict[str, FieldInfo]) -> None:
        info = fields.get(key)
        if info is not None:
            if value is None and key in NULL_IS_DEFAULT:
                return  # keep the default
            if value == "" and not takes_text(info.type):  # `algorithm.gamma=$gae_gamma`, the variable unset
                self.notes.append(f"{self.typed_as.get(key, key)}= is empty (an unset shell variable?): the "
                                  f"default {_default(key)!r} is kept")
                return
            value = coerce(key, value, info.type)
            check_choice(key, value, info)
            set_path(cfg, key, value)
            return
        if key in UNSUPPORTED:
            off, why = UNSUPPORTED[key]
            if value not in off:
                raise ConfigError(f"config key {key!r}={value!r}: {why}")
        if key in UNSUPPORTED or no_effect_reason(key) is not None or key in self.added:
            cfg.extras[key] = value
            if key not in self.added and only_a_wildcard_knows(key):
                typed = self.typed_as.get(key, key)
                self.notes.append(f"{typed} is not in verl 0.9.1's config (another verl version's key, or a typo"
                                  f"{suggest(typed, key).replace(' Did you mean', ': did you mean').rstrip('?')}?): "
                                  f"accepted, with no effect here")
            if key in MATH_WARNINGS and value not in MATH_WARNINGS[key][0]:
                self.notes.append(f"warning: {self.typed_as.get(key, key)}={value!r} is accepted but not "
                                  f"implemented, and in verl it changes the math: {MATH_WARNINGS[key][1]}")
            return
        typed = self.typed_as.get(key, key)
        shown = f"{typed!r}" + (f" ({key})" if typed != key else "")
        verl_too = (f" verl 0.9.1 has no such key either; as in verl, +{typed}=... adds it (stored, no effect)."
                    if key not in verl_keys() else "")
        raise ConfigError(f"unknown config key {shown}.{suggest(typed, key)}{verl_too}")


def _default(key: str) -> Any:
    return dict(defaults_table_cached()).get(key)


def set_path(cfg: Config, key: str, value: Any) -> None:
    obj: Any = cfg
    *parents, leaf = key.split(".")
    for p in parents:
        obj = getattr(obj, p)
    setattr(obj, leaf, value)


@lru_cache(maxsize=1)
def defaults_table_cached() -> tuple[tuple[str, Any], ...]:
    import copy

    cfg = Config()
    out = []
    for key in schema_fields():
        value: Any = cfg
        for part in key.split("."):
            value = getattr(value, part)
        out.append((key, copy.deepcopy(value)))
    return tuple(out)


def defaults_table() -> dict[str, Any]:
    import copy

    return {k: copy.deepcopy(v) for k, v in defaults_table_cached()}


@lru_cache(maxsize=1)
def free_form_keys() -> tuple[str, ...]:
    """Dict-typed fields: their sub-keys are data (``reward.kwargs.length_bonus``), not schema keys."""
    out = []
    for key, info in schema_fields().items():
        tp = info.type
        args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
        if any(a is dict or typing.get_origin(a) is dict for a in args):
            out.append(key)
    return tuple(sorted(out, key=len, reverse=True))


# --------------------------------------------------------------------------- "did you mean"

def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@lru_cache(maxsize=1)
def _candidates() -> tuple[str, ...]:
    verl_engine = sorted(k for k in verl_keys() if no_effect_reason(k) is not None)
    return tuple(dict.fromkeys([*schema_fields(), *explicit_no_effect_keys(), *verl_engine]))


def suggest(typed: str, canonical: str) -> str:
    """`` Did you mean 'x'?`` only when a key is genuinely close: the same leaf under an overlapping path, the
    same parent with a leaf a typo away, or a small edit distance overall. No suggestion beats a wrong one."""
    parts = canonical.split(".")
    parent, leaf = ".".join(parts[:-1]), parts[-1]
    best: tuple[float, str] | None = None
    for cand in _candidates():
        cparts = cand.split(".")
        cparent, cleaf = ".".join(cparts[:-1]), cparts[-1]
        score = None
        if cleaf == leaf and set(cparts[:-1]) & set(parts[:-1]):
            score = 2.0 + len(set(cparts[:-1]) & set(parts[:-1])) / len(cparts)
        elif cparent == parent and _edit_distance(cleaf, leaf) <= max(1, len(leaf) // 4):
            score = 3.0 - _edit_distance(cleaf, leaf) / 10
        elif _edit_distance(cand, canonical) <= max(2, len(canonical) // 12):
            score = 1.0 + difflib.SequenceMatcher(None, cand, canonical).ratio()
        if score is not None and (best is None or score > best[0]):
            best = (score, cand)
    if best is None:
        return ""
    shown = best[1]
    head = typed[: len(typed) - len(canonical)] if typed.endswith(canonical) else None
    if typed != canonical and head is None:  # typed in a short form: answer in the same form
        for n in range(len(parts), 0, -1):
            tail = ".".join(parts[-n:])
            if typed.endswith(tail) and shown.startswith(canonical[: len(canonical) - len(tail)]):
                shown = typed[: len(typed) - len(tail)] + shown[len(canonical) - len(tail):]
                break
    return f" Did you mean {shown!r}?"
