"""Reading a TRL / transformers console log: the metrics dicts ``Trainer`` prints to stdout.

What transformers prints (``trainer_callback.py``): at every logging step ``Trainer.log`` appends
``{**logs, "step": global_step}`` to ``state.log_history`` (what ``trainer_state.json`` keeps) and hands ``logs``
— **without** ``step`` — to the callbacks. ``ProgressCallback.on_log`` writes ``str(logs)`` with
``tqdm.write`` (``total_flos`` popped; transformers ≥ 4.5x formats floats as ``f"{v:.4g}"`` strings, so values
read ``'0.0123'``; older versions print raw floats, ``nan`` bare), or ``PrinterCallback`` ``print``\\s it when tqdm
is off. Evaluation dicts (``eval_*`` keys) and the end-of-training summary (``train_runtime``, ``train_loss``...)
are printed the same way. Around them: tqdm frames (the training bar ``  5%|▌    | 5/100 [..]``, redrawn right
after each dict), warnings, rich tables of samples.

Steps, in this order (the first that applies, for the whole file; :data:`STEP_SOURCES`):

1. a ``step`` key in the dicts (a callback or fork that prints it);
2. ``logging_steps`` when the user knows it (``--logging-steps N``): the k-th training dict is step k·N;
3. the training progress bar: the count ``n`` of the bar frame tqdm redraws right after the dict (or the last one
   before it) — ``n`` is ``global_step`` when the dict is written; used only when every training dict has one and
   they rise strictly (stdout captured block-buffered, or without the bar on stderr, is not trusted);
4. otherwise the logging points themselves, 1, 2, 3, ... with a note saying so.

An ``eval_*`` dict or the summary goes at its bar's count, else at the last training dict's step (as in
``log_history``, where they share the step of the log before them unless the bar says otherwise).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rlcockpit.integrations.verl_files import CUT_LINE_CHARS

STEP_KEY = "step"  # what transformers adds to a log_history entry (never to the printed dict)
SUMMARY_KEY = "train_runtime"  # the end-of-training summary dict
EVAL_PREFIX = "eval_"
STEP_SOURCES = ("step key", "logging_steps", "progress bar", "logging points")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# a tqdm frame of a bar without a description (the Trainer's training and evaluation bars): "  5%|▌   | 5/100 ["
_BAR = re.compile(r"(?:^|(?<=[\]\r\n]))\s*\d{1,3}%\|[^|\r\n]*\|\s*(\d+)/(\d+)\s*\[")
# where a printed dict may start: at the line start, or after tqdm's leftovers (frames, the blanks that clear them)
_DICT_START = re.compile(r"(?:^|\]|\r)\s*(?=\{')")
_NUMPY_CALLS = {"float", "np.float64", "np.float32", "numpy.float64", "numpy.float32", "np.int64", "tensor"}
# keys by which a printed dict is known as the Trainer's (a script's own config dict printed at start is not)
_TRAINER_KEYS = frozenset({"epoch", "loss", "grad_norm", "learning_rate", "train_runtime", "train_loss", STEP_KEY})


def trl_metrics(entry: Mapping[str, Any]) -> dict[str, float]:
    """The metrics of one TRL/transformers log entry (a ``log_history`` item or a printed dict): every numeric value
    but the step, ``epoch``, ``train_runtime`` and the like included, under the key TRL logged; ``None`` (TRL's
    "no valid value") and text are left out."""
    return {k: v for k, v in entry.items() if k != STEP_KEY and isinstance(v, (int, float))}


class BadValue(ValueError):
    """A value in a printed dict that is neither a number, a string nor None (``tensor(...)``, a list...)."""


def _value(node: ast.AST) -> Any:
    """A printed value: numbers, ``nan``/``inf`` as Python prints them, numeric strings (transformers' ``.4g``)
    as floats, other strings and None as they are, ``np.float64(x)`` as ``x``."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, float, str))):
        if isinstance(node.value, str):
            try:
                return float(node.value)
            except ValueError:
                return node.value
        return node.value
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and len(node.args) == 1 and ast.unparse(node.func) in _NUMPY_CALLS and \
            (not node.keywords or ast.unparse(node.func) == "tensor"):  # tensor(0.5, device='cuda:0')
        return _value(node.args[0])
    raise BadValue(ast.unparse(node)[:60])


def _pairs(node: ast.Dict) -> tuple[dict[str, Any], list[str]]:
    """``(entry, problems)``: a value that cannot be read loses its key only."""
    entry: dict[str, Any] = {}
    bad: list[str] = []
    for k, v in zip(node.keys, node.values):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
            continue
        try:
            entry[k.value] = _value(v)
        except BadValue as exc:
            bad.append(f"{k.value!r} = {exc}")
    return entry, bad


def _dict_node(text: str) -> ast.Dict | None:
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return node if isinstance(node, ast.Dict) else None


def parse_dict_text(text: str) -> tuple[dict[str, Any] | None, list[str], bool]:
    """``(entry, bad values, cut)`` for the text of one printed dict. A dict cut off before its ``}`` (a capture
    tool that keeps 4096 characters of a line, a killed job) keeps its complete pairs: the pair it was cut in is
    dropped, since a number cut after some of its digits would be wrong, not missing. ``entry`` is None when the
    text is not a dict literal."""
    text = text.rstrip()
    node = _dict_node(text)
    if node is not None:
        return (*_pairs(node), False)
    if text.endswith("}"):
        return None, [], False
    end = len(text)
    for _ in range(200):  # each try drops one more trailing pair
        end = text.rfind(", '", 0, end)
        if end < 0:
            break
        node = _dict_node(text[:end] + "}")
        if node is not None:
            return (*_pairs(node), True)
    return None, [], True


@dataclass
class ConsoleRecord:
    line: int
    entry: dict[str, Any]
    bar_after: tuple[int, int] | None = None  # (n, total) of the first bar frame after the dict
    bar_before: tuple[int, int] | None = None  # (n, total) of the last bar frame before it

    @property
    def training(self) -> bool:
        """A training logging point (not an evaluation dict, not the end-of-training summary)."""
        return SUMMARY_KEY not in self.entry and not any(k.startswith(EVAL_PREFIX) for k in self.entry)


@dataclass
class ConsoleLog:
    records: list[ConsoleRecord] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, text), in line order
    lost: list[tuple[int, str]] = field(default_factory=list)  # values left out of kept dicts: (line, text)


