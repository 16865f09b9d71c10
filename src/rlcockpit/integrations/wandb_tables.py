"""W&B tables in an offline run (``files/media/table/*.table.json``) as sample rows, for ``rlcockpit import``.

What the run file holds: ``wandb.log({"completions": wandb.Table(...)})`` leaves no rows in the history, only
a reference — the keys ``completions/_type`` (``table-file``; ``incremental-table-file`` for
``log_mode="INCREMENTAL"``, whose file holds only that step's new rows), ``completions/path`` (relative to
the run's ``files/``), ``completions/sha256``, ``completions/nrows``... The table itself is a JSON file
``{"columns": [...], "data": [[...], ...]}``. Other media (``image-file``...) are references too: their keys
are no metrics and are dropped (rlcockpit does not store images).

Shapes, chosen so an imported run reads like the same run logged live:

* TRL's GRPO completions table (columns ``step``, ``prompt``, ``completion``, one per reward function, extra
  columns, ``advantage``; trl/trainer/grpo_trainer.py ``log``) → the rows :class:`CockpitCallback` stores:
  ``prompt``/``response`` as text (chat turns as ``role: content`` lines), ``reward`` = the reward functions'
  sum weighted by the run config's ``reward_weights``, ``rewards/<function>``, ``advantage``, other columns
  as they are. Reward columns: the numeric columns right after ``completion`` (as many as ``reward_weights``
  has entries, when the config says).
* verl's validation table (``val/generations``: columns ``step, input_1, output_1, score_1, ...``, one row per
  validation step) → one sample per (input, output, score): ``prompt``, ``response``, ``reward``,
  ``split: "val"``.
* any other table → what ``run.log({"key": Table})`` stores live (:meth:`rlcockpit.tracking.media.rich.Table.sample_rows`):
  one row per table row, columns as they are, ``completion`` also as ``response``, a ``table`` column with
  the logged key.

A table re-logged with rows appended (verl's ``val/generations`` does so: each file holds every earlier row
again) contributes only its new rows at each step; an identical re-log nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcockpit.integrations.chat_text import chat_text

TABLE_TYPES = ("table-file", "incremental-table-file")
TRL_COLUMNS = ("step", "prompt", "completion", "advantage")
NOT_REWARDS = ("image", "images")


class TableFileError(ValueError):
    """A table file that cannot be read; the message names the file, the key and the step."""


def split_media(row: Mapping[str, Any]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """``row`` without W&B media references, and the table references in it: ``(key, {"_type", "path",
    "sha256"...})``. A reference is either the flattened keys ``<key>/_type``, ``<key>/path``... (wandb-core)
    or one value ``{"_type": ...}`` (older files)."""
    prefixes = {k[: -len("/_type")] for k, v in row.items() if k.endswith("/_type") and isinstance(v, str)}
    metrics: dict[str, Any] = {}
    refs: dict[str, dict[str, Any]] = {}
    for k, v in row.items():
        if isinstance(v, dict) and "_type" in v:
            refs[k] = dict(v)
            continue
        owner = _owner(k, prefixes)
        if owner is not None:
            refs.setdefault(owner, {})[k[len(owner) + 1:]] = v
        elif not isinstance(v, str):
            metrics[k] = v
    tables = [(k, ref) for k, ref in refs.items() if ref.get("_type") in TABLE_TYPES]
    return metrics, tables


def _owner(key: str, prefixes: set[str]) -> str | None:
    if not prefixes:
        return None
    parts = key.split("/")
    for i in range(len(parts) - 1, 0, -1):
        head = "/".join(parts[:i])
        if head in prefixes:
            return head
    return None


def read_table_file(files_dir: Path, key: str, ref: Mapping[str, Any], step: int) -> tuple[list[str], list[list[Any]]]:
    """``(columns, rows)`` of the table file a reference names; :class:`TableFileError` naming the file when
    it is missing, cut off, not JSON or not a table."""
    rel = ref.get("path")
    if not isinstance(rel, str) or not rel:
        raise TableFileError(f"table {key!r} at step {step}: the run file names no table file (no '{key}/path')")
    path = files_dir / rel
    where = f"W&B table file {path} (key {key!r}, step {step})"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TableFileError(f"{where} is missing (was the run folder copied without files/media?)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TableFileError(f"{where} cannot be read: {exc}") from None
    try:
        table = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = "" if text.rstrip().endswith("}") else " — cut off (the run may have been killed while writing it)"
        raise TableFileError(f"{where} is not valid JSON ({exc.msg}: line {exc.lineno} column {exc.colno}){cut}"
                             ) from None
    except RecursionError:
        raise TableFileError(f"{where} is nested too deeply to read") from None
    columns, data = (table.get("columns"), table.get("data")) if isinstance(table, dict) else (None, None)
    if not isinstance(columns, list) or not isinstance(data, list):
        raise TableFileError(f'{where} is not a W&B table (expected {{"columns": [...], "data": [[...], ...]}})')
    return [str(c) for c in columns], data


def table_rows(key: str, columns: list[str], data: list[Any], config: Mapping[str, Any] | None = None
               ) -> tuple[list[dict[str, Any]], list[str]]:
    """Sample rows for a table's ``data`` (see the module docstring), and one problem text per row that does
    not fit the columns (that row is skipped, the others are kept)."""
    good, problems = [], []
    for i, r in enumerate(data):
        if isinstance(r, list) and len(r) == len(columns):
            good.append(r)
        else:
            what = f"{len(r)} cells" if isinstance(r, list) else f"a {type(r).__name__}"
            problems.append(f"table {key!r} row {i}: {what} for {len(columns)} columns {columns}; row skipped")
    if all(c in columns for c in TRL_COLUMNS):
        return _trl_rows(columns, good, config or {}), problems
    width = _verl_width(columns)
    if width:
        return _verl_rows(key, columns, good, width), problems
    from rlcockpit.tracking.media.rich import Table

    return Table(columns=columns, data=good).sample_rows(key), problems


def appended_rows(previous: list[Any] | None, data: list[Any]) -> list[Any]:
    """The rows a re-logged table added: verl's ``val/generations`` (and many users' tables) log a new
    ``Table(data=old.data)`` plus one row each time, so every file holds all earlier rows again."""
    if previous and len(data) >= len(previous) and data[: len(previous)] == previous:
        return data[len(previous):]
    return data


def _verl_width(columns: list[str]) -> int:
    """n for verl's validation table columns ``step, input_1, output_1, score_1, ..., score_n``, else 0."""
    n, rest = divmod(len(columns) - 1, 3)
    if not columns or columns[0] != "step" or rest or not n:
        return 0
    want = [f"{kind}_{i}" for i in range(1, n + 1) for kind in ("input", "output", "score")]
    return n if columns[1:] == want else 0


