"""Readers for ``rlcockpit import``: each turns one kind of finished-run record into an :class:`Imported`.

Each reader is registered in :data:`IMPORTERS` under the ``--kind`` name with a ``detect(source)``
companion used when no kind is given. Readers yield metric rows in step order; a single unusable record
(a step out of range) is yielded as a :class:`RowProblem` and skipped; at the first unreadable part of a
file they stop with a :class:`~rlcockpit.integrations.verl_files.SourceError` (file and line or offset),
after everything before it — the importer stores what was read and reports the problems and the error.
"""

from __future__ import annotations

import heapq
import json
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from rlcockpit.integrations.csv_history import read_csv_history, rows_of
from rlcockpit.integrations.trl_console import ConsoleLog, assign_steps, read_console, step_note, trl_metrics
from rlcockpit.integrations.verl_files import (
    TOO_DEEP,
    BadRow,
    SourceError,
    load_config_file,
    log_lines,
    looks_like_console_log,
    looks_like_file_logger,
    parse_console_line_cut,
    parse_file_logger_line,
    read_rollout_file,
    rollout_files,
    verl_config,
)
from rlcockpit.registry import Registry
from rlcockpit.tracking.write.values import BadStep, check_step


class RowProblem(str):
    """Yielded among the rows for one record that was skipped (the text names file, line and why)."""


class ValueLost(RowProblem):
    """Yielded among the rows for a value left out of a record that was kept (a line cut by a capture tool: its
    complete pairs are stored, the pair it was cut in is not). Counted apart from skipped records."""


class SampleProblem(NamedTuple):
    """Yielded among the sample batches for samples that could not be read (``text`` names file and why);
    the importer records it and goes on."""

    step: int
    text: str


Rows = Iterator["tuple[int, dict[str, Any]] | RowProblem"]
SampleBatches = Iterator["tuple[int, list[dict[str, Any]]] | SampleProblem"]


@dataclass
class ImportOptions:
    rollout_dir: str | None = None
    run_id: str | None = None  # MLflow run id
    tracking_uri: str | None = None  # MLflow tracking URI
    logging_steps: int | None = None  # a console log's logging_steps, when it prints no step (TRL/transformers)
    source_run: str | None = None  # csv: the run to read from a W&B multi-run export (default: the first)


@dataclass
class Imported:
    """What a reader found. ``rows``/``samples`` are lazy: reading errors surface while iterating."""

    kind: str
    rows: Rows
    name: str | None = None
    project: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    samples: SampleBatches = field(default_factory=lambda: iter(()))
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the user should know about how the source was read


@dataclass
class Importer:
    read: Callable[[str, ImportOptions], Imported]
    detect: Callable[[str], bool]


IMPORTERS: Registry[Importer] = Registry("import source")


def _register(name: str, detect: Callable[[str], bool], *aliases: str) -> Callable:
    def deco(fn: Callable[[str, ImportOptions], Imported]) -> Callable[[str, ImportOptions], Imported]:
        IMPORTERS.add(name, Importer(read=fn, detect=detect), *aliases)
        return fn

    return deco


# ---- verl file logger / console log ---------------------------------------------------------------

def _verl_rows(path: Path, console: bool) -> Rows:
    for line_no, raw in enumerate(log_lines(path), 1):
        text = raw.decode("utf-8", errors="replace")
        if console:
            cut = parse_console_line_cut(text, cut=not raw.endswith(b"\n"))
            parsed = cut[:2] if cut else None
            if cut and cut[2] is not None:
                yield ValueLost(_cut_pair_text(path, line_no, text, raw, cut[2]))
        else:
            try:
                parsed = parse_file_logger_line(text, path, line_no)
            except BadRow as exc:
                yield RowProblem(str(exc))
                continue
            except SourceError:
                if not raw.endswith(b"\n"):
                    raise SourceError(path, line_no, "the last line is cut off (no newline, not valid JSON): "
                                      "the job may have been killed mid-write") from None
                raise
        if parsed is not None and parsed[1]:
            yield parsed


