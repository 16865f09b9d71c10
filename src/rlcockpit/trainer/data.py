"""Prompt data: verl's parquet/JSONL layout, the built-in demo task, tokenization and a resumable loader.

verl's row layout: ``prompt`` (chat messages ``[{"role", "content"}]`` or plain text),
``reward_model.ground_truth``, ``data_source`` and optional ``extra_info``.  A malformed row fails
with its file, row number and field, because finding row 41 213 of a parquet file by hand is
miserable.  Prompts longer than ``data.max_prompt_length`` are dropped or truncated as configured
and the count is reported.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlcockpit.trainer.config import BuiltinDataConfig, DataConfig
from rlcockpit.trainer.vision.data import DEFAULT_MAX_PIXELS, ImageCellError, attach_images, max_pixels_of
from rlcockpit.trainer.vision.inputs import encode_vl_row


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
    where: str = ""  # "file: row N", for messages
    images: list[Any] = field(default_factory=list)  # decoded PIL images of data.image_key (verl multimodal rows)
    mm: dict[str, Any] = field(default_factory=dict)  # their processor outputs (pixel_values, image_grid_thw)


# --------------------------------------------------------------------------- built-in task

def arith_rows(cfg: BuiltinDataConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """n-digit addition, with a fixed held-out validation set that never appears in training."""
    if cfg.name != "arith":
        raise DataError(f"unknown built-in text data set {cfg.name!r}; known: arith")
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
    if "://" in str(path):  # verl copies hdfs:// files with copy_to_local before reading them
        raise FileNotFoundError(f"data file not found: {path} (remote paths such as hdfs:// are not read here: "
                                "copy the file to a local path and give that)")
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"data file not found: {path}" + (" (a directory: give the .parquet files in it)"
                                                                  if p.is_dir() else ""))
    if p.suffix == ".parquet":
        import pandas as pd

        try:
            return pd.read_parquet(p).to_dict(orient="records")
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors name no file
            raise DataError(f"{path}: not a readable parquet file ({type(exc).__name__}: {exc})") from None
    if p.suffix == ".json" and p.read_text(errors="replace").lstrip().startswith("["):
        try:  # one JSON array of rows (what datasets' to_json(lines=False) and most hand-written files are)
            rows = json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
        if bad is not None:
            raise DataError(f"{path}: row {bad}: expected an object, got {type(rows[bad]).__name__}")
        return rows
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
    if isinstance(v, np.generic):
        return v.item()
    return v


def validate_row(raw: dict[str, Any], where: str, prompt_key: str = "prompt",
                 source_key: str = "data_source") -> PromptRow:
    """Check one verl-layout row; ``where`` is ``file: row N`` for the error message."""
    raw = _as_python(raw)
    if prompt_key not in raw or raw[prompt_key] is None:
        raise DataError(f"{where}: missing field {prompt_key!r}" + (" (data.prompt_key)" if prompt_key != "prompt" else ""))
    prompt = raw[prompt_key]
    if isinstance(prompt, list):
        for j, m in enumerate(prompt):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise DataError(f"{where}: field '{prompt_key}[{j}]' must be a message with 'role' and 'content'")
    elif not isinstance(prompt, str):
        raise DataError(f"{where}: field {prompt_key!r} must be a list of chat messages or a string")
    rm = raw.get("reward_model")
    if isinstance(rm, dict) and "ground_truth" in rm:
        gt = rm["ground_truth"]
    elif "ground_truth" in raw:
        gt = raw["ground_truth"]
    else:
        raise DataError(f"{where}: missing field 'reward_model.ground_truth'")
    source = raw.get(source_key) or "unknown"
    if not isinstance(source, str):
        raise DataError(f"{where}: field {source_key!r} must be a string")
    agent = raw.get("agent_name")
    if agent not in (None, "", "single_turn_agent"):  # verl 0.9.1 runs that agent loop for the row
        raise DataError(f"{where}: field 'agent_name' is {agent!r}: verl runs that agent loop (multi-turn/tool "
                        "rollouts) for this row, which rlcockpit does not have; it gives each prompt one response, "
                        "as verl's single_turn_agent. Drop the column, or set it to 'single_turn_agent', to train "
                        "this data single-turn")
    extra = raw.get("extra_info") or {}
    if not isinstance(extra, dict):
        raise DataError(f"{where}: field 'extra_info' must be a mapping")
    return PromptRow(prompt=prompt, ground_truth=gt, data_source=source, extra_info=extra)


def load_rows(files: list[str] | str, cfg: DataConfig | None = None, *, max_samples: int = -1,
              max_pixels: int = DEFAULT_MAX_PIXELS, rejected: list[str] | None = None) -> list[PromptRow]:
    """Rows of verl-layout files (``data.prompt_key``/``reward_fn_key`` from ``cfg``), at most ``max_samples``.
    A row whose ``data.image_key`` cell is unusable is left out with a message naming it (see
    :mod:`rlcockpit.trainer.vision.data`); the other rows are kept. ``rejected`` (a list) receives the messages."""
    files = [files] if isinstance(files, str) else list(files)
    prompt_key = cfg.prompt_key if cfg is not None else "prompt"
    source_key = cfg.reward_fn_key if cfg is not None else "data_source"
    image_key = getattr(cfg, "image_key", None) or "images"
    rows: list[PromptRow] = []
    rejected = [] if rejected is None else rejected
    for path in files:
        for i, raw in enumerate(_read_file(path)):
            if not isinstance(raw, dict):
                raise DataError(f"{path}: row {i}: expected an object, got {type(raw).__name__}")
            row = validate_row(raw, f"{path}: row {i}", prompt_key, source_key)
            row.where = f"{path}: row {i}"
            if raw.get(image_key) is not None:  # as verl: no image column, no image handling
                try:
                    row.images = attach_images(raw, row.prompt, row.where, image_key, max_pixels)
                except ImageCellError as exc:
                    rejected.append(str(exc))
                    continue
            rows.append(row)
            if 0 <= max_samples <= len(rows):
                break
        if 0 <= max_samples <= len(rows):
            break
    for message in rejected:
        print(f"[rlcockpit] row rejected: {message}")
    if not rows:
        raise DataError(f"no rows in {files}" + (f" ({len(rejected)} rejected for their images)" if rejected else ""))
    return rows


def empty_prompt(prompt: Any) -> bool:
    """No text to condition on: an empty string, no messages, or messages that are all blank."""
    if isinstance(prompt, str):
        return not prompt.strip()
    return not any(str(m.get("content") or "").strip() for m in prompt)


# --------------------------------------------------------------------------- tokenization

def render_prompt(prompt: Any, tokenizer: Any, chat_kwargs: dict[str, Any] | None = None) -> str:
    """The prompt text as verl's RLHFDataset builds it: the chat template with the generation prompt."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False, **(chat_kwargs or {}))
    return "\n".join(m["content"] for m in prompt)