def _verl_rows(key: str, columns: list[str], rows: list[list[Any]], n: int) -> list[dict[str, Any]]:
    """One sample row per (input_i, output_i, score_i) of each table row, as verl's rollout dumps read:
    ``prompt``, ``response``, ``reward``; ``split: "val"`` for verl's ``val/generations``."""
    out = []
    for r in rows:
        for i in range(n):
            prompt, response, score = r[1 + 3 * i: 4 + 3 * i]
            reward = score if isinstance(score, (int, float)) and not isinstance(score, bool) else None
            row = {"prompt": chat_text(prompt), "response": chat_text(response), "reward": reward, "table": key}
            if key.startswith("val"):
                row["split"] = "val"
            out.append(row)
    return out


def _reward_columns(columns: list[str], rows: list[list[Any]], config: Mapping[str, Any]) -> list[str]:
    """The reward functions' columns: TRL writes them right after ``completion``, before its extras."""
    after = columns[columns.index("completion") + 1:]
    numeric = []
    for c in after:
        if c in TRL_COLUMNS or c in NOT_REWARDS:
            break
        j = columns.index(c)
        if not all(r[j] is None or (isinstance(r[j], (int, float)) and not isinstance(r[j], bool)) for r in rows):
            break
        numeric.append(c)
    weights = config.get("reward_weights")
    if isinstance(weights, list) and 0 < len(weights) <= len(numeric):
        return numeric[: len(weights)]
    return numeric


def _trl_rows(columns: list[str], rows: list[list[Any]], config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows :class:`rlcockpit.integrations.trl.CockpitCallback` stores for the same generation batch."""
    rewards = _reward_columns(columns, rows, config)
    weights = config.get("reward_weights")
    weights = [float(w) for w in weights] if isinstance(weights, list) and len(weights) == len(rewards) \
        else [1.0] * len(rewards)
    out = []
    for r in rows:
        cell = dict(zip(columns, r))
        per_func = {name: cell.pop(name) for name in rewards}
        finite = [v * w for (v, w) in zip(per_func.values(), weights)
                  if isinstance(v, (int, float)) and math.isfinite(v)]
        row: dict[str, Any] = {"prompt": chat_text(cell.pop("prompt")), "response": chat_text(cell.pop("completion")),
                               "reward": sum(finite) if finite else None}
        row.update({f"rewards/{name}": v for name, v in per_func.items()})
        cell.pop("step", None)  # the trainer's step: the sample's own step
        row["advantage"] = cell.pop("advantage")
        row.update({("table_idx" if k == "idx" else k): v for k, v in cell.items()})  # "idx" is the store's
        out.append(row)
    return out