def _cut_pair_text(path: Path, line_no: int, text: str, raw: bytes, pair: str) -> str:
    """What a cut console line lost, in words: which pair and why it was not stored."""
    key, colon, _ = pair.partition(":")
    what = f"the pair {key.strip()[:80]!r}" if colon else f"an unfinished pair ({pair.strip()[:80]!r}...)"
    why = ("the last line has no newline (cut off?)" if not raw.endswith(b"\n")
           else f"the line is {len(text.rstrip(chr(13) + chr(10)))} characters long (cut by a capture tool?)")
    return f"{path}:{line_no}: {why}: its complete pairs kept, {what} left out, since its value may have lost digits"


def _first_line_error(path: Path) -> None:
    """Raise the precise error of the first line when it was meant as a file-logger record (JSON)."""
    for line_no, raw in enumerate(log_lines(path), 1):
        text = raw.decode("utf-8", errors="replace")
        if text.strip():
            if text.lstrip().startswith("{"):
                parse_file_logger_line(text, path, line_no)
            return


def _verl_samples(rollout_dir: str | None) -> SampleBatches:
    if not rollout_dir:
        return
    for step, path in rollout_files(rollout_dir):
        rows = read_rollout_file(path)  # strict: a bad line names its file and line
        if rows:
            yield step, rows


def _detect_verl(source: str) -> bool:
    p = Path(source)
    return p.is_file() and (looks_like_file_logger(p) or looks_like_console_log(p))


@_register("verl", _detect_verl, "verl-file", "verl-console")
def read_verl(source: str, opts: ImportOptions) -> Imported:
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"verl log {path} does not exist")
    console = not looks_like_file_logger(path)
    if console and not looks_like_console_log(path):
        _first_line_error(path)
        raise SourceError(path, 1, 'neither a verl file-logger JSONL ({"step": N, "data": {...}} per line) '
                                   "nor a verl console log (step:N - key:value ...)")
    if opts.rollout_dir and not Path(opts.rollout_dir).is_dir():
        raise FileNotFoundError(f"rollout dir {opts.rollout_dir} does not exist")
    return Imported(kind="verl", rows=_verl_rows(path, console), name=path.stem, project="verl",
                    config=verl_config(None), samples=_verl_samples(opts.rollout_dir),
                    meta={"framework": "verl", "format": "console" if console else "file-logger"})


# ---- TRL / transformers trainer_state.json --------------------------------------------------------

def _find_trainer_state(source: str) -> Path:
    p = Path(source)
    if p.is_file():
        return p
    if (p / "trainer_state.json").is_file():
        return p / "trainer_state.json"
    ckpts = sorted(p.glob("checkpoint-*/trainer_state.json"), key=lambda q: int(q.parent.name.split("-")[-1])
                   if q.parent.name.split("-")[-1].isdigit() else -1)
    if ckpts:
        return ckpts[-1]
    raise FileNotFoundError(f"no trainer_state.json at {p}")


