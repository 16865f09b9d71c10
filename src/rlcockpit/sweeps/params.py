"""Sweep parameters with W&B's distributions and their exact semantics.

Each searchable parameter maps a quantile ``u`` in [0, 1] to a value (``ppf``) and back (``cdf``), as the
W&B sweeps engine does; random search draws ``u`` uniformly, Bayesian search (Optuna) optimises over
``u``, so every distribution — bounded, unbounded (``normal``), skewed (``beta``) or quantised — is one
box ``[0, 1]`` for the sampler. Semantics that surprise people and that we keep because sweep files
depend on them:

* ``log_uniform`` / ``q_log_uniform`` take ``min``/``max`` as *natural logs* (``min: -9.2`` = 1e-4);
  the ``*_values`` variants take the values themselves.
* ``inv_log_uniform``: ``value = exp(-u)`` with ``u`` uniform in [min, max] (so ``1/value`` is log-uniform).
* ``q_*``: ``round(x / q) * q``; an integer ``q`` gives integers.
* Without ``distribution``: ``values`` -> categorical (weighted with ``probabilities``), ``value`` ->
  constant, integer ``min``/``max`` -> int_uniform, other numbers -> uniform.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DISTRIBUTIONS = (
    "constant", "categorical", "categorical_w_probabilities", "int_uniform", "uniform", "q_uniform",
    "log_uniform", "log_uniform_values", "inv_log_uniform", "inv_log_uniform_values", "q_log_uniform",
    "q_log_uniform_values", "normal", "q_normal", "log_normal", "q_log_normal", "beta", "q_beta",
)
# the keys each distribution accepts (besides ``distribution``), with their defaults (None = required)
_FIELDS: dict[str, dict[str, Any]] = {
    "constant": {"value": None},
    "categorical": {"values": None, "probabilities": "omit"},
    "categorical_w_probabilities": {"values": None, "probabilities": None},
    "int_uniform": {"min": None, "max": None},
    "uniform": {"min": None, "max": None},
    "q_uniform": {"min": None, "max": None, "q": 1.0},
    "log_uniform": {"min": None, "max": None},
    "log_uniform_values": {"min": None, "max": None},
    "inv_log_uniform": {"min": None, "max": None},
    "inv_log_uniform_values": {"min": None, "max": None},
    "q_log_uniform": {"min": None, "max": None, "q": 1.0},
    "q_log_uniform_values": {"min": None, "max": None, "q": 1.0},
    "normal": {"mu": 0.0, "sigma": 1.0},
    "q_normal": {"mu": 0.0, "sigma": 1.0, "q": 1.0},
    "log_normal": {"mu": 0.0, "sigma": 1.0},
    "q_log_normal": {"mu": 0.0, "sigma": 1.0, "q": 1.0},
    "beta": {"a": 1.0, "b": 1.0},
    "q_beta": {"a": 1.0, "b": 1.0, "q": 1.0},
}
GRID_KINDS = ("constant", "categorical", "int_uniform", "q_uniform")
_EPS = 1e-12


class SweepConfigError(ValueError):
    """A sweep file is invalid; the message names the key (``parameters.lr.min``)."""


def is_number(v: Any) -> bool:
    """A finite int or float (a bool is not a number in a sweep config)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


