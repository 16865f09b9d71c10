"""Alert configuration: the ``alerts:`` section of a run config, environment variables, or a file.

``alerts: {channels: [{type: slack, url: ...}], min_severity: warning, cooldown_s: 600,
stall_timeout_s: 1800, dashboard_url: http://host:8765}``. Channels named by environment variables
(so secrets stay out of config files and command lines) are added to the configured ones:

======================================  ==================================================
``RLCOCKPIT_SLACK_WEBHOOK``              Slack incoming-webhook URL
``RLCOCKPIT_FEISHU_WEBHOOK`` (+``_SECRET``)  Feishu/Lark bot URL (+ signing secret)
``RLCOCKPIT_DINGTALK_WEBHOOK`` (+``_SECRET``) DingTalk robot URL (+ signing secret)
``RLCOCKPIT_WECOM_WEBHOOK``              WeCom robot URL
``RLCOCKPIT_WEBHOOK_URL``                generic JSON webhook
``RLCOCKPIT_SMTP_HOST/PORT/USER/PASSWORD/FROM/TO/SSL/STARTTLS``  e-mail
``RLCOCKPIT_ALERTS_MIN_SEVERITY``, ``RLCOCKPIT_DASHBOARD_URL``, ``RLCOCKPIT_ALERTS_STALL_TIMEOUT``
======================================  ==================================================
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcockpit.alerts.channels import Channel, ChannelConfigError, make_channel
from rlcockpit.alerts.message import LEVELS

ENV_WEBHOOKS = {  # env var -> (channel type, env var of its signing secret)
    "RLCOCKPIT_SLACK_WEBHOOK": ("slack", None),
    "RLCOCKPIT_FEISHU_WEBHOOK": ("feishu", "RLCOCKPIT_FEISHU_SECRET"),
    "RLCOCKPIT_LARK_WEBHOOK": ("feishu", "RLCOCKPIT_LARK_SECRET"),
    "RLCOCKPIT_DINGTALK_WEBHOOK": ("dingtalk", "RLCOCKPIT_DINGTALK_SECRET"),
    "RLCOCKPIT_WECOM_WEBHOOK": ("wecom", None),
    "RLCOCKPIT_WEBHOOK_URL": ("webhook", None),
}
SMTP_KEYS = ("HOST", "PORT", "USER", "PASSWORD", "FROM", "TO", "SSL", "STARTTLS", "CA_FILE")


@dataclass
class AlertsConfig:
    """Everything the alert manager needs. Times are seconds; ``0`` disables a timer."""

    channels: list[Channel] = field(default_factory=list)
    min_severity: str = "warning"  # findings below this are not sent
    cooldown_s: float = 600.0  # the same finding (detector + title) is sent at most once per cooldown
    rate_limit: int = 20  # at most this many alerts per ``rate_window_s`` over all channels
    rate_window_s: float = 60.0
    stall_timeout_s: float = 1800.0  # alert when no new step was logged for this long
    dashboard_url: str | None = None
    on_finish: bool = True  # also alert when a run finishes normally (level info)
    timeout_s: float = 5.0  # per request
    max_retries: int = 3  # after the first attempt
    backoff_s: float = 0.5  # first retry delay; doubles each retry
    flush_timeout_s: float = 5.0  # how long a dying process waits for its last alerts

    def __post_init__(self) -> None:
        if self.min_severity not in LEVELS:
            raise ValueError(f"alerts.min_severity must be one of {', '.join(LEVELS)}, got {self.min_severity!r}")


_FIELDS = {f.name: f for f in dataclasses.fields(AlertsConfig)} | {"use_env": None}


def channels_from_env(env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Channel configs named by ``RLCOCKPIT_*`` environment variables."""
    env = os.environ if env is None else env
    out: list[dict[str, Any]] = []
    for var, (kind, secret_var) in ENV_WEBHOOKS.items():
        url = env.get(var)
        if url:
            ch: dict[str, Any] = {"type": kind, "url": url, "name": f"{kind} (env)"}
            if secret_var and env.get(secret_var):
                ch["secret"] = env[secret_var]
            out.append(ch)
    if env.get("RLCOCKPIT_SMTP_HOST"):
        ch = {"type": "email", "name": "email (env)"}
        for k in SMTP_KEYS:
            v = env.get(f"RLCOCKPIT_SMTP_{k}")
            if v:
                ch[k.lower()] = v
        out.append(ch)
    return out


def env_configured(env: Mapping[str, str] | None = None) -> bool:
    """True when environment variables name at least one alert channel."""
    return bool(channels_from_env(env))


def _coerce(key: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return type(default)(value)
        except (TypeError, ValueError):
            raise ValueError(f"alerts.{key} expects a number, got {value!r}") from None
    return value


def load_alerts_config(section: Any = None, env: Mapping[str, str] | None = None) -> AlertsConfig:
    """An :class:`AlertsConfig` from an ``alerts:`` mapping (or ``True``/``None``: environment only).

    A list is read as the channel list. ``use_env: false`` ignores the environment's channels.
    Unknown keys and bad values raise ``ValueError`` naming the key.
    """
    env = os.environ if env is None else env
    if section is None or section is True:
        section = {}
    elif isinstance(section, AlertsConfig):
        return section
    elif isinstance(section, (list, tuple)):
        section = {"channels": list(section)}
    if not isinstance(section, Mapping):
        raise ValueError(f"alerts config must be a mapping or a list of channels, got {type(section).__name__}")
    unknown = [k for k in section if k not in _FIELDS]
    if unknown:
        raise ValueError(f"unknown alerts config key(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(sorted(_FIELDS))}")
    defaults = AlertsConfig()
    kwargs: dict[str, Any] = {}
    for k, v in section.items():
        if k in ("channels", "use_env") or v is None:
            continue
        kwargs[k] = _coerce(k, v, getattr(defaults, k))
    if env.get("RLCOCKPIT_ALERTS_MIN_SEVERITY") and "min_severity" not in kwargs:
        kwargs["min_severity"] = env["RLCOCKPIT_ALERTS_MIN_SEVERITY"]
    if env.get("RLCOCKPIT_DASHBOARD_URL") and "dashboard_url" not in kwargs:
        kwargs["dashboard_url"] = env["RLCOCKPIT_DASHBOARD_URL"]
    if env.get("RLCOCKPIT_ALERTS_STALL_TIMEOUT") and "stall_timeout_s" not in kwargs:
        kwargs["stall_timeout_s"] = _coerce("stall_timeout_s", env["RLCOCKPIT_ALERTS_STALL_TIMEOUT"], 0.0)
    raw_channels = section.get("channels") or []
    if not isinstance(raw_channels, (list, tuple)):
        raise ChannelConfigError("alerts.channels must be a list of channel mappings")
    channel_cfgs = [dict(c) if isinstance(c, Mapping) else c for c in raw_channels]
    if _coerce("use_env", section.get("use_env", True), True):
        seen = {(c.get("type"), c.get("url")) for c in channel_cfgs if isinstance(c, Mapping)}
        channel_cfgs += [c for c in channels_from_env(env) if (c["type"], c.get("url")) not in seen]
    channels = [make_channel(c, f"alerts.channels[{i}]") for i, c in enumerate(channel_cfgs)]
    return AlertsConfig(channels=channels, **kwargs)


def read_alerts_file(path: str | os.PathLike[str]) -> Any:
    """The ``alerts`` section of a YAML/JSON file: either a whole run config or the section alone."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"alerts config file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: not valid YAML: {exc}") from None
    if isinstance(data, Mapping) and "alerts" in data:
        return data["alerts"]
    return data