def _detect_trl(source: str) -> bool:
    try:
        return _find_trainer_state(source).name.endswith(".json") and "log_history" in \
            _find_trainer_state(source).read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except (FileNotFoundError, OSError):
        return False


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _trl_entries(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], SourceError | None]:
    """``(state without log_history, entries, error)``; a broken file yields the entries before the break."""
    text = path.read_text(encoding="utf-8-sig", errors="replace")  # -sig: a BOM (a file saved on Windows) is no error
    try:
        state = json.loads(text)
        if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
            raise SourceError(path, 1, "no log_history list: not a transformers/TRL trainer_state.json")
        entries = state.pop("log_history")
        return state, entries, None
    except json.JSONDecodeError as exc:
        err = SourceError(path, exc.lineno, f"not valid JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        err = SourceError(path, 1, TOO_DEEP)
    start = text.find('"log_history"')
    if start < 0:
        raise err
    pos = text.find("[", start) + 1
    dec = json.JSONDecoder()
    entries: list[dict[str, Any]] = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = dec.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = TOO_DEEP if isinstance(exc, RecursionError) else "cut off or invalid"
            err = SourceError(path, _line_of(text, pos), f"log_history entry is {why}; "
                                                         f"{len(entries)} entries before it were imported")
            break
        if isinstance(obj, dict):
            entries.append(obj)
    return {}, entries, err


def _trl_rows(entries: list[dict[str, Any]], err: SourceError | None) -> Rows:
    for e in entries:
        step = e.get("step")
        if step is None:
            continue
        metrics = trl_metrics(e)
        if metrics:
            yield int(step), metrics
    if err is not None:
        raise err


@_register("trl", _detect_trl, "transformers", "trainer_state")
def read_trl(source: str, opts: ImportOptions) -> Imported:
    path = _find_trainer_state(source)
    state, entries, err = _trl_entries(path)
    run_dir = path.parent.parent if path.parent.name.startswith("checkpoint-") else path.parent
    config = {"trainer_state": {k: v for k, v in state.items() if isinstance(v, (int, float, str, bool))}}
    return Imported(kind="trl", rows=_trl_rows(entries, err), name=run_dir.name, project="trl", config=config,
                    meta={"framework": "trl"})


# ---- TRL / transformers console log --------------------------------------------------------------

def _console_lines(path: Path, limit: int | None = None) -> Iterator[str]:
    """Lines split at ``\\n`` only: tqdm's ``\\r`` frames stay on their line (line numbers match an editor's)."""
    for raw in log_lines(path, limit):
        yield raw.decode("utf-8", errors="replace")


def _detect_trl_console(source: str) -> bool:
    p = Path(source)
    try:
        return p.is_file() and bool(read_console(_console_lines(p, 2_000_000)).records)
    except (OSError, SourceError):
        return False


def _console_rows(path: Path, log: ConsoleLog, steps: list[int], damaged: list[SourceError]) -> Rows:
    """The dicts' rows with the problems (bad lines, bad values) among them in line order; then the error that
    ended the reading (a damaged gzip stream), if any."""
    problems = iter(heapq.merge([(line, text, RowProblem) for line, text in log.problems],
                                [(line, text, ValueLost) for line, text in log.lost], key=lambda p: p[0]))
    pending = next(problems, None)
    for record, step in zip(log.records, steps):
        while pending is not None and pending[0] <= record.line:
            yield pending[2](f"{path}:{pending[0]}: {pending[1]}")
            pending = next(problems, None)
        yield step, trl_metrics(record.entry)
    while pending is not None:
        yield pending[2](f"{path}:{pending[0]}: {pending[1]}")
        pending = next(problems, None)
    if damaged:
        raise damaged[0]


@_register("trl-console", _detect_trl_console, "transformers-console")
def read_trl_console(source: str, opts: ImportOptions) -> Imported:
    """The metrics dicts a transformers/TRL ``Trainer`` printed to stdout (``train.log``, ``nohup.out``, W&B's
    ``output.log``); how steps are found: :mod:`rlcockpit.integrations.trl_console`."""
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"console log {path} does not exist")
    damaged: list[SourceError] = []

    def lines() -> Iterator[str]:
        try:
            yield from _console_lines(path)
        except SourceError as exc:  # what was read before it is kept; the import reports where it stopped
            damaged.append(exc)

    log = read_console(lines())
    if not log.records:
        raise SourceError(path, log.problems[0][0] if log.problems else None,
                          "no Trainer metrics dicts ({'loss': ..., 'epoch': ...} lines) found: "
                          "not a TRL/transformers console log")
    steps, how = assign_steps(log.records, opts.logging_steps)
    note = step_note(how, opts.logging_steps, len(log.records))
    return Imported(kind="trl-console", rows=_console_rows(path, log, steps, damaged), name=path.stem, project="trl",
                    meta={"framework": "trl", "format": "console", "steps_from": how}, notes=[note] if note else [])


# ---- CSV metric history -------------------------------------------------------------------------

def _detect_csv(source: str) -> bool:
    p = Path(source)
    return p.suffix.lower() == ".csv" and p.is_file()


@_register("csv", _detect_csv)
def read_csv(source: str, opts: ImportOptions) -> Imported:
    """A metric history saved as CSV (TRL's log_history through pandas, W&B's "Export CSV", a loop's own log);
    the rules: :mod:`rlcockpit.integrations.csv_history`."""
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"CSV file {path} does not exist")
    history = read_csv_history(path, opts.source_run)
    rows = (RowProblem(r) if isinstance(r, str) else r for r in rows_of(history))
    return Imported(kind="csv", rows=rows, name=history.run_name or path.stem, project="csv", config=history.config,
                    meta={"format": "csv", "step_column": history.step_column,
                          **({"source_run": history.run_name} if history.run_name else {})},
                    notes=history.notes)


