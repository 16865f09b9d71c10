"""Filter expressions over runs, as typed in the runs table:

    actor_rollout_ref.actor.optim.lr < 1e-5 and status == "finished"
    "grpo" in tags or reward > 0.5
    summary["critic/score/mean"] >= 0.8 and not group == "ablation"

The text is parsed by Python's own parser (``ast.parse(mode="eval")``, so precedence and literals are
Python's) and then compiled by a whitelist walker into closures: no ``eval``, no attribute access on
objects, no calls. A name is looked up in this order: run fields (``status``, ``name``, ``group``,
``tags``, ``project``, ``id``, ``last_step``, ``exit_code``, ``created_at``...), the runs-table metric
columns (``reward``, ``kl``, ``entropy``, ``resp_len``), ``config.<path>`` / ``summary.<key>`` /
``meta.<path>`` prefixes, then the dotted path in the flattened config, then a summary key. A value
missing from a run compares false (except ``== None``), and so does a comparison of mismatched types.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from rlcockpit.ui.analysis import flatten, summary_fields

RUN_FIELDS = ("id", "name", "project", "group", "tags", "status", "notes", "created_at", "updated_at",
              "heartbeat_at", "finished_at", "last_step", "exit_code")
MISSING = object()
_CMP: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
}
Getter = Callable[[Any], Any]  # takes a RunView or RowView


class FilterError(ValueError):
    """A filter expression that cannot be used; the message says where and why."""


class RunView:
    """Lazy lookups into one run (the flattened config is built only if a filter asks for it)."""

    def __init__(self, run: Mapping[str, Any], metrics: Mapping[str, Any] | None = None) -> None:
        self.run = run
        self.metrics = metrics or {}
        self._flat: dict[str, dict[str, Any]] = {}

    def flat(self, part: str) -> dict[str, Any]:
        if part not in self._flat:
            value = self.run.get(part) or {}
            self._flat[part] = summary_fields(value) if part == "summary" else flatten(value)
        return self._flat[part]

    def summary(self, key: str) -> Any:
        """A summary key as stored, else W&B's ``key.min`` spelling of a nested summary."""
        summary = self.run.get("summary") or {}
        return summary[key] if key in summary else self.flat("summary").get(key, MISSING)

    def lookup(self, path: str) -> Any:
        """The value a filter or a table column named ``path`` refers to, or :data:`MISSING`."""
        if path in RUN_FIELDS:
            return self.run.get(path)
        if path in self.metrics:
            return self.metrics[path]
        head, _, rest = path.partition(".")
        if rest and head in ("config", "meta"):
            return self.flat(head).get(rest, MISSING)
        if rest and head == "summary":
            return self.summary(rest)
        flat = self.flat("config")
        if path in flat:
            return flat[path]
        return self.summary(path)


class RowView:
    """A sample row for filters: a column by name (``row["a/b"]`` for names that are not identifiers)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row

    def lookup(self, path: str) -> Any:
        if path.startswith("row."):
            path = path[4:]
        return self.row.get(path, MISSING)


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _safe(fn: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def cmp(a: Any, b: Any) -> bool:
        if a is MISSING or b is MISSING:
            return False
        try:
            return bool(fn(a, b))
        except TypeError:  # "abc" < 1, 1 in 2: not a match, not an error
            return False
    return cmp


class _Compiler:
    def __init__(self, text: str) -> None:
        self.text = text
        self.names: set[str] = set()

    def fail(self, node: ast.AST, what: str) -> FilterError:
        col = getattr(node, "col_offset", 0) + 1
        return FilterError(f"filter: {what} at column {col} of {self.text!r} (use comparisons such as "
                           f"status == \"finished\" joined by and / or / not)")

    def expr(self, node: ast.AST) -> Getter:
        if isinstance(node, ast.BoolOp):
            parts = [self.expr(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return lambda r: all(_truthy(p(r)) for p in parts)
            return lambda r: any(_truthy(p(r)) for p in parts)
        if isinstance(node, ast.UnaryOp):
            inner = self.expr(node.operand)
            if isinstance(node.op, ast.Not):
                return lambda r: not _truthy(inner(r))
            if isinstance(node.op, ast.USub):
                return lambda r: _neg(inner(r))
            if isinstance(node.op, ast.UAdd):
                return inner
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
            value = node.value
            return lambda r: value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self.expr(e) for e in node.elts]
            return lambda r: [i(r) for i in items]
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        path = _dotted(node)
        if path is not None:
            self.names.add(path)
            return lambda r: r.lookup(path)
        raise self.fail(node, f"{type(node).__name__} is not allowed")

    def compare(self, node: ast.Compare) -> Getter:
        left = self.expr(node.left)
        ops = []
        for op, right in zip(node.ops, node.comparators):
            fn = _CMP.get(type(op))
            if fn is None:
                raise self.fail(node, f"operator {type(op).__name__} is not allowed")
            ops.append((_safe(fn) if not isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) else _eq(fn),
                        self.expr(right)))

        def run(r: RunView) -> bool:
            a = left(r)
            for fn, get_b in ops:
                b = get_b(r)
                if not fn(a, b):
                    return False
                a = b
            return True
        return run

    def subscript(self, node: ast.Subscript) -> Getter:
        base = _dotted(node.value)
        key = node.slice
        if base not in ("config", "summary", "meta", "row") or not (
                isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise self.fail(node, 'only config["..."], summary["..."], meta["..."] and row["..."] can be indexed')
        path = f"{base}.{key.value}"
        self.names.add(path)
        return lambda r: r.lookup(path)


def _eq(fn: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def cmp(a: Any, b: Any) -> bool:
        a = None if a is MISSING else a
        b = None if b is MISSING else b
        return bool(fn(a, b))
    return cmp


def _truthy(v: Any) -> bool:
    return v is not MISSING and bool(v)


def _neg(v: Any) -> Any:
    return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else MISSING


def compile_filter(text: str) -> tuple[Callable[[Any], bool], set[str]]:
    """``(predicate, names used)`` for a filter expression; raises :class:`FilterError` with a position."""
    text = text.strip()
    if not text:
        return (lambda r: True), set()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        hint = " (= is written ==, && and || are and / or)" if any(t in text for t in ("&&", "||")) or (
            "=" in text.replace("==", "").replace("!=", "").replace("<=", "").replace(">=", "")) else ""
        raise FilterError(f"filter: invalid syntax at column {exc.offset or 0} of {text!r}{hint}") from None
    comp = _Compiler(text)
    fn = comp.expr(tree.body)
    return (lambda r: _truthy(fn(r))), comp.names
