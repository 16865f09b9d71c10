"""Alert channels: console, generic webhook, Slack, Feishu/Lark, DingTalk, WeCom, e-mail.

Each channel turns an :class:`~rlcockpit.alerts.message.AlertMessage` into its platform's payload
and delivers it once, with a per-request timeout, raising :class:`DeliveryError` on any failure.
Retries, backoff, dedup and threading live in :mod:`rlcockpit.alerts.manager`, so a channel stays
a small, synchronous, testable function of (message, timeout).

Secrets (webhook URLs carry tokens in their path or query, signing secrets, SMTP passwords) are
kept on the channel object only: :meth:`Channel.describe` shows scheme://host only and
:meth:`Channel.scrub` removes secret strings from error messages before they are logged.

Add a channel with ``@CHANNELS.register("name")`` on a :class:`Channel` subclass.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import smtplib
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from email.message import EmailMessage
from typing import Any

from rlcockpit.alerts.message import AlertMessage
from rlcockpit.redact import MASK
from rlcockpit.registry import Registry

CHANNELS: Registry[type[Channel]] = Registry("alert channel")
DEFAULT_TIMEOUT_S = 5.0


class DeliveryError(RuntimeError):
    """One delivery attempt failed; the message is already scrubbed of secrets."""


class ChannelConfigError(ValueError):
    """A channel's configuration is invalid; the message names the channel and the key."""