# ---- metrics JSONL (one object a line with its step) ---------------------------------------------

def _jsonl_record(text: str) -> tuple[dict[str, Any] | None, str]:
    """``(record, "")`` when the line is a JSON object with a ``step`` and not verl's file-logger shape (whose values
    sit under ``data``: the ``verl`` kind reads it); else ``(None, why)`` in words naming the spot."""
    try:
        obj = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, TOO_DEEP
    if not isinstance(obj, dict) or "step" not in obj or isinstance(obj.get("data"), dict):
        return None, "not a JSON object with a 'step'"
    return obj, ""


def _detect_jsonl(source: str) -> bool:
    p = Path(source)
    if not p.is_file():
        return False
    try:
        for raw in log_lines(p, limit=1 << 20):
            text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
            if text.strip():
                return _jsonl_record(text)[0] is not None
    except (OSError, SourceError):
        return False
    return False


def _jsonl_rows(path: Path, dropped: dict[str, int]) -> Rows:
    """Rows of a metrics JSONL in file order: each line's numbers (``true``/``false`` are not metrics; ``null``
    is NaN, as in verl's file logger). A line that is not such an object is a problem naming its line and is the
    only thing lost; a last line cut before its newline stops the import there, since its numbers may be cut."""
    for line_no, raw in enumerate(log_lines(path), 1):
        text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
        if not text.strip():
            continue
        obj, why = _jsonl_record(text)
        if obj is None:
            if not raw.endswith(b"\n"):
                raise SourceError(path, line_no, "the last line is cut off (no newline, not a whole record): the "
                                  "job may have been killed mid-write")
            yield RowProblem(f"{path}:{line_no}: record skipped: {why}")
            continue
        try:
            step = check_step(obj["step"])
        except BadStep as exc:
            yield RowProblem(f"{path}:{line_no}: record skipped: {exc}")
            continue
        metrics: dict[str, Any] = {}
        for key, value in obj.items():
            if key == "step":
                continue
            if value is None:
                metrics[key] = math.nan
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics[key] = value
            else:
                dropped[key] = dropped.get(key, 0) + 1
        if metrics:
            yield step, metrics


@_register("jsonl", _detect_jsonl, "metrics-jsonl", "tinker")
def read_jsonl(source: str, opts: ImportOptions) -> Imported:
    """A metrics JSONL: one JSON object a line with an integer ``step`` and its values at the top level, as
    Tinker's cookbook (``metrics.jsonl``) and hand-written GRPO loops write it. Keys are stored as logged; values
    that are not numbers (text, lists, nested objects, booleans) are not metrics and are named in a note."""
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"JSONL file {path} does not exist")
    dropped: dict[str, int] = {}
    rows: list[Any] = []
    stop: SourceError | None = None
    try:  # read whole before the run is made, so the note on dropped values is there when the importer reads notes
        rows.extend(_jsonl_rows(path, dropped))
    except SourceError as exc:
        stop = exc
    notes = []
    if dropped:
        names = ", ".join(f"{k} ({n})" for k, n in sorted(dropped.items())[:10])
        more = f" and {len(dropped) - 10} more keys" if len(dropped) > 10 else ""
        notes.append(f"values that are not numbers were not stored as metrics: {names}{more}")

    def replay() -> Rows:
        yield from rows
        if stop is not None:
            raise stop

    return Imported(kind="jsonl", rows=replay(), name=path.parent.name if path.stem == "metrics" else path.stem,
                    project="jsonl", meta={"format": "metrics-jsonl"}, notes=notes)


# ---- TensorBoard ---------------------------------------------------------------------------------

def _detect_tensorboard(source: str) -> bool:
    p = Path(source)
    if p.is_file():
        return "tfevents" in p.name
    return p.is_dir() and next(p.rglob("events.out.tfevents*"), None) is not None