def _truncate(ids: list[int], limit: int, mode: str) -> list[int]:
    if mode == "left":
        return ids[-limit:]
    if mode == "right":
        return ids[:limit]
    left = limit // 2  # middle: keep both ends, as verl
    return ids[:left] + ids[len(ids) - (limit - left):]


def encode_rows(rows: list[PromptRow], tokenizer: Any, cfg: DataConfig, name: str) -> tuple[list[PromptRow], dict]:
    """Tokenize prompts; ``data.filter_overlong_prompts`` drops long ones, else ``data.truncation`` applies."""
    kept, dropped, truncated = [], 0, 0
    limit = cfg.max_prompt_length
    drop = cfg.filter_overlong_prompts or cfg.truncation == "drop"
    for i, row in enumerate(rows):
        row.text = render_prompt(row.prompt, tokenizer, cfg.apply_chat_template_kwargs)
        ids = tokenizer(row.text, add_special_tokens=False)["input_ids"]
        if len(ids) > limit:
            if drop:
                dropped += 1
                continue
            if cfg.truncation == "error":
                raise DataError(f"{row.where or name + f': row {i}'}: prompt has {len(ids)} tokens > "
                                f"data.max_prompt_length={limit} (data.truncation=error; set "
                                "data.filter_overlong_prompts=true to drop such prompts)")
            ids = _truncate(ids, limit, cfg.truncation)
            truncated += 1
        row.input_ids = ids
        kept.append(row)
    if dropped or truncated:
        how = "data.filter_overlong_prompts=true" if drop else f"data.truncation={cfg.truncation}"
        print(f"[rlcockpit] {name}: {dropped} prompts dropped, {truncated} truncated "
              f"(longer than data.max_prompt_length={limit}, {how})")
    if not kept:
        raise DataError(f"{name}: every prompt is longer than data.max_prompt_length={limit}")
    return kept, {"dropped": dropped, "truncated": truncated, "kept": len(kept)}


