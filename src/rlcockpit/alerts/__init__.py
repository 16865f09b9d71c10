"""Alerts: findings, run end, stalls and manual alerts delivered to Slack, Feishu/Lark, DingTalk,
WeCom, generic webhooks, e-mail or the console — off the training thread, deduplicated, rate
limited, retried, and recorded with the run.

Enable with ``rlcockpit.init(..., alerts={"channels": [{"type": "slack", "url": ...}]})``, an
``alerts:`` key in the run config, or environment variables (see :mod:`rlcockpit.alerts.config`).
``rlcockpit alert-test`` checks the channels; ``rlcockpit watchdog`` covers SIGKILL / OOM kills.
"""

from rlcockpit.alerts.channels import (
    CHANNELS,
    Channel,
    DeliveryError,
    dingtalk_sign,
    feishu_sign,
    make_channel,
)
from rlcockpit.alerts.config import AlertsConfig, channels_from_env, env_configured, load_alerts_config
from rlcockpit.alerts.manager import AlertManager, attach, get_manager
from rlcockpit.alerts.message import AlertMessage, from_finding

__all__ = [
    "CHANNELS", "AlertManager", "AlertMessage", "AlertsConfig", "Channel", "DeliveryError", "attach",
    "channels_from_env", "dingtalk_sign", "env_configured", "feishu_sign", "from_finding", "get_manager",
    "load_alerts_config", "make_channel",
]
