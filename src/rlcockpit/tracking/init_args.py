"""``init()``'s run fields (project, name, group, tags, notes, id, config) checked once, before anything is stored.

Why here and not in the store: a wrong type or an unencodable string reaching the store kills the script
at startup (``sqlite3.ProgrammingError``, ``UnicodeEncodeError``), or is stored wrong (``tags="grpo"`` as
``['g','r','p','o']``). The rules, as W&B's:

* ``tags``: a ``str`` is one tag (W&B's ``Settings.validate_run_tags`` does ``(value,)``); any other iterable
  gives one tag per item (``str(item)``); a non-iterable (``tags=5``) is a ``TypeError`` naming ``tags``.
* ``project`` / ``name`` / ``group`` / ``notes``: text; a number becomes its text with one warning; anything
  else (a dict, a list) is a ``TypeError`` naming the field.
* ``id``: one path part (it names folders): no ``/``, ``\\``, NUL, ``..``; else a ``ValueError``.
* a lone surrogate (``"\\ud800"``, which no UTF-8 store or file accepts) or a NUL (which PostgreSQL refuses)
  anywhere in them or in the config, keys included, becomes U+FFFD with one warning naming the field or key;
  the script carries on, and both stores hold the same thing.
* a project, name, group or tag longer than :data:`~rlcockpit.store.rules.MAX_KEY_LEN` characters (the most
  an indexed PostgreSQL text column holds, so the team server refuses more) is cut to that length, with one
  warning naming the field: SQLite kept the whole text while the team store refused the run.
* secret-shaped text in them is masked (:mod:`rlcockpit.redact`), like the config.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rlcockpit.paths import UnsafePathError, check_relative
from rlcockpit.redact import redact_text
from rlcockpit.store.rules import MAX_KEY_LEN

logger = logging.getLogger("rlcockpit")

REPLACEMENT = "\ufffd"
INDEXED_FIELDS = frozenset({"project", "name", "group"})  # run text a store indexes (tags too, item by item)


@dataclass
class InitFields:
    project: str
    name: str | None
    group: str | None
    tags: list[str] | None
    notes: str | None
    id: str | None
    config: dict[str, Any]


def fix_surrogates(text: str) -> str:
    """``text`` with every lone surrogate, and every NUL (which PostgreSQL text and JSON refuse), replaced by
    U+FFFD; valid text is returned as it is."""
    if text.isascii():
        return text.replace("\0", REPLACEMENT) if "\0" in text else text
    try:
        text.encode("utf-8")
        return text.replace("\0", REPLACEMENT) if "\0" in text else text
    except UnicodeEncodeError:
        return "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" or c == "\0" else c for c in text)


def clean_config(value: Any, where: str, warned: list[str], depth: int = 0) -> Any:
    """A config value with lone surrogates and NULs replaced (in keys and strings, nested) and keys that are
    not text, numbers or booleans (a tuple) turned into their text; the places changed in ``warned``."""
    if isinstance(value, str):
        fixed = fix_surrogates(value)
        if fixed != value:
            warned.append(where)
        return fixed
    if depth > 100:
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            key = fix_surrogates(k) if isinstance(k, str) else k if isinstance(k, (int, float, bool)) else str(k)
            if key != k or type(key) is not type(k):  # a surrogate, or a key JSON cannot hold (a tuple): its text
                warned.append(f"{where}.{key}" if where else str(key))
            out[key] = clean_config(v, f"{where}.{key}" if where else str(key), warned, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [clean_config(v, f"{where}[{i}]", warned, depth + 1) for i, v in enumerate(value)]
    return value


def _text(field: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        logger.warning("rlcockpit: init(%s=%r): %s should be text; stored as %r", field, value, field, str(value))
        return str(value)
    raise TypeError(f"init({field}=...): {field} must be text, got a {type(value).__name__} ({value!r:.80})")


def _tags(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):  # as W&B: one tag, not one per character
        return [value]
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"init(tags=...): tags must be a list of text, got a {type(value).__name__} "
                        f"({value!r:.80})")
    return [str(t) for t in value]


def _safe(field: str, text: str | None, warned: list[str]) -> str | None:
    if text is None:
        return None
    fixed = fix_surrogates(text)
    if fixed != text:
        warned.append(field)
    return redact_text(fixed)


def _indexed(field: str, text: str | None, cut: list[str]) -> str | None:
    """``text`` cut to :data:`MAX_KEY_LEN` characters (a project, name, group or tag: indexed text)."""
    if text is None or len(text) <= MAX_KEY_LEN:
        return text
    cut.append(f"{field} ({len(text)} characters)")
    return text[:MAX_KEY_LEN]


def check_init_fields(*, project: Any, name: Any, group: Any, tags: Any, notes: Any, id: Any,
                      config: Mapping[str, Any]) -> InitFields:
    """The fields as stored (see the module doc); one warning lists every place a surrogate was replaced."""
    warned: list[str] = []
    if id is not None:
        if not isinstance(id, str) or not id:
            raise TypeError(f"init(id={id!r}): a run id must be non-empty text")
        try:
            one_part = check_relative(id, "init(id=...)") == id and "/" not in id and "\\" not in id
        except UnsafePathError as exc:
            raise ValueError(f"{exc}; a run id names folders, so it must be one plain name") from None
        if not one_part:
            raise ValueError(f"init(id={id!r}): a run id names folders: no '/', '\\' or '.' parts")
    tag_list = _tags(tags)
    cut: list[str] = []
    out = InitFields(
        project=_indexed("project", _safe("project", _text("project", project), warned), cut) or "",
        name=_indexed("name", _safe("name", _text("name", name), warned), cut),
        group=_indexed("group", _safe("group", _text("group", group), warned), cut),
        tags=None if tag_list is None else [_indexed(f"tags[{i}]", _safe(f"tags[{i}]", t, warned), cut) or ""
                                            for i, t in enumerate(tag_list)],
        notes=_safe("notes", _text("notes", notes), warned),
        id=id,
        config=clean_config(dict(config), "", (cfg_warned := [])),
    )
    warned += [f"config {w}" for w in cfg_warned]
    _warn_replaced("init()", warned)
    _warn_cut("init()", cut)
    return out


def _warn_cut(where: str, places: list[str]) -> None:
    if places:
        logger.warning("rlcockpit: %s: %s longer than %d characters (the most a store indexes): each stored as "
                       "its first %d", where, ", ".join(places), MAX_KEY_LEN, MAX_KEY_LEN)


def _warn_replaced(where: str, places: list[str]) -> None:
    if places:
        logger.warning("rlcockpit: %s: text with a lone surrogate (not valid UTF-8) or a NUL, or a key that is not "
                       "text, in %s: stored with U+FFFD in its place (a key: as its text)", where,
                       ", ".join(dict.fromkeys(places)))


def safe_config(config: Mapping[str, Any], where: str = "run.config") -> dict[str, Any]:
    """A config changed after ``init`` (``run.config.update``) cleaned like ``init``'s, with one warning."""
    places: list[str] = []
    out = clean_config(dict(config), "", places)
    _warn_replaced(where, places)
    return out


def safe_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Run fields set after ``init`` (``run.notes = ...``, ``run.tags = [...]``) as stored: surrogates and NULs
    replaced (one warning), secret shapes masked."""
    places: list[str] = []
    cut: list[str] = []
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "tags":
            out[key] = [_indexed(f"tags[{i}]", _safe(f"tags[{i}]", str(t), places), cut) for i, t in enumerate(value)]
        elif isinstance(value, str):
            fixed = _safe(key, value, places)
            out[key] = _indexed(key, fixed, cut) if key in INDEXED_FIELDS else fixed
        else:
            out[key] = value
    _warn_replaced("run fields", places)
    _warn_cut("run fields", cut)
    return out
