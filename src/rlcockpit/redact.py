"""Secrets never land in stored configs, logs, reports or third-party loggers.

Two rules, applied to configs, command lines, events and everything handed to other trackers:

* **by key name** — a value whose key reads as a secret is replaced by ``"***"``. Keys are split into
  words (``_ - . /``, camelCase); a key is secret when a word is one of :data:`SECRET_WORDS` (``secret``,
  ``password``, ``passwd``, ``auth``, ``credential``, ``webhook``, ``apikey``...), or when it contains the
  word pair ``api key`` / ``private key`` / ``access key`` / ``signing key``, or the word ``token`` — except
  where ``token`` is a tokenizer term (``pad_token``, ``max_new_tokens``, ``token_id``). Strings, integers and
  lists under such a key are masked (``api_keys: [a, b]`` → ``["***", "***"]``; a numeric ``password: 1234``
  too); a mapping under it has every string leaf masked. Floats, booleans and ``None`` are kept
  (``auth_timeout: 3.0`` is no secret), and under a ``token`` key only text is (a token is text).
* **by value shape** — anywhere in any string: ``Bearer <token>``, ``sk-…`` API keys, ``hf_…``/``ghp_…``/
  ``xox?-…``/``AKIA…`` tokens, credentials in URLs (``user:pass@host``, ``?token=``/``access_token=``/
  ``key=``…), and the hook paths of Slack, Feishu/Lark, DingTalk and WeCom; also rlcockpit's own tokens
  ``rlc_<id>_<secret>``, Google ``AIza…`` keys and JWTs.
* **``…_key``** — ``<provider>_key`` (``OPENAI_KEY``, ``wandb_key``, ``hf_key``: :data:`KEY_PROVIDERS`) is a
  secret name; any other key ending in ``key`` is masked only when its value looks like a credential (16+
  characters with letters and digits, no spaces), so verl's ``prompt_key: prompt`` stays.

Log records of the ``rlcockpit`` logger pass :class:`RedactFilter` (installed at import): a warning that
quotes a value never prints a secret.

:func:`redact_argv` also masks the value of a secret-named flag: ``--token=abc``, ``--api_key sk-…``.
This module is on the ground floor (stdlib only): tracking, alerts, preflight and the servers use it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

MASK = "***"

SECRET_WORDS = frozenset({
    "secret", "secrets", "password", "passwords", "passwd", "pwd", "passphrase", "auth", "authorization",
    "credential", "credentials", "webhook", "webhooks", "apikey", "apikeys", "dsn", "cookie", "cookies",
})
SECRET_PAIRS = frozenset({("api", "key"), ("api", "keys"), ("private", "key"), ("private", "keys"),
                          ("access", "key"), ("access", "keys"), ("signing", "key"), ("sign", "secret"),
                          ("hook", "url"), ("client", "secret")})
# ``token`` is a secret unless it is a tokenizer term: a special token's name, or a count/id/length of tokens
_TOKENIZER_BEFORE = frozenset({"pad", "eos", "bos", "unk", "sep", "cls", "mask", "start", "end", "stop", "image",
                               "video", "audio", "special", "think", "answer", "max", "min", "num", "per"})
_TOKENIZER_AFTER = frozenset({"id", "ids", "len", "length", "count", "counts", "limit", "budget", "level", "type",
                              "num", "number", "size", "index", "idx", "per", "rate", "start", "end", "text", "2"})

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<creds>[^/@\s:]+:[^/@\s]+)@", re.IGNORECASE)
_URL_QUERY = re.compile(
    r"(?P<k>[?&](access_token|token|key|secret|sign|password|api_key|apikey|auth)=)[^&\s#\"']+", re.IGNORECASE)
_HOOK_PATHS = re.compile(
    r"(hooks\.slack\.com/(?:services|workflows|triggers)/|open\.(?:feishu|larksuite)\.cn/open-apis/bot/v2/hook/|"
    r"open\.larksuite\.com/open-apis/bot/v2/hook/|qyapi\.weixin\.qq\.com/cgi-bin/webhook/send\?key=|"
    r"discord(?:app)?\.com/api/webhooks/)[^\s\"']+",
    re.IGNORECASE,
)
# credential shapes, each with the lower-case literals a text must hold for it to match (a substring test is
# ~1000x cheaper than the pattern on long words, and every sample cell passes here); group 1 is what stays
_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = tuple((lits, re.compile(rx, re.IGNORECASE)) for lits, rx in (
    (("bearer", "basic", "token"), r"\b((?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=-]{8,}"),  # Authorization values
    (("sk-",), r"\b(sk-)[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys (sk-…, sk-proj-…, sk-ant-…)
    (("hf_", "ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_", "glpat-", "xox"),
     r"\b(hf_|ghp_|gho_|ghs_|ghu_|ghr_|github_pat_|glpat-|xox[abprs]-)[A-Za-z0-9_-]{16,}"),
    (("rlc_",), r"(?<![A-Za-z0-9])(rlc_)[0-9a-f]{6,}_[A-Za-z0-9_-]{8,}"),  # rlcockpit's own tokens rlc_<id>_<secret>
    (("akia", "asia"), r"\b()(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    (("aiza",), r"\b()AIza[0-9A-Za-z_-]{35}"),  # Google API keys
    (("eyj",), r"\b()eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWTs
))
# ``<provider>_key`` names a credential (``OPENAI_KEY``, ``wandb_key``); any other ``…_key`` only when its value
# looks like one (verl's ``prompt_key: prompt`` and ``reward_fn_key: data_source`` are column names)
KEY_PROVIDERS = frozenset({
    "openai", "anthropic", "claude", "wandb", "hf", "huggingface", "github", "gh", "gitlab", "aws", "azure", "gcp",
    "google", "gemini", "cohere", "mistral", "groq", "together", "deepseek", "dashscope", "qwen", "moonshot", "zhipu",
    "swanlab", "mlflow", "comet", "neptune", "slack", "feishu", "lark", "dingtalk", "wecom", "discord", "telegram",
    "rlcockpit", "rlc", "openrouter", "replicate", "pinecone", "stripe", "sentry", "secret", "master", "license",
})
_CREDENTIAL_VALUE = re.compile(r"^(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9_+/=.:-]{16,}$")


def _shape_sub(m: re.Match[str]) -> str:
    return m.group(1) + MASK


def redact_text(text: str) -> str:
    """``text`` with credential-shaped parts masked (URLs with credentials, hook paths, API tokens)."""
    if not text or len(text) < 8:
        return text
    # each pattern runs only when its literal part is in the text (see _SHAPES)
    low = text.lower()
    if "://" in low and "@" in low:
        text = _URL_CREDS.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "hook" in low:
        text = _HOOK_PATHS.sub(lambda m: m.group(1) + MASK, text)
    if "=" in low:
        text = _URL_QUERY.sub(lambda m: m["k"] + MASK, text)
    for literals, pattern in _SHAPES:
        if any(lit in low for lit in literals):
            text = pattern.sub(_shape_sub, text)
    return text


def _words(key: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(key)]


def _secret_kind(key: Any) -> str | None:
    """``"name"`` when a key names a secret, ``"token"`` when only its ``token`` word does, ``"key"`` when it
    ends in ``key`` after no provider name (secret only with a credential-shaped value), else ``None``."""
    last = str(key).rsplit(".", 1)[-1].rsplit("/", 1)[-1]
    words = _words(last)
    kind = None
    for i, w in enumerate(words):
        if w in SECRET_WORDS or (i + 1 < len(words) and (w, words[i + 1]) in SECRET_PAIRS):
            return "name"
        if w in ("key", "keys") and i == len(words) - 1 and i:
            if words[i - 1] in KEY_PROVIDERS:
                return "name"
            kind = kind or "key"
        if w == "token":
            before = words[i - 1] if i else ""
            after = words[i + 1] if i + 1 < len(words) else ""
            if before not in _TOKENIZER_BEFORE and after not in _TOKENIZER_AFTER:
                kind = "token"
    return kind


def is_secret_key(key: Any) -> bool:
    """Whether a config key (its last dotted/slashed component) names a secret; see the module doc (a plain
    ``…_key`` is one only with a credential-shaped value, so it is not one by its name alone)."""
    return _secret_kind(key) not in (None, "key")


# Under an ``alerts`` section every URL-ish value is a credential: generic webhooks and self-hosted
# bots carry their token in the path (``/hook/<token>``), which no pattern can recognise.
_ALERT_URL_KEYS = frozenset({"url", "webhook", "webhook_url", "endpoint", "hook", "uri"})


def _mask_value(value: Any, text_only: bool = False) -> Any:
    """The masked form of a value found under a secret key (``text_only``: keep numbers)."""
    if value is None or value == "" or value == MASK or isinstance(value, (bool, float)):
        return value
    if isinstance(value, Mapping):
        return {k: _mask_value(v, True) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mask_value(v, text_only) for v in value]
    if text_only and not isinstance(value, (str, bytes)):
        return value
    return MASK


def redact(obj: Any, _key: str = "", _in_alerts: bool = False, _depth: int = 0) -> Any:
    """A copy of ``obj`` (dicts, lists, scalars) with secrets masked by key name and value shape."""
    if _depth > 100:  # a pathological nesting is not walked further: its strings are dropped, not leaked
        return MASK
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = str(k)
            inside = _in_alerts or key.lower() == "alerts"
            kind = _secret_kind(key) or ("name" if _in_alerts and key.lower() in _ALERT_URL_KEYS else None)
            if kind == "key":  # ``…_key``: a secret when its value looks like a credential
                kind = "name" if isinstance(v, str) and _CREDENTIAL_VALUE.match(v) else None
            out[k] = redact(v, key, inside, _depth + 1) if kind is None else _mask_value(v, kind == "token")
        return out
    if isinstance(obj, (list, tuple)):
        return [redact(v, _key, _in_alerts, _depth + 1) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line with secrets masked: values of secret-named flags (``--token=x``, ``--api_key x``,
    ``api_key=x`` overrides) and credential-shaped text anywhere."""
    out: list[str] = []
    mask_next = False
    for arg in argv:
        arg = str(arg)
        if mask_next and not arg.startswith("-"):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        name, eq, value = arg.partition("=")
        flag = name.lstrip("-")
        if eq and flag and is_secret_key(flag) and value:
            out.append(f"{name}={MASK}")
        elif arg.startswith("-") and not eq and is_secret_key(flag):
            out.append(arg)
            mask_next = True
        else:
            out.append(redact_text(arg))
    return out


class RedactFilter(logging.Filter):
    """Masks credential-shaped text in a log record's message (a warning quoting a rejected value)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format is the logging module's to report
            return True
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def _install_log_filter() -> None:
    log = logging.getLogger("rlcockpit")
    if not any(isinstance(f, RedactFilter) for f in log.filters):
        log.addFilter(RedactFilter())


_install_log_filter()
