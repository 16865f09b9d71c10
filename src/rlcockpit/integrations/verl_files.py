"""Readers for what a verl job leaves on disk: the file logger, the console log, rollout dumps, config.

Formats (verl 0.4 – 0.9):

* file logger (``trainer.logger=['file']``, path from ``VERL_FILE_LOGGER_PATH``): one JSON object per
  line, ``{"step": N, "data": {"actor/pg_loss": ..., ...}}``, written with orjson, which writes NaN and
  ±Inf as ``null`` — so ``null`` values are read back as NaN (a NaN loss is evidence, not a gap).
* console (``LocalLogger``): ``step:N - key:value - key:value`` (values via ``pprint.pformat``, so numpy
  scalars may read ``np.float64(0.5)``); lines may carry a prefix such as Ray's ``(TaskRunner pid=1)``.
* rollout dumps (``trainer.rollout_data_dir``): ``<dir>/<step>.jsonl``, one row per sample with
  ``input``, ``output``, ``gts``, ``score``, ``step`` and the reward function's extra fields.
* config: the Hydra config yaml verl saves (``.hydra/config.yaml``) or any yaml/json dump of it.

Metric keys are kept exactly as verl wrote them; the health engine and UI resolve aliases on read.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rlcockpit.integrations.verl_turns import turn_fields
from rlcockpit.tracking.write.values import BadStep, check_step

ROLLOUT_FILE = re.compile(r"^(\d+)\.jsonl$")
# verl's LocalLogger prints ``step:N - key:value - ...`` as a whole line; what may stand before it is a launcher's
# prefix: Ray's ``(TaskRunner pid=N)`` (colored when Ray's output was a terminal), ``srun --label``'s ``0:``, or a
# timestamp. Anchored, so that a sampled response printed by the reward manager (``[response] ... step:9 - x:1``)
# is never read as metrics.
# The Ray prefix and a timestamp may come in either order (``tee`` through ``ts``/a logger puts the time first), the
# timestamp ISO-8601 with ``T``, a fraction and a zone (``2026-12-06T10:00:01.123Z``).
_TIMESTAMP = r"\[?\d{4}-\d\d-\d\d[ T][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]?(?:\s*[|-])?"
_CONSOLE_HEAD = r"^\s*(?:\d+:\s+)?(?:(?:\([^()]*\)|" + _TIMESTAMP + r")\s*)*step:(-?\d+)"
# a value is one word, or a call whose arguments hold blanks: ``tensor(0.5, device='cuda:0')``
_PAIRS = r"((?: - [^\s:][^:]*:(?:[\w.]+\([^()]*\)(?=\s|$)|\S+))*)"
_CONSOLE = re.compile(_CONSOLE_HEAD + _PAIRS + r"\s*$")
# A capture that cuts long lines (W&B's output.log keeps 4096 characters of a line) leaves a metrics line whose
# last pair is cut mid-key or mid-value: its complete pairs are kept, the cut one is dropped (a value cut after
# some of its digits would be wrong, not missing).
_CONSOLE_CUT = re.compile(_CONSOLE_HEAD + _PAIRS + r"( - [^\s:][^:]*(?::.*)?| -)?$")
CUT_LINE_CHARS = 4096
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# ``np.float64(0.5)``, and torch's ``tensor(0.5)`` / ``tensor(0.5, device='cuda:0')`` (the number is the first argument)
_NUMPY_WRAP = re.compile(r"^(?:(?:np|numpy)\.\w+|tensor)\(([^,()]*)(?:,[^()]*)?\)$")
BOM = "\ufeff"


class SourceError(ValueError):
    """A source file that cannot be read past some point; the message names the file and line."""

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.reason = str(path), line, message


class BadRow(SourceError):
    """One record is unusable (a step out of range, NaN...), the records around it are fine: skip it."""


TOO_DEEP = "JSON nested too deeply to read (over ~1000 levels)"


def _nulls_to_nan(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if v is None:
            out[k] = math.nan
        elif isinstance(v, Mapping):
            out[k] = _nulls_to_nan(v)
        else:
            out[k] = v
    return out


def parse_file_logger_line(text: str, path: str | Path = "<verl file log>", line: int = 0
                           ) -> tuple[int, dict[str, Any]] | None:
    """``(step, metrics)`` for one file-logger line; ``None`` for a blank line; :class:`SourceError` if bad."""
    text = text.lstrip(BOM)  # a file saved by an editor on Windows starts with a UTF-8 BOM
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(path, line, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise SourceError(path, line, TOO_DEEP) from None
    if not isinstance(obj, dict) or "step" not in obj or not isinstance(obj.get("data"), dict):
        raise SourceError(path, line, 'expected verl\'s file-logger shape {"step": N, "data": {...}}')
    try:
        step = check_step(obj["step"])
    except BadStep as exc:
        raise BadRow(path, line, f"record skipped: {exc}") from None
    try:
        return step, _nulls_to_nan(obj["data"])
    except RecursionError:
        raise SourceError(path, line, TOO_DEEP) from None


def _console_value(text: str) -> float | None:
    m = _NUMPY_WRAP.match(text)
    if m:
        text = m.group(1).strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":  # a number printed as a string: '0.0123'
        text = text[1:-1]
    low = text.lower()
    if low in ("true", "false"):
        return 1.0 if low == "true" else 0.0
    try:
        return float(text)
    except ValueError:
        return None


def parse_console_line(text: str, cut: bool = False) -> tuple[int, dict[str, float]] | None:
    """``(step, metrics)`` for a verl console metrics line, ``None`` for any other console output. A line cut at
    :data:`CUT_LINE_CHARS` characters, or one the caller knows was cut (``cut``: a log's last line without its
    newline), keeps its complete pairs and loses the one it was cut in: a number cut after some of its digits
    (``0.12`` of ``0.1234``) cannot be told from a whole one, so the last pair of such a line is never stored."""
    parsed = parse_console_line_cut(text, cut)
    return None if parsed is None else parsed[:2]


def parse_console_line_cut(text: str, cut: bool = False) -> tuple[int, dict[str, float], str | None] | None:
    """:func:`parse_console_line`, plus the pair it left out of a cut line (its text, e.g. ``actor/grad_norm:1.2`` or
    a key cut mid-word, ``actor/gra``), or None when the line lost nothing: an importer says what a cut cost."""
    full = text.rstrip("\r\n").lstrip(BOM)
    # tqdm redraws its bar with "\r" on the same line as the metrics (``Training Progress: 10%|#| 1/10 [..]\rstep:1 -
    # ...``): the metrics line is one of the "\r"-separated pieces, the last one that reads as one
    pieces = _ANSI.sub("", full).split("\r")
    for i in range(len(pieces) - 1, -1, -1):
        line = pieces[i].rstrip()
        if "step:" not in line:
            continue
        # a line a capture tool may have cut off; W&B also trims the blank it cut after, so a cut that fell right
        # after a separator leaves 4095 characters ending in " -" (verl never ends a line that way). Only the last
        # piece can have been cut.
        was_cut = i == len(pieces) - 1 and (cut or len(full) >= CUT_LINE_CHARS or line.endswith(" -"))
        m = (_CONSOLE_CUT if was_cut else _CONSOLE).match(line)
        if not m:
            continue
        parts = m.group(2).split(" - ")[1:]
        dropped = m.group(3)[3:] if was_cut and m.group(3) and m.group(3) != " -" else None
        if was_cut and not m.group(3) and parts:
            dropped = parts.pop()  # the line ends in a pair that looks whole: its value may have lost digits
        metrics: dict[str, float] = {}
        for part in parts:
            key, _, value = part.partition(":")  # keys hold no ":" (the pattern), values may: device='cuda:0'
            v = _console_value(value.strip())
            if key and v is not None:
                metrics[key.strip()] = v
        return int(m.group(1)), metrics, dropped
    return None


GZIP_MAGIC = b"\x1f\x8b"


def open_log(path: str | Path) -> Any:
    """``path`` opened for reading bytes; a gzip'd log (``job.log.gz``, as logs are archived and shared) is read
    decompressed."""
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == GZIP_MAGIC else open(path, "rb")


def log_lines(path: str | Path, limit: int | None = None) -> Iterator[bytes]:
    """The lines of a (possibly gzip'd) log, split at ``\\n`` only (tqdm's ``\\r`` frames stay on their line);
    ``limit``: read at most that many bytes. A damaged or cut-off gzip stream ends the lines with a
    :class:`SourceError` naming the line after the last one read."""
    line_no = 0
    try:
        with open_log(path) as f:
            lines = f.read(limit).split(b"\n") if limit else f
            for raw in lines:
                line_no += 1
                yield raw
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise SourceError(path, line_no + 1, f"the gzip'd log is damaged or cut off ({exc}); read up to here"
                          ) from None


def looks_like_file_logger(path: str | Path) -> bool:
    """Whether the first non-blank line of ``path`` is a file-logger record."""
    try:
        for line in log_lines(path):
            raw = line.decode("utf-8", errors="replace")
            if raw.strip():
                try:
                    return parse_file_logger_line(raw) is not None
                except SourceError:
                    return False
    except (OSError, SourceError):
        return False
    return False


def looks_like_console_log(path: str | Path, max_lines: int = 2000) -> bool:
    try:
        for i, raw in enumerate(log_lines(path)):
            if i >= max_lines:
                break
            if parse_console_line(raw.decode("utf-8", errors="replace")):
                return True
    except (OSError, SourceError):
        return False
    return False


def rollout_row(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A stored sample row from one rollout-dump entry: prompt/response/reward plus verl's other fields."""
    row: dict[str, Any] = {"prompt": entry.get("input"), "response": entry.get("output")}
    score = entry.get("score")
    try:
        row["reward"] = None if score is None else float(score)
    except (TypeError, ValueError):
        row["reward"] = None
    for k, v in entry.items():
        if k not in ("input", "output", "score", "step"):
            row[k] = v
    for k, v in turn_fields(row["response"]).items():  # a multi-turn (agent-loop) trajectory, turn by turn
        row.setdefault(k, v)
    return row


