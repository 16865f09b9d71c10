"""What one config leaf may hold: type checks against the schema's annotations and allowed choices.

Why apart from the loader: the same checks serve every way a value arrives (a merged command line,
:func:`rlcockpit.trainer.config.set_key` on a live config, a retired verl flag translated into today's key) and
the generated config reference names types and choices exactly as the errors do.
"""

from __future__ import annotations

import importlib
import types
import typing
from functools import lru_cache
from typing import Any

from rlcockpit.trainer.config.schema import ConfigError, FieldInfo


def type_name(tp: Any) -> str:
    """An annotation as people read it: ``float``, ``list[str]``, ``str | None``."""
    return (getattr(tp, "__name__", None) if not typing.get_origin(tp) else None) or \
        str(tp).replace("typing.", "").replace("NoneType", "None")


def _bad(key: str, value: Any, tp: Any) -> ConfigError:
    return ConfigError(f"config key {key!r} expects {type_name(tp)}, got {value!r} ({type(value).__name__})")


def coerce(key: str, value: Any, tp: Any) -> Any:
    """Check ``value`` against the annotation ``tp``; ints pass for floats, ``"1e-5"`` for a float, a string
    with commas or a single item for a list (``trainer.logger=console,wandb``)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(key, value, tp)
    if origin is list:
        return _coerce_list(key, value, tp)
    if origin is dict or tp is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _bad(key, value, tp)
        return dict(value)
    if tp is Any:
        return value
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        out = scalar(value)
        if out is not _NO:
            return out
    raise _bad(key, value, tp)


def _coerce_union(key: str, value: Any, tp: Any) -> Any:
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    for arg in args:
        if arg is not type(None):
            try:
                return coerce(key, value, arg)
            except ConfigError:
                continue
    raise _bad(key, value, tp)


def _coerce_list(key: str, value: Any, tp: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")] if "," in value else [value]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise _bad(key, value, tp)
    (item_tp,) = typing.get_args(tp) or (Any,)
    return [coerce(f"{key}[{i}]", v, item_tp) for i, v in enumerate(value)]


_NO = object()  # a scalar converter's "this value is not of my type"


def _as_bool(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return _NO


def _as_float(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return _NO


def _as_int(value: Any) -> Any:
    if isinstance(value, bool):
        return _NO
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return _NO
        if number.is_integer():
            return int(number)
    return _NO


def _as_str(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) and not value:  # YAML 1.1 reads `off` as false (trainer.preflight=off)
        return "off"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return _NO


_SCALARS = {bool: _as_bool, float: _as_float, int: _as_int, str: _as_str}


def takes_text(tp: Any) -> bool:
    """Whether an empty string is a value of ``tp`` (and not an unset shell variable)."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    return any(a is str or a is Any for a in args)


@lru_cache(maxsize=64)
def registry_at(path: str) -> Any:
    """The registry a schema field names as ``"module:attribute"`` (imported on first use: the schema must not
    import every algorithm and engine module to be read)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def check_choice(key: str, value: Any, info: FieldInfo) -> None:
    """Registry-backed and fixed choices (``None`` passes: a null optional means "unset")."""
    if value is None:
        return
    for item in value if isinstance(value, (list, tuple)) and info.choices else [value]:  # a list: each entry
        if info.choices and item not in info.choices:
            raise ConfigError(f"config key {key!r} must be one of {', '.join(map(str, info.choices))}; got {item!r}")
    if info.registry and value not in info.extra_choices:
        registry = registry_at(info.registry)
        if value not in registry:
            raise ConfigError(f"config key {key!r}: {registry._unknown_message(value)}")