@_register("tensorboard", _detect_tensorboard, "tb")
def read_tensorboard(source: str, opts: ImportOptions) -> Imported:
    """Scalars of a TensorBoard log (a file, or a directory's event files). Records are checked one by one
    (:mod:`rlcockpit.integrations.tfevents`): a damaged record is skipped, reading resumes at the next valid
    one, and the damage (file, offset) is raised after every readable row was yielded."""
    from rlcockpit.integrations.tfevents import read_scalars

    p = Path(source)
    if not p.exists():
        raise FileNotFoundError(f"TensorBoard log {p} does not exist")
    files = [p] if p.is_file() else sorted(p.glob("events.out.tfevents*")) or sorted(p.rglob("events.out.tfevents*"))
    by_step: dict[int, dict[str, float]] = {}
    damage = []
    for f in files:
        found: dict[int, dict[str, float]] = {}
        damage += read_scalars(f, found)
        prefix = "" if f.parent == p or p.is_file() else f"{f.parent.relative_to(p).as_posix()}/"
        for step, row in found.items():
            by_step.setdefault(step, {}).update({prefix + k: v for k, v in row.items()})
    if not by_step and not damage:
        raise SourceError(p, None, "no scalar summaries found in the TensorBoard event files")

    def rows() -> Rows:
        yield from sorted(by_step.items())
        if damage:
            more = f" (and {len(damage) - 1} more damaged parts)" if len(damage) > 1 else ""
            raise SourceError(damage[0].path, None, damage[0].describe() + more)

    name = p.name if p.is_dir() else p.parent.name
    return Imported(kind="tensorboard", rows=rows(), name=name, project="tensorboard",
                    meta={"event_files": len(files), "damaged": [str(d) for d in damage[:20]]})


# ---- W&B offline run -----------------------------------------------------------------------------

def _detect_wandb(source: str) -> bool:
    from rlcockpit.integrations.wandb_log import find_wandb_file

    try:
        return find_wandb_file(source).suffix == ".wandb"
    except FileNotFoundError:
        return False