@dataclass(frozen=True)
class Parameter:
    """One leaf of ``parameters``; ``path`` is ``("optimizer", "lr")`` for nested parameters."""

    path: tuple[str, ...]
    kind: str
    spec: Mapping[str, Any] = field(hash=False, compare=False)

    @property
    def name(self) -> str:
        """Display name: nested paths joined by dots (``optimizer.lr``), as W&B shows them."""
        return ".".join(self.path)

    @property
    def key(self) -> str:
        """Internal unique name (``/`` cannot occur in a W&B parameter name)."""
        return "/".join(self.path)

    @property
    def searchable(self) -> bool:
        return self.kind != "constant"

    @property
    def categorical(self) -> bool:
        return self.kind in ("categorical", "categorical_w_probabilities")

    @property
    def values(self) -> list[Any]:
        return list(self.spec["values"])

    def grid_values(self) -> list[Any]:
        """The values a grid walks through (W&B: ``int_uniform`` inclusive, ``q_uniform`` as ``arange``)."""
        s = self.spec
        if self.kind == "constant":
            return [s["value"]]
        if self.kind == "categorical":
            return self.values
        if self.kind == "int_uniform":
            return list(range(s["min"], s["max"] + 1))
        if self.kind == "q_uniform":
            out = np.arange(s["min"], s["max"], s["q"]).tolist()
            return [int(v) for v in out] if is_int(s["q"]) and is_int(s["min"]) else out
        raise SweepConfigError(
            f"parameters.{self.name}: grid search needs discrete parameters (values, value, int_uniform or "
            f"q_uniform); {self.kind} is continuous" + (
                " (probabilities are not allowed in a grid)" if self.kind == "categorical_w_probabilities" else ""))

    # ---- quantile maps ----------------------------------------------------------------------------
    def ppf(self, u: float) -> Any:
        """The value at quantile ``u`` in [0, 1]."""
        s, k = self.spec, self.kind
        u = min(max(float(u), 0.0), 1.0)
        if k == "constant":
            return s["value"]
        if self.categorical:
            return s["values"][self._index_at(u)]
        if k == "int_uniform":
            n = s["max"] - s["min"] + 1
            return int(s["min"] + min(int(u * n), n - 1))
        base = k[2:] if k.startswith("q_") else k
        x = _continuous_ppf(base, s, u)
        if k.startswith("q_"):
            return _quantise(x, s["q"])
        return float(x)

    def cdf(self, value: Any) -> float | None:
        """The quantile of ``value`` (None when it cannot come from this parameter)."""
        s, k = self.spec, self.kind
        if k == "constant":
            return 0.0
        if self.categorical:
            idx = self.index_of(value)
            if idx is None:
                return None
            n = len(s["values"])
            return (idx + 0.5) / n
        if not is_number(value):
            return None
        if k == "int_uniform":
            n = s["max"] - s["min"] + 1
            return min(max((float(value) - s["min"] + 0.5) / n, 0.0), 1.0)
        base = k[2:] if k.startswith("q_") else k
        u = _continuous_cdf(base, s, float(value))
        return None if u is None else min(max(u, 0.0), 1.0)

    def index_of(self, value: Any) -> int | None:
        for i, v in enumerate(self.spec["values"]):
            if same_value(v, value):
                return i
        return None

    def _index_at(self, u: float) -> int:
        values = self.spec["values"]
        probs = self.spec.get("probabilities")
        if probs is None:
            return min(int(u * len(values)), len(values) - 1)
        cum = np.cumsum(probs)
        return int(min(np.searchsorted(cum, u, side="right"), len(values) - 1))

    def sample(self, rng: np.random.Generator) -> Any:
        return self.ppf(float(rng.random()))


