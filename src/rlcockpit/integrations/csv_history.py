"""Reading a metric history saved as CSV (``rlcockpit import --kind csv``).

Three layouts are met in practice, all read by the same rules:

* TRL/transformers ``pd.DataFrame(trainer.state.log_history).to_csv(...)``: one row per logging call, columns
  ``step``, ``epoch``, ``loss``, ``reward``, ``kl``...; evaluation rows and training rows interleave, each with
  empty cells for the other's keys; pandas' unnamed index column comes first.
* W&B's "Export CSV": a run's history (``_step``, ``_runtime``, ``_timestamp``, keys) or a chart's data, where
  several runs share one file as ``<run name> - <key>`` columns with ``__MIN``/``__MAX`` companions (the
  band of a smoothed/sampled line) beside a ``Step`` column.
* a hand-written loop's log (``step,loss,reward``), maybe without a trailing newline when the job was killed.

Rules: an empty cell is "not logged at this step" (never 0 or NaN); ``nan``/``inf``/``-inf`` are real values (a NaN
loss is evidence for the detectors); rows sharing a step merge into one step (a key with two different values
there keeps the last); text and boolean columns are config when constant, else skipped; everything that was
guessed or dropped is counted in a note. Keys stay as logged; the metric guide maps aliases on read.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlcockpit.integrations.verl_files import SourceError

# the step column, by name, first match wins (``train/global_step``: TRL's step in a W&B history export)
STEP_COLUMNS = ("step", "global_step", "train/global_step", "Step", "_step", "iteration", "iter")
LAST_RESORT_STEP = "epoch"  # fractional in TRL (0.02, 0.04...): its distinct values in order become the steps
INDEX_COLUMNS = ("", "Unnamed: 0")  # pandas' index column (to_csv's default), never a metric
WANDB_BOOKKEEPING = frozenset({"_step", "_runtime", "_timestamp"})  # dropped, as the W&B importer drops them
BAND_SUFFIXES = ("__MIN", "__MAX")  # W&B chart export: the min/max band around each run's line
_RUN_COLUMN = re.compile(r"^(.+?) - (.+)$")  # W&B chart export: "<run name> - <key>"
_BOOLS = {"true": True, "false": False}


@dataclass
class CsvHistory:
    """What :func:`read_csv_history` found: ``rows`` by step (merged, in step order), row-level ``problems``
    (text naming file and line: the row was skipped), ``notes`` (what was guessed, merged or dropped)."""

    rows: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    run_name: str | None = None  # the W&B run read from a multi-run export
    step_column: str | None = None


def number(cell: str) -> float | None:
    """A cell as a number (``nan``, ``inf``, ``-inf``, ``NaN``, ``Infinity`` included), or None when it is not one."""
    try:
        return float(cell)
    except ValueError:
        return None


def _read_records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]], list[str], bool]:
    """``(header, [(line, cells)], problems, last line cut)``. A record the csv module cannot read (a cell over its
    size limit, an unclosed quote running into one) is a problem naming its line; reading goes on after it."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        text = f.read()
    reader = csv.reader(io.StringIO(text, newline=""))
    records: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(f"{path}:{reader.line_num}: not readable as CSV ({exc}); row skipped")
            continue
        if any(c.strip() for c in cells):
            records.append((reader.line_num, cells))
    if not records:
        raise SourceError(path, None, "empty file: no header row, no data")
    header_line, header = records.pop(0)
    if all(number(c) is not None for c in header if c.strip()):
        raise SourceError(path, header_line, f"no header row: the first row is numbers ({','.join(header)[:80]}); "
                                             "a CSV history needs column names (step,loss,...) on its first line")
    cut = bool(records) and not text.rstrip(" \t").endswith(("\n", "\r"))
    return header, records, problems, cut


def _step_column(header: list[str]) -> str | None:
    for name in (*STEP_COLUMNS, LAST_RESORT_STEP):
        if name in header:
            return name
    return None


