"""Secrets never land in stored configs, logs or reports.

:func:`redact` walks a config and replaces the values of secret-looking keys (passwords,
tokens, API keys, signing secrets, webhook URLs) with ``"***"``; URL-shaped values that carry
credentials (``user:pass@host``, ``?token=``/``access_token=``/``key=`` query parameters,
Slack/Feishu/DingTalk/WeCom hook paths) are masked wherever they appear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

SECRET_KEY = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|webhook(_url)?|"
    r"credential|auth(orization)?|signing[_-]?key|sign_secret|hook_url|smtp_password|dsn)$",
    re.IGNORECASE,
)
_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<creds>[^/@\s:]+:[^/@\s]+)@", re.IGNORECASE)
_URL_QUERY = re.compile(r"(?P<k>[?&](access_token|token|key|secret|sign|password|api_key)=)[^&\s#]+", re.IGNORECASE)
_HOOK_PATHS = re.compile(
    r"(hooks\.slack\.com/services/|open\.(feishu|larksuite)\.cn/open-apis/bot/v2/hook/|"
    r"open\.larksuite\.com/open-apis/bot/v2/hook/|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=)[^\s\"']+",
    re.IGNORECASE,
)


def redact_text(text: str) -> str:
    """Mask credentials inside a free-form string (URLs, hook paths)."""
    text = _URL_CREDS.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _HOOK_PATHS.sub(lambda m: m.group(1) + MASK, text)
    return _URL_QUERY.sub(lambda m: m["k"] + MASK, text)


def is_secret_key(key: str) -> bool:
    last = str(key).rsplit(".", 1)[-1].rsplit("/", 1)[-1]
    return bool(SECRET_KEY.search(last))


# Under an ``alerts`` section every URL-ish value is a credential: generic webhooks and self-hosted
# bots carry their token in the path (``/hook/<token>``), which no pattern can recognise.
_ALERT_URL_KEYS = frozenset({"url", "webhook", "webhook_url", "endpoint", "hook", "uri"})


def redact(obj: Any, _key: str = "", _in_alerts: bool = False) -> Any:
    """A copy of ``obj`` (dicts, lists, scalars) with secrets masked."""
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = str(k)
            inside = _in_alerts or key.lower() == "alerts"
            secret = is_secret_key(key) or (_in_alerts and key.lower() in _ALERT_URL_KEYS)
            if secret and v not in (None, "", MASK) and not isinstance(v, Mapping):
                out[k] = MASK
            else:
                out[k] = redact(v, key, inside)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact(v, _key, _in_alerts) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj
