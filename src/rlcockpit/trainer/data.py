"""Prompt data: verl's parquet/JSONL layout, the built-in demo task, tokenization and a resumable loader.

verl's row layout: ``prompt`` (chat messages ``[{"role", "content"}]`` or plain text),
``reward_model.ground_truth``, ``data_source`` and optional ``extra_info``.  A malformed row fails
with its file, row number and field, because finding row 41 213 of a parquet file by hand is
miserable.  Prompts longer than ``data.max_prompt_length`` are dropped or truncated as configured
and the count is reported.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlcockpit.trainer.config import BuiltinDataConfig, DataConfig


class DataError(ValueError):
    """A data file or row is invalid; the message names file, row and field."""


@dataclass
class PromptRow:
    prompt: Any  # list of chat messages or a string
    ground_truth: Any
    data_source: str
    extra_info: dict[str, Any] = field(default_factory=dict)
    input_ids: list[int] = field(default_factory=list)
    text: str = ""


# --------------------------------------------------------------------------- built-in task

def arith_rows(cfg: BuiltinDataConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """n-digit addition, with a fixed held-out validation set that never appears in training."""
    if cfg.name != "arith":
        raise DataError(f"unknown built-in data set {cfg.name!r}; known: arith")
    rng = random.Random(cfg.seed)
    lo, hi = 0, 10 ** cfg.digits - 1

    def row(a: int, b: int) -> dict[str, Any]:
        # fixed width ("07+45=" -> "052"): every digit sits at the same offset in every example, which a
        # tiny model learns several times faster than the variable-width form
        w = cfg.digits
        return {"prompt": [{"role": "user", "content": f"{a:0{w}d}+{b:0{w}d}="}], "data_source": "arith",
                "reward_model": {"style": "rule", "ground_truth": f"{a + b:0{w + 1}d}"}, "extra_info": {"a": a, "b": b}}

    all_pairs = (hi - lo + 1) ** 2
    val_pairs: set[tuple[int, int]] = set()
    while len(val_pairs) < min(cfg.val_size, all_pairs // 2):
        val_pairs.add((rng.randint(lo, hi), rng.randint(lo, hi)))
    train = []
    while len(train) < cfg.train_size:
        pair = (rng.randint(lo, hi), rng.randint(lo, hi))
        if pair not in val_pairs:
            train.append(row(*pair))
    return train, [row(a, b) for a, b in sorted(val_pairs)]


def builtin_sft_pairs(cfg: BuiltinDataConfig, tokenizer: Any) -> list[tuple[str, str, int, int]]:
    """(prompt text with chat template, answer, a, b) for the tiny model's warm-up."""
    train, _ = arith_rows(cfg)
    return [(render_prompt(r["prompt"], tokenizer), r["reward_model"]["ground_truth"], r["extra_info"]["a"],
             r["extra_info"]["b"]) for r in train]


# --------------------------------------------------------------------------- files

def _read_file(path: str) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    if p.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(p).to_dict(orient="records")
    if p.suffix in (".jsonl", ".json"):
        rows = []
        with p.open() as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}: row {i}: not valid JSON ({exc.msg})") from None
        return rows
    raise DataError(f"{path}: unsupported data file type {p.suffix!r} (use .parquet or .jsonl)")