class Channel:
    """Base class. Subclasses set ``type`` and implement :meth:`send`."""

    type = "channel"
    secret_fields: tuple[str, ...] = ()  # config keys whose values must never be shown

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)
        self.name = str(self.options.get("name") or self.type)

    @classmethod
    def from_config(cls, options: Mapping[str, Any]) -> Channel:
        return cls(options)

    def send(self, msg: AlertMessage, timeout: float) -> None:
        raise NotImplementedError

    def problems(self) -> list[str]:
        """Configuration problems found without sending anything (used by preflight)."""
        return []

    def secrets(self) -> list[str]:
        out = []
        for f in self.secret_fields:
            v = self.options.get(f)
            if isinstance(v, str) and v:
                out.append(v)
                if f in ("url", "webhook"):
                    parts = urllib.parse.urlsplit(v)
                    out += [p for p in (parts.path, parts.query) if len(p) > 1]
        return out

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this channel replaced by ``***``."""
        for s in sorted(self.secrets(), key=len, reverse=True):
            text = text.replace(s, MASK)
        return text

    def describe(self) -> str:
        return self.name


# --------------------------------------------------------------------------- console

@CHANNELS.register("console", "stderr")
class ConsoleChannel(Channel):
    """Prints the alert to stderr (or stdout with ``stream: stdout``): always available."""

    type = "console"

    def send(self, msg: AlertMessage, timeout: float) -> None:
        stream = sys.stdout if self.options.get("stream") == "stdout" else sys.stderr
        print("\n" + msg.plain_text() + "\n", file=stream, flush=True)


# --------------------------------------------------------------------------- HTTP helpers

def _url_problems(url: Any, key: str = "url") -> list[str]:
    if not url or not isinstance(url, str):
        return [f"missing {key!r}"]
    if MASK in url:
        return [f"{key!r} is redacted ({MASK}); give the real URL from your environment or an alerts file"]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return [f"{key!r} is not an http(s) URL"]
    return []


class HttpChannel(Channel):
    """A JSON POST to a URL; subclasses build the payload and check the platform's reply."""

    secret_fields = ("url", "webhook", "secret")

    @property
    def url(self) -> str:
        return str(self.options.get("url") or self.options.get("webhook") or "")

    def problems(self) -> list[str]:
        return [f"{self.name}: {p}" for p in _url_problems(self.url)]

    def describe(self) -> str:
        parts = urllib.parse.urlsplit(self.url)
        return f"{self.name} ({parts.scheme}://{parts.netloc})" if parts.netloc else self.name

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        raise NotImplementedError

    def target_url(self) -> str:
        return self.url

    def check_reply(self, status: int, body: bytes) -> None:
        """Raise DeliveryError when a 2xx reply still reports an error (Feishu, DingTalk, WeCom)."""

    def send(self, msg: AlertMessage, timeout: float) -> None:
        problems = _url_problems(self.url)
        if problems:
            raise DeliveryError(problems[0])
        data = json.dumps(self.payload(msg), ensure_ascii=False).encode()
        req = urllib.request.Request(self.target_url(), data=data, method="POST",
                                     headers={"Content-Type": "application/json; charset=utf-8",
                                              "User-Agent": "rlcockpit-alerts"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, body = resp.status, resp.read(65536)
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise DeliveryError(self.scrub(f"connection failed: {exc.reason}")) from None
        except TimeoutError:
            raise DeliveryError(f"timed out after {timeout:.1f}s") from None
        except OSError as exc:
            raise DeliveryError(self.scrub(f"{type(exc).__name__}: {exc}")) from None
        if not 200 <= status < 300:
            raise DeliveryError(f"HTTP {status}")
        self.check_reply(status, body)


def _json_reply(body: bytes) -> dict[str, Any]:
    try:
        out = json.loads(body.decode() or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return out if isinstance(out, dict) else {}


@CHANNELS.register("webhook", "generic")
class WebhookChannel(HttpChannel):
    """Generic webhook: POSTs the whole alert as JSON (``AlertMessage.to_dict()`` + ``text``)."""

    type = "webhook"

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        return {**msg.to_dict(), "source": "rlcockpit", "headline": msg.headline, "body": msg.plain_text()}


@CHANNELS.register("slack")
class SlackChannel(HttpChannel):
    """Slack incoming webhook: ``text`` fallback plus Block Kit ``header`` and ``section`` blocks."""

    type = "slack"

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        body = msg.markdown(bold="*", link_style="slack").split("\n", 1)[-1]
        return {
            "text": msg.headline,
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": msg.headline[:150]}},
                {"type": "section", "text": {"type": "mrkdwn", "text": body[:2900] or msg.title}},
            ],
        }


def feishu_sign(timestamp: str, secret: str) -> str:
    """Feishu/Lark custom bot signature: HMAC-SHA256 keyed with ``"<timestamp>\\n<secret>"`` over an
    empty message, base64-encoded (timestamp in seconds)."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", digestmod=hashlib.sha256).digest()).decode()


@CHANNELS.register("feishu", "lark")
class FeishuChannel(HttpChannel):
    """Feishu/Lark custom bot: an interactive card; ``secret`` adds ``timestamp`` + ``sign``."""

    type = "feishu"
    TEMPLATES = {"info": "blue", "warning": "orange", "critical": "red"}

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        body = msg.markdown().split("\n", 1)[-1]
        out: dict[str, Any] = {
            "msg_type": "interactive",
            "card": {
                "config": {"wide_screen_mode": True},
                "header": {"title": {"tag": "plain_text", "content": msg.headline},
                           "template": self.TEMPLATES.get(msg.level, "orange")},
                "elements": [{"tag": "div", "text": {"tag": "lark_md", "content": body or msg.title}}],
            },
        }
        secret = self.options.get("secret")
        if secret:
            ts = str(int(time.time()))
            out = {"timestamp": ts, "sign": feishu_sign(ts, str(secret)), **out}
        return out

    def check_reply(self, status: int, body: bytes) -> None:
        reply = _json_reply(body)
        code = reply.get("code", reply.get("StatusCode", 0))
        if code not in (0, None):
            raise DeliveryError(f"feishu replied code {code}: {reply.get('msg') or reply.get('StatusMessage')}")


def dingtalk_sign(timestamp_ms: str, secret: str) -> str:
    """DingTalk robot signature: HMAC-SHA256 keyed with the secret over ``"<timestamp>\\n<secret>"``,
    base64-encoded, then URL-encoded (timestamp in milliseconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), digestmod=hashlib.sha256).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest))


@CHANNELS.register("dingtalk", "dingding")
class DingTalkChannel(HttpChannel):
    """DingTalk robot: a markdown message; ``secret`` appends ``&timestamp=..&sign=..`` to the URL."""

    type = "dingtalk"

    def target_url(self) -> str:
        secret = self.options.get("secret")
        if not secret:
            return self.url
        ts = str(int(time.time() * 1000))
        sep = "&" if "?" in self.url else "?"
        return f"{self.url}{sep}timestamp={ts}&sign={dingtalk_sign(ts, str(secret))}"

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        return {"msgtype": "markdown", "markdown": {"title": msg.headline[:64], "text": msg.markdown()}}

    def check_reply(self, status: int, body: bytes) -> None:
        reply = _json_reply(body)
        if reply.get("errcode", 0) not in (0, None):
            raise DeliveryError(f"dingtalk replied errcode {reply['errcode']}: {reply.get('errmsg')}")

    def problems(self) -> list[str]:
        out = super().problems()
        host = urllib.parse.urlsplit(self.url).hostname or ""
        if not out and host.endswith("dingtalk.com") and "access_token=" not in self.url:
            out.append(f"{self.name}: 'url' has no access_token= parameter (copy the robot's full webhook URL)")
        return out