def _dict_text(segment: str) -> str | None:
    m = _DICT_START.search(segment)
    return segment[m.end():] if m else None


MAX_WRAP_LINES = 8  # a dict printed over more lines than this is not joined


def _open_dict(text: str) -> bool:
    """Whether the line's last piece starts a Trainer dict that does not close on it (and the line is not one a
    capture tool cut at :data:`CUT_LINE_CHARS`)."""
    if len(text) >= CUT_LINE_CHARS:
        return False
    body = _dict_text(_ANSI.sub("", text).split("\r")[-1])
    return body is not None and _dict_node(body.rstrip()) is None and not body.rstrip().endswith("}") and \
        _mentions_trainer_key(body)


def _joined(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """``(line number, text)``; a Trainer dict spread over several lines (a terminal's hard wrap copied from the
    screen, a ``pprint``) comes joined into one, under its first line's number, when the joined dict holds numbers
    only (a pprinted config is left alone). A dict that does not close within :data:`MAX_WRAP_LINES` lines, or
    before the next dict, is left as it was: its complete pairs are kept."""
    held: list[str] = []
    first = 0
    for line_no, raw in enumerate(lines, 1):
        raw = raw.rstrip("\r\n").lstrip("\ufeff")
        if held:
            held.append(raw)
            text = "".join(held)
            body = _dict_text(_ANSI.sub("", text).split("\r")[-1])
            node = _dict_node(body.rstrip()) if body is not None else None
            if node is not None:
                entry, bad = _pairs(node)
                if not bad and all(v is None or isinstance(v, (int, float)) for v in entry.values()):
                    yield first, text  # a Trainer log: numbers only (a pprinted config holds text)
                else:
                    yield from enumerate(held, first)
                held = []
            elif len(held) >= MAX_WRAP_LINES or "{'" in raw:
                yield from enumerate(held, first)
                held = []
            continue
        if "{'" in raw and _open_dict(raw):
            held, first = [raw], line_no
            continue
        yield line_no, raw
    yield from enumerate(held, first)


def read_console(lines: Iterable[str]) -> ConsoleLog:
    """Every printed metrics dict of a console log with the tqdm frames around it, and the problems (line, why)."""
    log = ConsoleLog()
    last_bar: tuple[int, int] | None = None
    for line_no, raw in _joined(lines):
        text = _ANSI.sub("", raw.rstrip("\r\n")).lstrip("\ufeff")  # a UTF-8 BOM before the first dict
        for segment in text.split("\r"):
            body = _dict_text(segment)
            head = segment if body is None else segment[:len(segment) - len(body)]
            for m in _BAR.finditer(head):
                last_bar = (int(m.group(1)), int(m.group(2)))
                if log.records and log.records[-1].bar_after is None:
                    log.records[-1].bar_after = last_bar
            if body is None:
                continue
            entry, bad, cut = parse_dict_text(body)
            if entry is None:
                if cut and len(text) >= CUT_LINE_CHARS:
                    log.problems.append((line_no, "cut off before its first complete pair; nothing kept"))
                elif not cut and _mentions_trainer_key(body):
                    log.problems.append((line_no, "not a Python dict literal; line skipped"))
                continue
            if bad:
                log.lost.append((line_no, f"value(s) not numbers, left out: {', '.join(bad)}"))
            if cut:
                why = f"a line of {len(text)} characters: cut by a capture tool?" if len(text) >= CUT_LINE_CHARS \
                    else "a job killed mid-print, or a copy cut short?"
                log.lost.append((line_no, f"the dict is cut off before its '}}' ({why}): its complete pairs kept, "
                                          "the pair it was cut in left out"))
            if trl_metrics(entry) and _is_trainer_log(entry):
                if log.records and log.records[-1].bar_after is None:
                    log.records[-1].bar_after = (-1, -1)  # the next dict came first: no bar after that one
                log.records.append(ConsoleRecord(line_no, entry, bar_before=last_bar))
    return log


def _is_trainer_log(entry: Mapping[str, Any]) -> bool:
    return any(k in _TRAINER_KEYS or k.startswith(EVAL_PREFIX) for k in entry)


def _mentions_trainer_key(text: str) -> bool:
    """Whether unreadable dict text was meant as a Trainer log (a script's own printout is not the import's business;
    a multi-line ``pprint`` of a config opens with ``{'key': value,`` and is not reported either)."""
    return f"'{EVAL_PREFIX}" in text or any(f"'{k}': " in text for k in _TRAINER_KEYS)


def _bar_steps(records: list[ConsoleRecord]) -> list[int] | None:
    """Each record's training-bar count, or None when the bar cannot be trusted for every training dict."""
    firsts = Counter(r.bar_after[1] for r in records if r.training and r.bar_after and r.bar_after[0] >= 0)
    if not firsts:
        return None
    total = firsts.most_common(1)[0][0]
    steps: list[int] = []
    for r in records:
        after = r.bar_after if r.bar_after and r.bar_after[1] == total else None
        before = r.bar_before if r.bar_before and r.bar_before[1] == total else None
        bar = after or before
        if bar is None:
            if r.training:
                return None
            steps.append(steps[-1] if steps else 0)
            continue
        steps.append(bar[0])
    train = [s for s, r in zip(steps, records) if r.training]
    if any(b <= a for a, b in zip(train, train[1:])):
        return None
    return steps


def assign_steps(records: list[ConsoleRecord], logging_steps: int | None = None) -> tuple[list[int], str]:
    """``(step of each record, how the steps were found)`` (one of :data:`STEP_SOURCES`; see the module doc)."""
    if records and all(isinstance(r.entry.get(STEP_KEY), int) for r in records):
        return [r.entry[STEP_KEY] for r in records], STEP_SOURCES[0]
    bar = None if logging_steps else _bar_steps(records)
    if bar is not None:
        return bar, STEP_SOURCES[2]
    every = logging_steps or 1
    steps, k = [], 0
    for r in records:
        if r.training:
            k += 1
        steps.append(max(k, 1) * every)
    return steps, STEP_SOURCES[1] if logging_steps else STEP_SOURCES[3]


def step_note(source: str, logging_steps: int | None, count: int) -> str | None:
    """What the user is told about the steps when they were not printed in the log."""
    if source == "logging_steps":
        return f"steps from --logging-steps {logging_steps}: the k-th training log is step {logging_steps}*k"
    if source == "logging points":
        return (f"the log prints no step and no training progress bar next to its {count} metrics dicts: "
                "steps are the logging points 1, 2, 3, ...; pass --logging-steps N (the run's logging_steps) "
                "to place them at N, 2N, ...")
    return None