def _as_python(v: Any) -> Any:
    """pandas gives numpy arrays for list columns; turn them back into lists/dicts."""
    if isinstance(v, np.ndarray):
        return [_as_python(x) for x in v.tolist()]
    if isinstance(v, dict):
        return {k: _as_python(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_python(x) for x in v]
    return v


def validate_row(raw: dict[str, Any], where: str) -> PromptRow:
    """Check one verl-layout row; ``where`` is ``file: row N`` for the error message."""
    raw = _as_python(raw)
    if "prompt" not in raw or raw["prompt"] is None:
        raise DataError(f"{where}: missing field 'prompt'")
    prompt = raw["prompt"]
    if isinstance(prompt, list):
        for j, m in enumerate(prompt):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise DataError(f"{where}: field 'prompt[{j}]' must be a message with 'role' and 'content'")
    elif not isinstance(prompt, str):
        raise DataError(f"{where}: field 'prompt' must be a list of chat messages or a string")
    rm = raw.get("reward_model")
    if isinstance(rm, dict) and "ground_truth" in rm:
        gt = rm["ground_truth"]
    elif "ground_truth" in raw:
        gt = raw["ground_truth"]
    else:
        raise DataError(f"{where}: missing field 'reward_model.ground_truth'")
    source = raw.get("data_source") or "unknown"
    if not isinstance(source, str):
        raise DataError(f"{where}: field 'data_source' must be a string")
    extra = raw.get("extra_info") or {}
    if not isinstance(extra, dict):
        raise DataError(f"{where}: field 'extra_info' must be a mapping")
    return PromptRow(prompt=prompt, ground_truth=gt, data_source=source, extra_info=extra)


def load_rows(files: list[str]) -> list[PromptRow]:
    rows: list[PromptRow] = []
    for path in files:
        for i, raw in enumerate(_read_file(path)):
            if not isinstance(raw, dict):
                raise DataError(f"{path}: row {i}: expected an object, got {type(raw).__name__}")
            rows.append(validate_row(raw, f"{path}: row {i}"))
    if not rows:
        raise DataError(f"no rows in {files}")
    return rows


# --------------------------------------------------------------------------- tokenization

def render_prompt(prompt: Any, tokenizer: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return "\n".join(m["content"] for m in prompt)


def encode_rows(rows: list[PromptRow], tokenizer: Any, cfg: DataConfig, name: str) -> tuple[list[PromptRow], dict]:
    """Tokenize prompts and apply ``data.truncation``; returns kept rows and counts for the report."""
    kept, dropped, truncated = [], 0, 0
    limit = cfg.max_prompt_length
    for i, row in enumerate(rows):
        row.text = render_prompt(row.prompt, tokenizer)
        ids = tokenizer(row.text, add_special_tokens=False)["input_ids"]
        if len(ids) > limit:
            if cfg.truncation == "error":
                raise DataError(f"{name}: row {i}: prompt has {len(ids)} tokens > data.max_prompt_length={limit}")
            if cfg.truncation == "drop":
                dropped += 1
                continue
            ids = ids[-limit:] if cfg.truncation == "left" else ids[:limit]
            truncated += 1
        row.input_ids = ids
        kept.append(row)
    if dropped or truncated:
        print(f"[rlcockpit] {name}: {dropped} prompts dropped, {truncated} truncated "
              f"(longer than data.max_prompt_length={limit}, data.truncation={cfg.truncation})")
    if not kept:
        raise DataError(f"{name}: every prompt is longer than data.max_prompt_length={limit}")
    return kept, {"dropped": dropped, "truncated": truncated, "kept": len(kept)}


def load_datasets(cfg: DataConfig, tokenizer: Any) -> tuple[list[PromptRow], list[PromptRow], dict]:
    """Train and validation rows (built-in task when no files are given), tokenized."""
    if cfg.train_files:
        train = load_rows(cfg.train_files)
        val = load_rows(cfg.val_files) if cfg.val_files else []
    else:
        tr, va = arith_rows(cfg.builtin)
        train = [validate_row(r, f"builtin:{cfg.builtin.name}: row {i}") for i, r in enumerate(tr)]
        val = [validate_row(r, f"builtin:{cfg.builtin.name} val: row {i}") for i, r in enumerate(va)]
    train, train_stats = encode_rows(train, tokenizer, cfg, "train data")
    stats = {"data/train_prompts": train_stats["kept"], "data/train_dropped": train_stats["dropped"],
             "data/train_truncated": train_stats["truncated"]}
    if val:
        val, val_stats = encode_rows(val, tokenizer, cfg, "val data")
        stats.update({"data/val_prompts": val_stats["kept"], "data/val_dropped": val_stats["dropped"]})
    return train, val, stats


class PromptLoader:
    """Shuffled epochs over the prompts; its position is part of a checkpoint for exact resume."""

    def __init__(self, rows: list[PromptRow], batch_size: int, *, shuffle: bool = True, seed: int = 1) -> None:
        self.rows, self.batch_size, self.shuffle, self.seed = rows, batch_size, shuffle, seed
        self.epoch, self.pos = 0, 0
        self._order = self._make_order()

    def _make_order(self) -> list[int]:
        order = list(range(len(self.rows)))
        if self.shuffle:
            random.Random(self.seed * 100003 + self.epoch).shuffle(order)
        return order

    @property
    def steps_per_epoch(self) -> int:
        return max(1, len(self.rows) // self.batch_size)

    def next_batch(self, k: int | None = None) -> list[PromptRow]:
        k = k or self.batch_size
        out: list[PromptRow] = []
        while len(out) < k:
            if self.pos >= len(self._order):
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._make_order()
            take = self._order[self.pos: self.pos + k - len(out)]
            self.pos += len(take)
            out.extend(self.rows[i] for i in take)
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.pos = int(state["epoch"]), int(state["pos"])
        self._order = self._make_order()
