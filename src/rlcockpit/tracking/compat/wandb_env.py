"""W&B's module-level objects and environment beyond the run: ``wandb.AlertLevel`` and ``wait_duration`` for
``wandb.alert``, ``wandb.Settings``, and the ``WANDB_*`` variables a W&B launch script exports.

Why apart from :mod:`rlcockpit.tracking.compat.wandb_compat` (the run's W&B methods): these are read by ``init`` and
``alert`` before or beside a run, and keeping them here keeps both modules readable.
"""

from __future__ import annotations

import enum
import os
import secrets
import sys
import types
from pathlib import Path
from typing import Any

#: W&B's environment variables for ``wandb.init`` defaults (docs.wandb.ai "Environment variables"): an argument
#: given to ``init`` wins, then rlcockpit's own variable (``RLCOCKPIT_PROJECT``), then these.
WANDB_ENV = {"project": "WANDB_PROJECT", "name": "WANDB_NAME", "group": "WANDB_RUN_GROUP", "tags": "WANDB_TAGS",
             "notes": "WANDB_NOTES", "job_type": "WANDB_JOB_TYPE", "entity": "WANDB_ENTITY"}


def wandb_env_default(arg: str, value: Any) -> Any:
    """``value``, else the W&B environment variable for ``init(arg=...)`` (``WANDB_TAGS`` is comma separated)."""
    if value is not None:
        return value
    raw = os.environ.get(WANDB_ENV[arg]) or None
    if raw is not None and arg == "tags":
        return [t.strip() for t in raw.split(",") if t.strip()] or None
    return raw


#: W&B reads this file from the working directory into every run's config, under what ``init(config=)`` gives
DEFAULTS_FILE = "config-defaults.yaml"


def wandb_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A W&B config file (``init(config="params.yaml")``, ``config-defaults.yaml``): top-level keys, each
    ``{value: ..., desc: ...}`` (W&B's layout; ``wandb_version: 1`` allowed). ``ValueError`` naming the file
    and the key for anything else, ``FileNotFoundError`` when it does not exist."""
    import yaml

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"config file {file} does not exist (init(config=...) with a str reads a YAML file)")
    try:
        loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"config file {file}: not valid YAML ({exc})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ValueError(f"config file {file}: expected a mapping of keys, got {type(loaded).__name__}")
    version = loaded.pop("wandb_version", None)
    if version not in (None, 1):
        raise ValueError(f"config file {file}: unknown wandb_version {version!r}")
    out = {}
    for key, entry in loaded.items():
        if not isinstance(entry, dict) or "value" not in entry:
            raise ValueError(f"config file {file}: key {key!r} must be {{value: ..., desc: ...}} (W&B's layout), "
                             f"got {entry!r}")
        out[str(key)] = entry["value"]
    return out


def config_defaults() -> dict[str, Any]:
    """``./config-defaults.yaml`` as W&B loads it for every run (empty when there is none)."""
    return wandb_config_file(DEFAULTS_FILE) if Path(DEFAULTS_FILE).is_file() else {}


class AlertLevel(str, enum.Enum):
    """``wandb.AlertLevel``: W&B's alert levels, mapped to rlcockpit's (``INFO`` info, ``WARN`` warning,
    ``ERROR`` critical)."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


_ALERT_LEVELS = {"info": "info", "warn": "warning", "warning": "warning", "error": "critical", "critical": "critical"}


def alert_level(level: Any) -> str:
    """rlcockpit's level for ``level`` (an ``AlertLevel``, W&B's names, or ours); ``ValueError`` naming it else."""
    name = level.value if isinstance(level, AlertLevel) else level
    if level is None:
        return "info"  # W&B's default level
    if not isinstance(name, str) or name.lower() not in _ALERT_LEVELS:
        raise ValueError(f"alert level {level!r}: expected info, warning, critical or W&B's INFO, WARN, ERROR")
    return _ALERT_LEVELS[name.lower()]


def alert_suppressed(sent: dict[str, float], title: str, wait_duration: Any, now: float) -> bool:
    """W&B's ``wait_duration``: True when ``title`` was sent less than that many seconds ago (else it is
    recorded as sent now). A ``timedelta`` works as in W&B."""
    if wait_duration is not None:
        wait = wait_duration.total_seconds() if hasattr(wait_duration, "total_seconds") else float(wait_duration)
        if title in sent and now - sent[title] < wait:
            return True
    sent[title] = now
    return False


class Settings(dict):
    """``wandb.Settings(...)``: accepted (``init(settings=wandb.Settings(start_method="thread"))``), no
    effect offline; the values are kept as a dict."""

    def __init__(self, **values: Any) -> None:
        super().__init__(values)

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None


# ---- the rest of W&B's module namespace that scripts touch -------------------------------------------------

class Error(Exception):
    """``wandb.Error`` / ``wandb.errors.Error`` (scripts name these in ``except`` clauses)."""


class CommError(Error):
    """``wandb.errors.CommError``: raised by W&B for network failures; nothing here talks to a network."""


class UsageError(Error):
    """``wandb.errors.UsageError``."""


errors = types.SimpleNamespace(Error=Error, CommError=CommError, UsageError=UsageError)

_ID_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


def generate_id(length: int = 8) -> str:
    """``wandb.util.generate_id()``: a random run id (W&B's alphabet: lower-case letters and digits), for
    ``init(id=generate_id(), resume="allow")``."""
    return "".join(secrets.choice(_ID_CHARS) for _ in range(int(length)))


util = types.SimpleNamespace(generate_id=generate_id)


def _term(prefix: str):  # noqa: ANN202
    def write(string: str = "", newline: bool = True, repeat: bool = True, prefix_: bool = True) -> None:
        print(f"{prefix}: {string}" if prefix_ else string, end="\n" if newline else "", file=sys.stderr)
    return write


termlog, termwarn, termerror = _term("rlcockpit"), _term("rlcockpit: WARNING"), _term("rlcockpit: ERROR")


def require(requirement: Any = None, experiment: Any = None) -> None:
    """``wandb.require("service")`` / ``("core")``: W&B feature switches; nothing to switch here."""


def setup(settings: Any = None) -> None:
    """``wandb.setup()`` (W&B's multiprocessing preparation): nothing to prepare."""


def teardown(exit_code: int | None = None) -> None:
    """``wandb.teardown()``: finish the current run, if any."""
    from rlcockpit.tracking import run as run_module

    if run_module._current is not None:
        run_module._current.finish(exit_code or 0)


def restore(name: str, run_path: str | None = None, replace: bool = False, root: str | None = None) -> None:
    """``wandb.restore`` fetches a file from W&B's cloud: impossible offline, said plainly."""
    raise UsageError(f"wandb.restore({name!r}): there is no W&B cloud to fetch files from; store files with "
                     "log_artifact and read them back with use_artifact(...).download()")
