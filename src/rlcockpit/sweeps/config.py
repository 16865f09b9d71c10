"""W&B's sweep file schema: load, validate, fill defaults.

A sweep file a W&B user already has must load unchanged, and a mistake must fail at ``rlcockpit sweep``
time naming the key, not minutes later inside an agent. Two things are deliberately friendlier than W&B:
``1e-6`` (YAML 1.1 reads it as a *string*, a classic W&B sweep pitfall) is read as a number, and unknown
keys are an error with a suggestion instead of being ignored.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlcockpit.sweeps.params import Parameter, SweepConfigError, is_int, is_number, parse_parameters

METHODS = ("grid", "random", "bayes")
TOP_LEVEL = ("program", "method", "metric", "parameters", "command", "early_terminate", "run_cap", "name",
             "description", "project", "entity", "controller", "apiVersion", "kind")
# W&B keys that belong to services this offline tool does not have
UNSUPPORTED = {
    "job": "W&B Launch jobs are not supported: give `program` (and `command`) instead",
    "image_uri": "W&B Launch images are not supported: give `program` (and `command`) instead",
    "scheduler": "custom schedulers (`scheduler`, `method: custom`) are not supported; use grid, random or bayes",
    "metrics": "multi-objective sweeps (`metrics`) are not supported; give one `metric`",
}
IMPUTE = ("worst", "best", "latest")
MACROS = ("env", "interpreter", "program", "args", "args_no_hyphens", "args_no_boolean_flags", "args_json",
          "args_json_file", "args_no_equals", "args_append_hydra", "args_override_hydra")
_MACRO = re.compile(r"\$\{([^}]*)\}")


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-6`` / ``5E+3`` as floats (YAML 1.2), as sweep authors mean them."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                   |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                   |\.[0-9_]+(?:[eE][-+][0-9]+)?
                   |[-+]?\.(?:inf|Inf|INF)
                   |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."),
)


_FLOW_MACRO = re.compile(r"(?<=[\[,])(\s*)(\$\{[^}\s]*\})(?=\s*[,\]])")


def load_yaml(text: str) -> Any:
    """YAML 1.2 numbers; ``command: [${env}, python, ${program}]`` (not valid YAML: ``{`` opens a mapping inside
    ``[...]``) is read as the list it obviously means."""
    try:
        return yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        fixed = _FLOW_MACRO.sub(lambda m: f'{m.group(1)}"{m.group(2)}"', text)
        if fixed == text:
            raise
        return yaml.load(fixed, Loader=_Yaml12Loader)  # noqa: S506


@dataclass(frozen=True)
class Metric:
    name: str
    goal: str = "minimize"  # minimize | maximize
    target: float | None = None
    impute: str = "worst"
    impute_while_running: str = "false"

    @property
    def maximize(self) -> bool:
        return self.goal == "maximize"

    def better(self, a: float, b: float) -> bool:
        """True when ``a`` is strictly better than ``b``."""
        return a > b if self.maximize else a < b

    def reached(self, value: float | None) -> bool:
        if self.target is None or value is None:
            return False
        return value >= self.target if self.maximize else value <= self.target


@dataclass(frozen=True)
class EarlyTerminate:
    type: str  # hyperband | health
    bands: tuple[int, ...] = ()
    eta: float = 3.0
    strict: bool = True
    severity: str = "critical"


@dataclass
class SweepConfig:
    """A validated sweep file; ``raw`` is what the user wrote (stored with the sweep)."""

    raw: dict[str, Any]
    method: str
    parameters: list[Parameter]
    program: str | None = None
    command: list[str] | None = None
    metric: Metric | None = None
    early_terminate: EarlyTerminate | None = None
    run_cap: int | None = None
    name: str | None = None
    project: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def searchable(self) -> list[Parameter]:
        return [p for p in self.parameters if p.searchable]


def load_sweep_file(path: str | Path) -> SweepConfig:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"sweep file not found: {path}")
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SweepConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_sweep(raw, source=str(path))


def parse_sweep(raw: Any, source: str = "sweep config") -> SweepConfig:
    """Validate a sweep config (a mapping as loaded from YAML or given to :func:`rlcockpit.sweep`)."""
    if not isinstance(raw, Mapping) or not raw:
        raise SweepConfigError(f"{source}: a sweep config is a non-empty mapping (program, method, parameters...)")
    raw = copy.deepcopy(dict(raw))
    for key, why in UNSUPPORTED.items():
        if key in raw:
            raise SweepConfigError(f"{source}: {key!r}: {why}")
    unknown = [k for k in raw if k not in TOP_LEVEL]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(str(k), TOP_LEVEL, n=1)
            hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise SweepConfigError(f"{source}: unknown top-level key(s) {', '.join(hints)}; "
                               f"a sweep file takes {', '.join(TOP_LEVEL)}")
    method = raw.get("method")
    if method == "custom":
        raise SweepConfigError(f"{source}: {UNSUPPORTED['scheduler']}")
    if method not in METHODS:
        raise SweepConfigError(f"{source}: method must be one of {', '.join(METHODS)}, got {method!r}")
    if "parameters" not in raw:
        raise SweepConfigError(f"{source}: 'parameters' is required")
    params = parse_parameters(raw["parameters"])
    cfg = SweepConfig(raw=raw, method=method, parameters=params, name=_opt_str(raw, "name"),
                      project=_opt_str(raw, "project"), program=_opt_str(raw, "program"),
                      command=_command(raw.get("command")), metric=_metric(raw.get("metric")),
                      run_cap=_run_cap(raw.get("run_cap")))
    cfg.early_terminate = _early_terminate(raw.get("early_terminate"), cfg.metric)
    _cross_checks(cfg, source)
    return cfg


def _opt_str(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise SweepConfigError(f"{key} must be a non-empty string, got {value!r}")
    return value


def _command(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise SweepConfigError(f"command must be a non-empty list, got {value!r}")
    out = []
    for i, part in enumerate(value):
        if isinstance(part, (dict, list)) or part is None:
            raise SweepConfigError(f"command[{i}] must be a string, got {part!r}")
        text = str(part)
        for macro in _MACRO.findall(text):
            if macro not in MACROS and not macro.startswith("envvar:"):
                close = difflib.get_close_matches(macro, MACROS, n=1)
                hint = f" Did you mean ${{{close[0]}}}?" if close else ""
                raise SweepConfigError(f"command[{i}]: unknown macro ${{{macro}}}.{hint} "
                                       f"Known: {', '.join('${' + m + '}' for m in MACROS)}, ${{envvar:NAME}}")
        out.append(text)
    return out


def _metric(value: Any) -> Metric | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SweepConfigError(f"metric must be a mapping with name and goal, got {value!r}")
    allowed = ("name", "goal", "target", "impute", "impute_while_running")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise SweepConfigError(f"metric: unknown key(s) {', '.join(unknown)} (accepted: {', '.join(allowed)})")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise SweepConfigError("metric.name is required (the logged key to optimise, e.g. val/acc)")
    goal = value.get("goal", "minimize")
    if goal not in ("minimize", "maximize"):
        raise SweepConfigError(f"metric.goal must be minimize or maximize, got {goal!r}")
    target = value.get("target")
    if target is not None and not is_number(target):
        raise SweepConfigError(f"metric.target must be a number, got {target!r}")
    impute = value.get("impute", "worst")
    if impute not in IMPUTE:
        raise SweepConfigError(f"metric.impute must be one of {', '.join(IMPUTE)}, got {impute!r}")
    while_running = str(value.get("impute_while_running", "false")).lower()
    if while_running not in (*IMPUTE, "false"):
        raise SweepConfigError(f"metric.impute_while_running must be one of {', '.join(IMPUTE)}, false")
    return Metric(name, goal, None if target is None else float(target), impute, while_running)


def _run_cap(value: Any) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value <= 0:
        raise SweepConfigError(f"run_cap must be a positive integer, got {value!r}")
    return value


def _early_terminate(value: Any, metric: Metric | None) -> EarlyTerminate | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or "type" not in value:
        raise SweepConfigError("early_terminate must be a mapping with a type (hyperband or health)")
    kind = value["type"]
    if kind == "health":
        unknown = sorted(set(value) - {"type", "severity"})
        if unknown:
            raise SweepConfigError(f"early_terminate: unknown key(s) {', '.join(unknown)} for type health "
                                   "(accepted: type, severity)")
        severity = value.get("severity", "critical")
        if severity not in ("critical", "warning"):
            raise SweepConfigError(f"early_terminate.severity must be critical or warning, got {severity!r}")
        return EarlyTerminate("health", severity=severity)
    if kind != "hyperband":
        raise SweepConfigError(f"early_terminate.type must be hyperband or health, got {kind!r}")
    if metric is None:
        raise SweepConfigError("early_terminate: hyperband needs a metric (metric.name and metric.goal)")
    allowed = ("type", "min_iter", "max_iter", "s", "eta", "strict")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise SweepConfigError(f"early_terminate: unknown key(s) {', '.join(unknown)} for type hyperband "
                               f"(accepted: {', '.join(allowed)})")
    from rlcockpit.sweeps.hyperband import hyperband_bands

    eta = value.get("eta", 3)
    strict = value.get("strict", True)
    if not isinstance(strict, bool):
        raise SweepConfigError(f"early_terminate.strict must be true or false, got {strict!r}")
    bands = hyperband_bands(min_iter=value.get("min_iter"), max_iter=value.get("max_iter"), s=value.get("s"),
                            eta=eta)
    return EarlyTerminate("hyperband", bands=tuple(bands), eta=float(eta), strict=strict)


def _cross_checks(cfg: SweepConfig, source: str) -> None:
    if cfg.method == "bayes" and cfg.metric is None:
        raise SweepConfigError(f"{source}: method bayes needs a metric (metric.name and metric.goal)")
    if cfg.method == "bayes" and not cfg.searchable:
        raise SweepConfigError(f"{source}: method bayes needs at least one parameter to search (not only value:)")
    if cfg.method == "grid":
        for p in cfg.parameters:
            p.grid_values()  # raises for continuous parameters, naming them


def check_runnable(cfg: SweepConfig) -> None:
    """A process agent needs a program (a sweep for ``rlcockpit.agent(id, function=...)`` does not)."""
    uses_program = cfg.command is None or any("${program}" in c for c in cfg.command)
    if uses_program and not cfg.program:
        raise SweepConfigError("the sweep has no 'program' (the script each trial runs) nor a 'command' without "
                               "${program}; add one, or run trials in Python: rlcockpit.agent(SWEEP_ID, function=train)")