def _select_run(columns: list[str], run: str | None, path: Path) -> tuple[dict[str, str], str | None, str | None]:
    """``({column: key}, run name, note)``. A W&B chart export (every metric column ``<run> - <key>``) keeps the
    asked run's columns, or the first run's; ``__MIN``/``__MAX`` companions are dropped."""
    parsed = {c: _RUN_COLUMN.match(c) for c in columns}
    if not columns or not all(parsed.values()):
        if run is not None:
            raise ValueError(f"{path}: --source-run {run!r} given, but this is not a W&B multi-run export "
                             "(no '<run name> - <key>' columns)")
        return {c: c for c in columns}, None, None
    runs = list(dict.fromkeys(m.group(1) for m in parsed.values()))  # in column order
    if run is not None and run not in runs:
        raise ValueError(f"{path}: no run {run!r} in this W&B export; its runs: {', '.join(runs)}")
    chosen = run if run is not None else runs[0]
    keep = {c: m.group(2) for c, m in parsed.items() if m.group(1) == chosen and not m.group(2).endswith(BAND_SUFFIXES)}
    bands = sum(1 for c in columns if c.endswith(BAND_SUFFIXES))
    how = "as asked (--source-run)" if run is not None else "the first one; pick another with --source-run NAME"
    note = (f"W&B chart export of {len(runs)} run(s) ({', '.join(runs)}): imported run {chosen!r}, {how}; "
            f"its '<run> - ' prefix removed from {len(keep)} key(s)"
            + (f"; {bands} __MIN/__MAX band column(s) dropped" if bands else ""))
    return keep, chosen, note


def _kinds(records: list[tuple[int, list[str]]], index: dict[str, int]) -> dict[str, str]:
    """Each column's kind: ``number`` (at least half its non-empty cells are numbers), ``bool`` or ``text``."""
    kinds = {}
    for col, i in index.items():
        cells = [cells[i].strip() for _line, cells in records if i < len(cells) and cells[i].strip()]
        numbers = sum(1 for c in cells if number(c) is not None)
        if not cells or numbers * 2 >= len(cells):
            kinds[col] = "number"
        elif all(c.lower() in _BOOLS for c in cells):
            kinds[col] = "bool"
        else:
            kinds[col] = "text"
    return kinds


def _non_numeric_columns(records, index, kinds, result: CsvHistory) -> None:
    """Constant text/bool columns become config; the others are skipped with a note."""
    skipped = []
    for col, kind in kinds.items():
        if kind == "number":
            continue
        i = index[col]
        values = {cells[i].strip() for _line, cells in records if i < len(cells) and cells[i].strip()}
        if len(values) == 1:
            value = values.pop()
            result.config[col] = _BOOLS[value.lower()] if kind == "bool" else value
        else:
            skipped.append(f"{col!r} ({kind}, {len(values)} values)")
    if skipped:
        result.notes.append(f"non-numeric column(s) not imported (they change from row to row): {', '.join(skipped)}")


def _steps(records, step_index: int | None, step_col: str | None, path: Path, result: CsvHistory) -> list[int | None]:
    """The step of each record (None: the row is skipped, with a problem naming file, line and column)."""
    if step_index is None:
        result.notes.append(f"no step column ({', '.join((*STEP_COLUMNS, LAST_RESORT_STEP))}): "
                            "each data row is its own step, numbered 1, 2, 3, ... in file order")
        return list(range(1, len(records) + 1))
    values: list[float | None] = []
    for line, cells in records:
        cell = cells[step_index].strip() if step_index < len(cells) else ""
        v = number(cell)
        if v is None or not math.isfinite(v) or (step_col != LAST_RESORT_STEP and v != int(v)):
            why = "empty" if not cell else f"{cell[:40]!r} is not a whole, finite number"
            result.problems.append(f"{path}:{line}: column {step_col!r}: step {why}; row skipped")
            v = None
        values.append(v)
    if step_col != LAST_RESORT_STEP:
        return [None if v is None else int(v) for v in values]
    rank = {v: k for k, v in enumerate(sorted({v for v in values if v is not None}), 1)}
    whole = all(v == int(v) for v in rank)
    result.notes.append(f"no step column ({', '.join(STEP_COLUMNS)}): steps come from "
                        "'epoch' (last resort): " + ("its whole values" if whole else
                                                      "its distinct values in order are steps 1, 2, 3, ...; "
                                                      "rows with the same epoch merge"))
    return [None if v is None else (int(v) if whole else rank[v]) for v in values]


@dataclass
class _Counts:
    bad: int = 0
    bad_first: str = ""
    wide: int = 0
    wide_first: int = 0
    conflicts: int = 0
    conflict_first: str = ""