def rollout_files(rollout_dir: str | Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of the rollout dumps in ``rollout_dir``, by step (missing dir: ``[]``)."""
    d = Path(rollout_dir)
    if not d.is_dir():
        return []
    out = []
    for p in d.iterdir():
        m = ROLLOUT_FILE.match(p.name)
        if m:
            out.append((int(m.group(1)), p))
    return sorted(out)


def read_rollout_file(path: str | Path, *, strict: bool = True) -> list[dict[str, Any]]:
    """The sample rows of one ``<step>.jsonl`` dump; a bad line raises :class:`SourceError` when ``strict``
    (rows before it are on the exception as ``.rows``), else it is skipped."""
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                if not isinstance(entry, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, RecursionError) as exc:
                if strict:
                    err = SourceError(path, i, f"bad rollout dump line: {TOO_DEEP if isinstance(exc, RecursionError) else exc}")
                    err.rows = rows  # type: ignore[attr-defined]
                    raise err from None
                continue
            rows.append(rollout_row(entry))
    return rows


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A verl config from yaml/json (Hydra's saved ``config.yaml`` included), interpolations resolved
    when OmegaConf is installed."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"config file {p} does not exist")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - yaml and json raise different types
        raise ValueError(f"{p}: cannot parse config: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: a config must be a mapping at the top level, got {type(data).__name__}")
    try:
        from omegaconf import OmegaConf

        resolved = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
        if isinstance(resolved, dict):
            data = resolved
    except Exception:  # noqa: BLE001 - no OmegaConf, or an interpolation we cannot resolve: keep it raw
        pass
    return data


def verl_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run config to store for a verl run: verl's own dict plus ``framework: verl``.

    Why the marker: a watched file log may come without its config, and the health engine still needs
    to know to write recommended overrides with verl's key paths (``actor_rollout_ref.actor.optim.lr``).
    """
    cfg = dict(config or {})
    cfg.setdefault("framework", "verl")
    return cfg