def _wandb_steps(data: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each history row at its step: W&B's ``_step``, or the run's declared step metric — transformers/TRL
    log every row with ``train/global_step`` and ``define_metric("*", step_metric="train/global_step")``, so
    W&B's charts (and ours) use the trainer's step; ``_step`` counts ``log()`` calls (several per trainer
    step). A row without the step metric goes with the last value seen (W&B's ``step_sync``); rows that go
    back in steps are skipped."""
    axis, last, current = data.get("step_metric"), -1, None
    for wb_step, row in data["rows"]:
        step = wb_step
        if axis:
            value = row.get(axis)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                current = int(value)
            step = current if current is not None else 0
        if step < last:
            continue
        last = step
        yield step, row


def _wandb_rows(data: dict[str, Any]) -> Rows:
    """Metric rows (media references and text left out: tables come as samples); rows that land on one
    step are merged, in log order."""
    from rlcockpit.integrations.wandb_tables import split_media

    last, merged = -1, {}
    for step, row in _wandb_steps(data):
        if step != last and merged:
            yield last, merged
            merged = {}
        last = step
        merged.update(split_media(row)[0])
    if merged:
        yield last, merged
    if data["error"] is not None:
        raise data["error"]


def _wandb_samples(data: dict[str, Any]) -> SampleBatches:
    """The W&B tables of the run as sample batches at their rows' steps (see
    :mod:`rlcockpit.integrations.wandb_tables`); a table file that cannot be read is a :class:`SampleProblem`
    (the other tables and every metric are still imported). A table logged again unchanged (same sha256 as
    that key's previous one: TRL logs its last batch twice) is imported once, a table re-logged with rows
    appended (verl's ``val/generations``) only with its new rows."""
    from rlcockpit.integrations.wandb_tables import (
        TableFileError,
        appended_rows,
        read_table_file,
        split_media,
        table_rows,
    )

    files_dir = Path(data["file"]).parent / "files"
    seen: dict[str, Any] = {}
    previous: dict[str, list[Any]] = {}  # per key: the last full (non-incremental) table's rows
    for step, row in _wandb_steps(data):
        for key, ref in split_media(row)[1]:
            sha = ref.get("sha256")
            if sha and seen.get(key) == sha:
                continue
            seen[key] = sha
            try:
                columns, cells = read_table_file(files_dir, key, ref, step)
            except TableFileError as exc:
                yield SampleProblem(step, f"{exc}; not imported (the rest of the run is)")
                continue
            if ref.get("_type") == "table-file":
                cells, previous[key] = appended_rows(previous.get(key), cells), cells
            rows, problems = table_rows(key, columns, cells, data["config"])
            for text in problems:
                yield SampleProblem(step, f"{files_dir / str(ref.get('path'))}: {text}")
            if rows:
                yield step, rows


@_register("wandb", _detect_wandb, "w&b")
def read_wandb(source: str, opts: ImportOptions) -> Imported:
    from rlcockpit.integrations.wandb_log import read_offline_run

    data = read_offline_run(source)
    return Imported(kind="wandb", rows=_wandb_rows(data), name=data["name"], project=data["project"],
                    config=data["config"], samples=_wandb_samples(data),
                    meta={"wandb_run_id": data["run_id"], "wandb_file": data["file"],
                          "wandb_step_metric": data["step_metric"]})


# ---- MLflow --------------------------------------------------------------------------------------

def _detect_mlflow(source: str) -> bool:
    return source.startswith(("sqlite:", "mlflow:", "databricks")) or source.endswith(".db") or \
        Path(source).name == "mlruns"


def _param_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return {"True": True, "False": False, "None": None}.get(text, text)


def _unflatten(params: dict[str, str]) -> dict[str, Any]:
    """MLflow params are flat strings (verl flattens its config with ``/``); rebuild the nested config."""
    out: dict[str, Any] = {}
    for key, raw in sorted(params.items()):
        parts = key.split("/") if "/" in key else [key]
        node = out
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[parts[-1]] = _param_value(raw)
    return out


@_register("mlflow", _detect_mlflow)
def read_mlflow(source: str, opts: ImportOptions) -> Imported:
    from mlflow.tracking import MlflowClient

    uri = opts.tracking_uri or (source if opts.run_id else None) or os.environ.get("MLFLOW_TRACKING_URI")
    run_id = opts.run_id or (source if opts.tracking_uri else None)
    if not run_id:
        raise ValueError("mlflow import needs a run id: rlcockpit import URI --run-id ID "
                         "(or RUN_ID --tracking-uri URI)")
    if uri and Path(uri).name == "mlruns" and "://" not in uri:
        uri = Path(uri).resolve().as_uri()
    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except Exception as exc:  # noqa: BLE001 - MlflowException for unknown ids, connection errors...
        raise KeyError(f"mlflow run {run_id!r} not found at {uri}: {exc}") from None
    by_step: dict[int, dict[str, float]] = {}
    for key in run.data.metrics:
        for m in client.get_metric_history(run_id, key):
            by_step.setdefault(int(m.step), {})[key] = float(m.value)
    config = _unflatten(dict(run.data.params))
    name = run.data.tags.get("mlflow.runName") or run.info.run_name or run_id
    exp = client.get_experiment(run.info.experiment_id)
    return Imported(kind="mlflow", rows=iter(sorted(by_step.items())), name=name,
                    project=exp.name if exp else "mlflow", config=config,
                    meta={"mlflow_run_id": run_id, "tracking_uri": str(uri)})


DETECT_ORDER = ("wandb", "tensorboard", "trl", "csv", "verl", "jsonl", "trl-console", "mlflow")


def detect_kind(source: str, opts: ImportOptions | None = None) -> str:
    """The importer for ``source`` when ``--kind`` is not given; a clear error when nothing fits."""
    if opts is not None and opts.run_id:
        return "mlflow"
    for name in DETECT_ORDER:
        if IMPORTERS.get(name).detect(source):
            return name
    if not Path(source).exists():
        raise FileNotFoundError(f"{source} does not exist")
    if Path(source).is_file() and Path(source).stat().st_size == 0:
        raise ValueError(f"{source} is empty: nothing to import (was the job's output captured to another file?)")
    raise ValueError(f"cannot tell what {source} is; pass --kind ({', '.join(IMPORTERS.names())})")


def merge_config_file(imported: Imported, config_file: str | None) -> None:
    if config_file:
        imported.config = {**imported.config, **load_config_file(config_file)}
