"""Sample analysis: quality metrics of the logged rollout responses of one step (``samples/*``).

Text is split into *units* that work without spaces: every CJK / kana / hangul character is a unit of its
own, any other run of non-space characters is a word. So "这个这个这个" and "the the the" both read as
repetition, and a Chinese answer is not mistaken for one giant token. Runs of a repeating pattern
("aaaaa", "这个这个这个") are found on characters with a regular expression, so cost stays in C.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from rlcockpit.store.media import row_images

MAX_ROWS = 128  # rows analysed per step (a uniform subset beyond that)
MAX_CHARS = 4000  # characters analysed per response
EXCERPT_CHARS = 160

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_UNIT = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_RUN = re.compile(r"(\S.{0,7}?)\1{2,}", re.S)  # a 1-8 char pattern (not blank) repeated >= 3 times in a row
_CHAR_RUN = re.compile(r"(\S)\1{3,}")  # one character repeated >= 4 times in a row
# special tokens a decoded response may end with (<eos>, </s>, <|im_end|>, [PAD]): not part of what was said
_SPECIAL_TOKEN = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?[A-Za-z_][\w.-]{0,20}>|\[/?[A-Z_]{2,20}\]")
CHAR_RUN_SHARE = 0.5  # a response that is mostly one repeated character ("aaaaaaaa", "0000", "1111<eos>")
MIN_PROMPTS_FOR_DUPLICATES = 4
_RESPONSE_KEYS = ("response", "completion", "output", "text")
_LENGTH_KEYS = ("response_length", "num_tokens", "length", "completion_length")


def units(text: str) -> list[str]:
    """Words and single CJK characters of ``text``."""
    return _UNIT.findall(text)


def longest_repeat_run(text: str) -> int:
    """Most consecutive repeats of one pattern: "aaaaa" -> 5, "这个这个这个" -> 3, "the the the the" -> 4."""
    best = 0
    for m in _RUN.finditer(text):
        best = max(best, len(m.group(0)) // len(m.group(1)))
    words = text.split()
    run = 1
    for a, b in zip(words, words[1:]):
        run = run + 1 if a == b else 1
        best = max(best, run)
    return best


def repeat_ngram_rate(toks: Sequence[str], n: int = 3) -> float:
    """Share of the ``n``-grams of one response that repeat an earlier one (0 = none, ->1 = a loop)."""
    total = len(toks) - n + 1
    if total <= 1:
        return 0.0
    grams = {tuple(toks[i : i + n]) for i in range(total)}
    return 1.0 - len(grams) / total


def char_run_share(text: str) -> float:
    """Share of a response's non-blank characters (special tokens removed) taken by its longest run of one
    repeated character (>= 4 long): "aaaaaaaa" -> 1.0, "1111<eos>" -> 1.0, "052" -> 0.0, "10000" -> 0.8.
    Catches short degenerate answers that have no 3-grams to repeat."""
    core = "".join(_SPECIAL_TOKEN.sub("", text).split())
    if not core:
        return 0.0
    best = max((len(m.group(0)) for m in _CHAR_RUN.finditer(core)), default=0)
    return best / len(core)


def prompt_key(row: Mapping[str, Any]) -> str:
    """What makes two rows the same prompt: its text and, for a vision-language prompt, its images (one question
    text asked about different pictures is different prompts — and the same answer to all of them is the
    repetition that ignores the image)."""
    return str(row.get("prompt")) + "".join(f"\0{ref['sha256']}" for _, ref in row_images(row))


def _is_nonprintable(ch: str) -> bool:
    if ch in "\n\t\r":
        return False
    return ch == "\ufffd" or unicodedata.category(ch)[0] == "C"


def response_text(row: Mapping[str, Any]) -> str:
    for key in _RESPONSE_KEYS:
        value = row.get(key)
        if value is not None:
            return str(value)
    return ""


def _length(row: Mapping[str, Any], toks: Sequence[str]) -> float:
    for key in _LENGTH_KEYS:
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return float(len(toks))


def _at_limit(row: Mapping[str, Any], length: float, limit: float | None) -> bool | None:
    if row.get("finish_reason") is not None:
        return row.get("finish_reason") == "length"
    for key in ("truncated", "clipped"):
        if key in row:
            return bool(row[key])
    if limit:
        return length >= 0.98 * limit
    return None


def analyze_samples(
    rows: Sequence[Mapping[str, Any]], max_response_length: float | None = None
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """``samples/*`` metrics of one step's rows, and excerpts of the most degenerate responses.

    Rows are dicts with ``response`` (or ``completion``/``output``/``text``), optionally ``prompt``,
    ``reward``, a length in tokens (``response_length``) and ``finish_reason``/``truncated``. Metrics:
    ``repeat_ngram_rate`` (mean share of repeated unit 3-grams), ``longest_repeat_run`` (max over rows),
    ``distinct_1``/``distinct_2`` (distinct unit 1-/2-grams over all rows), ``empty_rate``, ``length_mean``,
    ``char_run_rate`` (share of non-empty responses that are mostly one repeated character, see
    :func:`char_run_share`), ``cross_prompt_duplicate_rate`` (share of the step's prompts whose responses
    include its most common response; with >= 4 distinct prompts logged),
    ``at_limit_rate`` (when a limit or truncation flags are known), ``nonprintable_rate`` (share of
    control/unassigned/replacement characters), ``zero_std_group_rate`` (share of prompt groups whose
    rewards are all equal, when rows carry prompts and rewards) and ``reward_mean``.
    """
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)):
        raise TypeError(f"samples must be a list of dicts, got {type(rows).__name__}")
    if len(rows) > MAX_ROWS:
        stride = len(rows) / MAX_ROWS
        rows = [rows[int(i * stride)] for i in range(MAX_ROWS)]
    if not rows:
        return {}, []
    if all(isinstance(r, Mapping) and all(r.get(k) is None for k in _RESPONSE_KEYS) for r in rows):
        return {}, []  # no model outputs (a table of ids and scores): not evidence of empty generations
    per_row: list[tuple[float, int, float, str]] = []
    rep_sum = 0.0
    longest = empty = at_limit = known_limit = 0
    bad_chars = total_chars = 0
    lengths: list[float] = []
    uni: set[str] = set()
    bi: set[tuple[str, str]] = set()
    n_uni = n_bi = 0
    groups: dict[str, list[float]] = {}
    rewards: list[float] = []
    char_runs = nonempty = 0
    prompts_of: dict[str, set[str]] = {}  # stripped response -> the prompts it was given for
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"sample row {i} must be a dict, got {type(row).__name__}")
        text = response_text(row)[:MAX_CHARS]
        toks = units(text)
        rep = repeat_ngram_rate(toks)
        run = longest_repeat_run(text)
        bad = sum(1 for ch in text if _is_nonprintable(ch))
        rep_sum += rep
        longest = max(longest, run)
        stripped = text.strip()
        empty += not stripped
        crs = char_run_share(stripped) if stripped else 0.0
        if stripped:
            nonempty += 1
            char_runs += crs >= CHAR_RUN_SHARE
            if row.get("prompt") is not None:
                prompts_of.setdefault(stripped, set()).add(prompt_key(row))
        bad_chars += bad
        total_chars += len(text)
        length = _length(row, toks)
        lengths.append(length)
        flag = _at_limit(row, length, max_response_length)
        if flag is not None:
            known_limit += 1
            at_limit += flag
        uni.update(toks)
        n_uni += len(toks)
        bi.update(zip(toks, toks[1:]))
        n_bi += max(0, len(toks) - 1)
        per_row.append((rep + min(run, 50) / 50 + bad / max(len(text), 1) + crs, i, rep, text))
        reward = row.get("reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            rewards.append(float(reward))
            if row.get("prompt") is not None:
                groups.setdefault(prompt_key(row), []).append(float(reward))
    n = len(rows)
    metrics = {
        "samples/repeat_ngram_rate": rep_sum / n,
        "samples/longest_repeat_run": float(longest),
        "samples/distinct_1": len(uni) / n_uni if n_uni else 0.0,
        "samples/distinct_2": len(bi) / n_bi if n_bi else 0.0,
        "samples/empty_rate": empty / n,
        "samples/length_mean": sum(lengths) / n,
        "samples/nonprintable_rate": bad_chars / total_chars if total_chars else 0.0,
    }
    if nonempty:
        metrics["samples/char_run_rate"] = char_runs / nonempty
    if known_limit:
        metrics["samples/at_limit_rate"] = at_limit / known_limit
    prompts = set().union(*prompts_of.values()) if prompts_of else set()
    if len(prompts) >= MIN_PROMPTS_FOR_DUPLICATES:
        # the same answer to *different* prompts; identical answers within one prompt's group are how a
        # short-answer task converges ("052" x 8), not degeneration
        metrics["samples/cross_prompt_duplicate_rate"] = max(len(p) for p in prompts_of.values()) / len(prompts)
    multi = [g for g in groups.values() if len(g) > 1]
    if len(multi) >= 3:  # fewer groups say nothing about the batch
        metrics["samples/zero_std_group_rate"] = sum(1 for g in multi if max(g) == min(g)) / len(multi)
    if rewards:
        metrics["samples/reward_mean"] = sum(rewards) / len(rewards)
    per_row.sort(key=lambda r: -r[0])
    excerpts = []
    for _score, i, rep, text in per_row[:3]:
        row = rows[i]
        excerpts.append({
            "idx": i,
            "prompt": str(row.get("prompt", ""))[:EXCERPT_CHARS],
            "response": text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else ""),
            "reward": row.get("reward"),
            "repeat_ngram_rate": round(rep, 3),
        })
        images = [ref for _, ref in row_images(row)]
        if images:  # the evidence cites the pictures the response was given (the dashboard shows them)
            excerpts[-1]["images"] = images
    return metrics, excerpts
