"""What a store can hold: the one home for the limits on metric keys, steps, text and run fields.

Why one module: ``log()`` (:mod:`rlcockpit.tracking.write.values`), the remote client (:mod:`rlcockpit.store.remote.client`,
which cleans each batch before it is spooled) and the team server (:mod:`rlcockpit.server.ingest`, which refuses
an op breaking them with a 422 naming the field) must agree — a key accepted locally but refused by the server
used to lose every good point sent with it.

The limits come from PostgreSQL: text columns cannot hold NUL, UTF-8 cannot encode a lone surrogate, an indexed
text value must fit a B-tree row (512 characters of at most 4 bytes stay under its 2,704 bytes), and steps are
``bigint``. Every check returns ``None`` (fine) or the reason, so callers can reject the smallest unit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

MAX_KEY_LEN = 512  # metric keys, run names, groups, tags, projects, event kinds (indexed text)
MAX_STEP = 2**63 - 1
MAX_TAGS = 256
MAX_JSON_DEPTH = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_TEXT = re.compile(r"[\x00\ud800-\udfff]")


def key_problem(key: Any) -> str | None:
    """Why ``key`` cannot be a metric key (or a sample column), or ``None`` when it can."""
    if not isinstance(key, str):
        return f"a {type(key).__name__} is not a key (keys are text)"
    if not key:
        return "an empty key"
    if len(key) > MAX_KEY_LEN:
        return f"a key of {len(key)} characters (at most {MAX_KEY_LEN})"
    if key.isascii() and key.isprintable():  # the common case, in C
        return None
    if _CONTROL.search(key):
        return "the key holds a control character (newline, tab, NUL...)"
    return text_problem(key)


def text_problem(text: str) -> str | None:
    """Why the string ``text`` cannot be stored (PostgreSQL's text, UTF-8), or ``None``."""
    m = _BAD_TEXT.search(text)
    if m is None:
        return None
    return "the text holds a NUL character" if m.group() == "\x00" else "the text holds a lone surrogate (not UTF-8)"


def step_problem(step: Any) -> str | None:
    """Why ``step`` (already an ``int``) cannot be stored, or ``None``."""
    if type(step) is not int or not 0 <= step <= MAX_STEP:
        return f"step {step!r} is outside 0..2**63-1"
    return None


def name_problem(value: Any, *, optional: bool = True) -> str | None:
    """A run name, group, tag, project: text of 1..:data:`MAX_KEY_LEN` characters."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        return f"expected text, got a {type(value).__name__}"
    if not value or len(value) > MAX_KEY_LEN:
        return f"expected 1-{MAX_KEY_LEN} characters, got {len(value)}"
    return text_problem(value)


def json_problem(value: Any, depth: int = 0) -> str | None:
    """Why a JSON value (config, summary, a sample row, an event payload) cannot be stored, or ``None``."""
    if isinstance(value, str):
        return text_problem(value)
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if depth > MAX_JSON_DEPTH:
        return f"nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, Mapping):
        for k, v in value.items():
            why = text_problem(k) if isinstance(k, str) else f"a {type(k).__name__} key"
            why = why or json_problem(v, depth + 1)
            if why:
                return f"{str(k)[:40]!r}: {why}"
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            why = json_problem(v, depth + 1)
            if why:
                return f"[{i}]: {why}"
        return None
    return None  # anything else is written as its string form (numpy scalars, objects)


def _number(v: Any) -> str | None:
    return None if isinstance(v, (int, float)) and not isinstance(v, bool) else f"expected a number, got {_kind(v)}"


def _optional(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else check(v)


def _object(v: Any) -> str | None:
    return json_problem(v) if isinstance(v, Mapping) else f"expected an object, got {_kind(v)}"


def _tags(v: Any) -> str | None:
    if not isinstance(v, (list, tuple)):
        return f"expected a list of text, got {_kind(v)}"
    if len(v) > MAX_TAGS:
        return f"{len(v)} tags (at most {MAX_TAGS})"
    for i, tag in enumerate(v):
        why = name_problem(tag, optional=False)
        if why:
            return f"[{i}]: {why}"
    return None


def _text_field(v: Any) -> str | None:
    return text_problem(v) if isinstance(v, str) else f"expected text, got {_kind(v)}"


def _integer(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and -2**63 <= v < 2**63
    return None if ok else f"expected an integer, got {_kind(v)}"


def _finite(v: Any) -> str | None:
    why = _number(v)
    return why or (None if math.isfinite(v) else "expected a finite number")


# run row fields: what a ``create`` op or an update may set, each with its check (types and sizes)
RUN_FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "id": lambda v: name_problem(v, optional=False),
    "project": lambda v: name_problem(v),
    "name": name_problem,
    "group": name_problem,
    "tags": _optional(_tags),
    "config": _optional(_object),
    "summary": _optional(_object),
    "meta": _optional(_object),
    "notes": _optional(_text_field),
    "status": lambda v: name_problem(v, optional=False),
    "boot_id": _optional(_text_field),
    "created_at": _finite,
    "heartbeat_at": _optional(_finite),
    "heartbeat_mono": _optional(_finite),
    "finished_at": _optional(_finite),
    "exit_code": _optional(_integer),
    "data_lost": _integer,
}


def run_field_problem(field: str, value: Any) -> str | None:
    """Why ``value`` cannot be the run field ``field``, or ``None``."""
    check = RUN_FIELD_CHECKS.get(field)
    return f"unknown run field {field!r}" if check is None else check(value)


def _kind(v: Any) -> str:
    return "null" if v is None else f"a {type(v).__name__} ({str(v)[:40]!r})"