@CHANNELS.register("wecom", "wechat_work", "wxwork")
class WeComChannel(HttpChannel):
    """WeCom (企业微信) group robot: ``msgtype: markdown`` (content ≤ 4096 bytes)."""

    type = "wecom"

    def payload(self, msg: AlertMessage) -> dict[str, Any]:
        content = msg.markdown()
        while len(content.encode()) > 4000:
            content = content[: int(len(content) * 0.9)]
        return {"msgtype": "markdown", "markdown": {"content": content}}

    def check_reply(self, status: int, body: bytes) -> None:
        reply = _json_reply(body)
        if reply.get("errcode", 0) not in (0, None):
            raise DeliveryError(f"wecom replied errcode {reply['errcode']}: {reply.get('errmsg')}")


# --------------------------------------------------------------------------- e-mail

def _truthy(v: Any) -> bool:
    return str(v).strip().lower() in ("1", "true", "yes", "on") if v is not None else False


@CHANNELS.register("email", "smtp")
class EmailChannel(Channel):
    """E-mail over SMTP: ``host``, ``port``, ``user``, ``password``, ``from``, ``to`` (list or
    comma-separated), ``ssl`` (implicit TLS, port 465) or ``starttls`` (port 587); ``ca_file`` trusts a
    private CA. Certificates are always verified."""

    type = "email"
    secret_fields = ("password",)

    def _recipients(self) -> list[str]:
        to = self.options.get("to") or []
        if isinstance(to, str):
            to = [t.strip() for t in to.split(",")]
        return [t for t in to if t]

    def problems(self) -> list[str]:
        out = []
        if not self.options.get("host"):
            out.append(f"{self.name}: missing 'host'")
        if not self._recipients():
            out.append(f"{self.name}: missing 'to'")
        if self.options.get("user") and not self.options.get("password"):
            out.append(f"{self.name}: 'user' is set but 'password' is missing")
        if self.options.get("password") == MASK:
            out.append(f"{self.name}: 'password' is redacted; give it from the environment")
        if _truthy(self.options.get("ssl")) and _truthy(self.options.get("starttls")):
            out.append(f"{self.name}: choose one of 'ssl' and 'starttls'")
        return out

    def describe(self) -> str:
        return f"{self.name} ({self.options.get('host')}:{self.port})"

    @property
    def port(self) -> int:
        if self.options.get("port"):
            return int(self.options["port"])
        return 465 if _truthy(self.options.get("ssl")) else (587 if _truthy(self.options.get("starttls")) else 25)

    def send(self, msg: AlertMessage, timeout: float) -> None:
        problems = self.problems()
        if problems:
            raise DeliveryError(problems[0])
        email = EmailMessage()
        email["Subject"] = msg.headline
        email["From"] = str(self.options.get("from") or self.options.get("user") or "rlcockpit@localhost")
        email["To"] = ", ".join(self._recipients())
        email.set_content(msg.plain_text())
        host = str(self.options["host"])
        try:
            ctx = ssl.create_default_context(cafile=self.options.get("ca_file") or None)
            if _truthy(self.options.get("ssl")):
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, self.port, timeout=timeout, context=ctx)
            else:
                smtp = smtplib.SMTP(host, self.port, timeout=timeout)
            with smtp:
                if _truthy(self.options.get("starttls")):
                    smtp.starttls(context=ctx)
                if self.options.get("user"):
                    smtp.login(str(self.options["user"]), str(self.options.get("password") or ""))
                smtp.send_message(email)
        except TimeoutError:
            raise DeliveryError(f"SMTP timed out after {timeout:.1f}s") from None
        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
            raise DeliveryError(self.scrub(f"SMTP {type(exc).__name__}: {exc}")) from None


def make_channel(options: Mapping[str, Any], where: str = "alerts.channels") -> Channel:
    """A channel from its config dict (``{"type": "slack", "url": ...}``); bad input names ``where``."""
    if not isinstance(options, Mapping):
        raise ChannelConfigError(f"{where}: each channel must be a mapping with a 'type', got {options!r}")
    kind = options.get("type")
    if not kind:
        raise ChannelConfigError(f"{where}: channel has no 'type' (one of {', '.join(CHANNELS.names())})")
    try:
        cls = CHANNELS.get(str(kind))
    except KeyError as exc:
        raise ChannelConfigError(f"{where}: {exc.args[0]}") from None
    return cls.from_config(options)