def same_value(a: Any, b: Any) -> bool:
    """Equality as the grid's dedup sees it: ``3e6 == 3000000``, ``True != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        return float(a) == float(b)
    return a == b


def _quantise(x: float, q: float) -> Any:
    out = round(x / q) * q
    if is_int(q):
        return int(round(out))
    return float(out)


def _continuous_ppf(kind: str, s: Mapping[str, Any], u: float) -> float:
    from scipy import special, stats

    if kind == "uniform":
        return s["min"] + u * (s["max"] - s["min"])
    if kind == "log_uniform":
        return math.exp(s["min"] + u * (s["max"] - s["min"]))
    if kind == "log_uniform_values":
        lo, hi = math.log(s["min"]), math.log(s["max"])
        return math.exp(lo + u * (hi - lo))
    if kind == "inv_log_uniform":  # exp(-x), x uniform in [min, max]; u=1 gives the largest value
        return math.exp(-(s["min"] + (1.0 - u) * (s["max"] - s["min"])))
    if kind == "inv_log_uniform_values":
        lo, hi = -math.log(s["max"]), -math.log(s["min"])
        return math.exp(-(lo + (1.0 - u) * (hi - lo)))
    u = min(max(u, _EPS), 1.0 - _EPS)  # unbounded distributions: keep the ends finite
    if kind == "normal":
        return s["mu"] + s["sigma"] * float(special.ndtri(u))
    if kind == "log_normal":
        return math.exp(s["mu"] + s["sigma"] * float(special.ndtri(u)))
    if kind == "beta":
        return float(stats.beta.ppf(u, s["a"], s["b"]))
    raise SweepConfigError(f"unsupported distribution {kind!r}")


def _continuous_cdf(kind: str, s: Mapping[str, Any], x: float) -> float | None:
    from scipy import special, stats

    if kind == "uniform":
        return (x - s["min"]) / (s["max"] - s["min"])
    if kind in ("log_uniform", "log_uniform_values", "inv_log_uniform", "inv_log_uniform_values"):
        if x <= 0:
            return None
        lo, hi = _log_bounds(kind, s)
        return (math.log(x) - lo) / (hi - lo)
    if kind == "normal":
        return float(special.ndtr((x - s["mu"]) / s["sigma"]))
    if kind == "log_normal":
        return None if x <= 0 else float(special.ndtr((math.log(x) - s["mu"]) / s["sigma"]))
    if kind == "beta":
        return float(stats.beta.cdf(x, s["a"], s["b"]))
    return None


def _log_bounds(kind: str, s: Mapping[str, Any]) -> tuple[float, float]:
    """Bounds of ``log(value)`` for the log-uniform family."""
    if kind == "log_uniform":
        return s["min"], s["max"]
    if kind == "log_uniform_values" or kind == "inv_log_uniform_values":
        return math.log(s["min"]), math.log(s["max"])
    return -s["max"], -s["min"]  # inv_log_uniform: value = exp(-x), x in [min, max]


# ---- parsing ---------------------------------------------------------------------------------------

def flat_params(params: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A trial's nested parameter values (``{"optim": {"lr": 1e-5}}``) as dotted names (``optim.lr``), as the
    agent prints them and the sweep table shows them."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(flat_params(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def parse_parameters(raw: Any, where: str = "parameters") -> list[Parameter]:
    """All leaf parameters of a ``parameters`` mapping (nested ``parameters:`` blocks flattened), sorted by
    path as W&B orders them (the grid's order depends on it)."""
    if not isinstance(raw, Mapping) or not raw:
        raise SweepConfigError(f"{where} must be a non-empty mapping of parameter names to specs")
    out: list[Parameter] = []
    _collect(raw, (), where, out)
    return sorted(out, key=lambda p: p.path)


def _collect(raw: Mapping[str, Any], prefix: tuple[str, ...], where: str, out: list[Parameter]) -> None:
    for name, spec in raw.items():
        if not isinstance(name, str) or not name or name[0].isdigit() or "/" in name:
            raise SweepConfigError(f"{where}: parameter name {name!r} must be a string starting with a letter "
                                   "or '_' (letters, digits, '_', '.', '-')")
        here = f"{where}.{name}"
        if not isinstance(spec, Mapping):
            raise SweepConfigError(f"{here} must be a mapping such as {{value: ...}}, {{values: [...]}} or "
                                   f"{{min: ..., max: ...}}; got {spec!r}")
        if "parameters" in spec:
            extra = sorted(set(spec) - {"parameters"})
            if extra:
                raise SweepConfigError(f"{here}: a nested parameter block takes only 'parameters'; "
                                       f"unknown: {', '.join(extra)}")
            if not isinstance(spec["parameters"], Mapping) or not spec["parameters"]:
                raise SweepConfigError(f"{here}.parameters must be a non-empty mapping")
            _collect(spec["parameters"], (*prefix, name), f"{here}.parameters", out)
            continue
        kind, filled = _fill(dict(spec), here)
        out.append(Parameter((*prefix, name), kind, filled))


def _infer_kind(spec: Mapping[str, Any], where: str) -> str:
    if "distribution" in spec:
        kind = spec["distribution"]
        if kind not in DISTRIBUTIONS:
            import difflib

            close = difflib.get_close_matches(str(kind), DISTRIBUTIONS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SweepConfigError(f"{where}.distribution: unknown distribution {kind!r}.{hint} "
                                   f"Known: {', '.join(DISTRIBUTIONS)}")
        if kind == "categorical" and "probabilities" in spec:
            return "categorical_w_probabilities"
        return kind
    if "values" in spec:
        return "categorical_w_probabilities" if "probabilities" in spec else "categorical"
    if "value" in spec:
        return "constant"
    if "min" in spec and "max" in spec:
        return "int_uniform" if is_int(spec["min"]) and is_int(spec["max"]) else "uniform"
    raise SweepConfigError(f"{where}: say what to search: value, values, min/max or a distribution "
                           f"(got keys {', '.join(map(str, spec)) or 'none'})")


def _fill(spec: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
    kind = _infer_kind(spec, where)
    fields = _FIELDS[kind]
    given = {k: v for k, v in spec.items() if k != "distribution"}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise SweepConfigError(f"{where}: unknown key(s) {', '.join(unknown)} for distribution {kind!r} "
                               f"(accepted: {', '.join(fields)})")
    filled: dict[str, Any] = {}
    for key, default in fields.items():
        if key in given:
            filled[key] = given[key]
        elif default is None:
            raise SweepConfigError(f"{where}: distribution {kind!r} needs {key!r}")
        elif default != "omit":
            filled[key] = default
    _check(kind, filled, where)
    return kind, filled


def _check(kind: str, s: dict[str, Any], where: str) -> None:
    if "values" in s:
        if not isinstance(s["values"], Sequence) or isinstance(s["values"], (str, bytes)) or not s["values"]:
            raise SweepConfigError(f"{where}.values must be a non-empty list")
        s["values"] = list(s["values"])
    if "probabilities" in s:
        probs = s["probabilities"]
        if (not isinstance(probs, Sequence) or len(probs) != len(s["values"])
                or not all(is_number(p) and p >= 0 for p in probs)):
            raise SweepConfigError(f"{where}.probabilities must be {len(s['values'])} non-negative numbers, "
                                   "one per value")
        if abs(sum(probs) - 1.0) > 1e-6:
            raise SweepConfigError(f"{where}.probabilities must sum to 1 (they sum to {sum(probs):g})")
        s["probabilities"] = [float(p) for p in probs]
    for key in ("min", "max", "mu", "sigma", "a", "b", "q"):
        if key in s and not is_number(s[key]):
            raise SweepConfigError(f"{where}.{key} must be a number, got {s[key]!r}")
    if kind == "int_uniform" and not (is_int(s["min"]) and is_int(s["max"])):
        raise SweepConfigError(f"{where}: int_uniform needs integer min and max, got {s['min']!r}, {s['max']!r}")
    if "min" in s and not s["min"] < s["max"]:
        raise SweepConfigError(f"{where}: min ({s['min']!r}) must be less than max ({s['max']!r})")
    if kind.endswith("_values") and s["min"] <= 0:
        raise SweepConfigError(f"{where}: {kind} takes the values themselves, so min must be > 0 "
                               f"(got {s['min']!r}; for bounds in log space use {kind[:-7]})")
    for key in ("sigma", "q", "a", "b"):
        if key in s and s[key] <= 0:
            raise SweepConfigError(f"{where}.{key} must be > 0, got {s[key]!r}")