def builtin_rows(cfg: DataConfig, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[list[PromptRow], list[PromptRow]]:
    """The built-in task's rows, through the same checks as a file's (the vision task's images included)."""
    if cfg.builtin.name == "bars":
        from rlcockpit.trainer.vision.task import bars_rows

        tr, va = bars_rows(cfg.builtin)
    else:
        tr, va = arith_rows(cfg.builtin)
    out = []
    for split, raws in (("", tr), (" val", va)):
        rows = []
        for i, raw in enumerate(raws):
            where = f"builtin:{cfg.builtin.name}{split}: row {i}"
            row = validate_row(raw, where)
            row.where = where
            if raw.get("images") is not None:
                row.images = attach_images(raw, row.prompt, where, "images", max_pixels)
            rows.append(row)
        out.append(rows)
    return out[0], out[1]


def encode_vl_rows(rows: list[PromptRow], tokenizer: Any, cfg: DataConfig, name: str, *,
                   processor: Any) -> tuple[list[PromptRow], dict]:
    """Multimodal rows through the processor (chat template, image tokens, pixel values). A prompt over
    ``data.max_prompt_length`` is dropped (``filter_overlong_prompts``) or an error naming the row: cutting
    through its image tokens would leave them unmatched with its pixels."""
    kept, dropped = [], 0
    for row in rows:
        row.text, row.input_ids, row.mm = encode_vl_row(processor, row)
        if len(row.input_ids) > cfg.max_prompt_length:
            if cfg.filter_overlong_prompts or cfg.truncation == "drop":
                dropped += 1
                continue
            raise DataError(f"{row.where}: prompt has {len(row.input_ids)} tokens (its image tokens included) > "
                            f"data.max_prompt_length={cfg.max_prompt_length}; a prompt with images is not "
                            "truncated: raise the limit, lower max_pixels, or set data.filter_overlong_prompts=true")
        kept.append(row)
    if dropped:
        print(f"[rlcockpit] {name}: {dropped} prompts dropped (longer than data.max_prompt_length="
              f"{cfg.max_prompt_length})")
    if not kept:
        raise DataError(f"{name}: every prompt is longer than data.max_prompt_length={cfg.max_prompt_length}")
    return kept, {"dropped": dropped, "truncated": 0, "kept": len(kept)}


def load_datasets(cfg: DataConfig, tokenizer: Any, processor: Any = None) -> tuple[list[PromptRow], list[PromptRow], dict]:
    """Train and validation rows (built-in task when no files are given), tokenized; with a vision-language
    ``processor`` the rows' images are checked against its ``max_pixels`` and encoded with it."""
    max_pixels = max_pixels_of(processor) if processor is not None else DEFAULT_MAX_PIXELS
    if cfg.train_files:
        train = load_rows(cfg.train_files, cfg, max_samples=cfg.train_max_samples, max_pixels=max_pixels)
        val = (load_rows(cfg.val_files, cfg, max_samples=cfg.val_max_samples, max_pixels=max_pixels)
               if cfg.val_files else [])
    else:
        train, val = builtin_rows(cfg, max_pixels)
    with_images = next((r for r in (*train, *val) if r.images), None)
    if with_images is not None and processor is None:  # never train on the text alone of a picture question
        raise DataError(f"{with_images.where}: rows with images (data.image_key={cfg.image_key!r}) need a "
                        "vision-language policy (a Qwen2-VL / Qwen2.5-VL model directory); this model is text-only")
    encode = encode_rows if processor is None else functools.partial(encode_vl_rows, processor=processor)
    train, train_stats = encode(train, tokenizer, cfg, "train data")
    stats = {"data/train_prompts": train_stats["kept"], "data/train_dropped": train_stats["dropped"],
             "data/train_truncated": train_stats["truncated"]}
    if val:
        val, val_stats = encode(val, tokenizer, cfg, "val data")
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