def _merge(records, steps, keys: dict[str, int], path: Path, result: CsvHistory, width: int) -> _Counts:
    counts = _Counts()
    by_step: dict[int, dict[str, float]] = {}
    for (line, cells), step in zip(records, steps):
        if len(cells) > width:
            counts.wide += 1
            counts.wide_first = counts.wide_first or line
        if step is None:
            continue
        row = by_step.setdefault(step, {})
        for key, i in keys.items():
            cell = cells[i].strip() if i < len(cells) else ""
            if not cell:
                continue  # not logged at this step
            v = number(cell)
            if v is None:
                counts.bad += 1
                counts.bad_first = counts.bad_first or f"{path}:{line} column {key!r} = {cell[:40]!r}"
                continue
            old = row.get(key)
            if old is not None and old != v and not (math.isnan(old) and math.isnan(v)):
                counts.conflicts += 1
                counts.conflict_first = counts.conflict_first or f"{key!r} at step {step} ({old!r} then {v!r})"
            row[key] = v
    result.rows = [(s, m) for s, m in sorted(by_step.items()) if m]
    return counts


def _count_notes(counts: _Counts, width: int, result: CsvHistory) -> None:
    if counts.bad:
        result.notes.append(f"{counts.bad} non-numeric cell(s) in numeric columns skipped (first: {counts.bad_first})")
    if counts.wide:
        result.notes.append(f"{counts.wide} row(s) wider than the {width}-column header (first: line "
                            f"{counts.wide_first}): their cells under the header kept, the extra ones dropped")
    if counts.conflicts:
        result.notes.append(f"{counts.conflicts} cell(s) logged twice at one step with different values: the last "
                            f"row's value kept (first: {counts.conflict_first})")


def _metric_columns(header: list[str], step_col: str | None, run: str | None, path: Path,
                    result: CsvHistory) -> dict[str, int]:
    """``{key: column index}`` of the columns that may hold metrics (the run's, in a W&B chart export)."""
    index: dict[str, int] = {}
    unnamed, dup = 0, []
    for i, name in enumerate(header):
        name = name.strip()
        if name in INDEX_COLUMNS and i == 0:
            continue
        if not name:
            unnamed += 1
            continue
        if name in index:
            dup.append(name)
        index[name] = i
    if unnamed:
        result.notes.append(f"{unnamed} column(s) without a name in the header skipped")
    if dup:
        result.notes.append(f"column(s) named twice in the header, the last one kept: {', '.join(sorted(set(dup)))}")
    candidates = [c for c in index if c != step_col and c not in WANDB_BOOKKEEPING]
    keep, result.run_name, note = _select_run(candidates, run, path)
    if note:
        result.notes.append(note)
    keys = {key: index[col] for col, key in keep.items()}
    if step_col == LAST_RESORT_STEP:
        keys[LAST_RESORT_STEP] = index[LAST_RESORT_STEP]  # TRL's epoch is also a metric
    return keys


def read_csv_history(path: Path, run: str | None = None) -> CsvHistory:
    """Read ``path`` (see the module doc). Raises :class:`SourceError` when nothing can be read (an empty file, no
    header, a header without data rows, no numeric value under a metric column) and ``ValueError`` for a ``run`` the export does not hold."""
    header, records, problems, cut = _read_records(path)
    result = CsvHistory(problems=problems)
    if cut:  # a killed writer: the last line's last cell may be a number cut after some of its digits
        line, cells = records[-1]
        result.notes.append(f"{path}:{line}: the last line has no line end (the writer was stopped mid-line): "
                            f"its last cell ({cells[-1][:40]!r}) dropped, the cells before it kept")
        records[-1] = (line, cells[:-1])
    if not records:
        raise SourceError(path, 1, f"a header ({','.join(header)[:80]}) and no data rows: nothing to import")
    step_col = _step_column([h.strip() for h in header])
    result.step_column = step_col
    step_index = [h.strip() for h in header].index(step_col) if step_col else None
    keys = _metric_columns(header, step_col, run, path, result)
    kinds = _kinds(records, keys)
    _non_numeric_columns(records, keys, kinds, result)
    steps = _steps(records, step_index, step_col, path, result)
    numeric = {k: i for k, i in keys.items() if kinds[k] == "number"}
    _count_notes(_merge(records, steps, numeric, path, result, len(header)), len(header), result)
    if not result.rows:
        why = "; ".join(result.problems[:3] + result.notes[:3])
        raise SourceError(path, None, "no numeric metric value in any row: nothing to import"
                                      + (f" ({why})" if why else ""))
    return result


def rows_of(history: CsvHistory) -> Iterator[Any]:
    """The importer's row stream: problems first (as plain strings; the caller wraps them), then ``(step, metrics)``
    in step order."""
    yield from history.problems
    yield from history.rows
