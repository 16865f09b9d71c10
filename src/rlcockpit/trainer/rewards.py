"""Rewards: rule functions by name, a user function from a file, or an HF reward model.

Every reward function has verl's ``compute_score`` signature
``fn(data_source, solution_str, ground_truth, extra_info=None) -> float | {"score": float, ...}``
so functions written for verl work unchanged.  A function that raises on one sample must not kill a
long run: that sample scores 0, the failure is counted and reported, and the run stops only when the
failure rate passes ``reward.max_failure_rate`` (a broken reward should not silently train on zeros).
"""

from __future__ import annotations

import importlib.util
import math
import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlcockpit.registry import Registry
from rlcockpit.trainer.config import RewardConfig

RewardFn = Callable[..., Any]
REWARDS: Registry[RewardFn] = Registry("reward")


class RewardFailureError(RuntimeError):
    """Too many reward calls raised; the message carries the last traceback."""


def _norm_number(text: str) -> str:
    return text.replace(",", "").replace("$", "").strip().rstrip(".")


@REWARDS.register("arith", "exact_match")
def arith_exact_match(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """1 when the response is exactly the answer (surrounding whitespace ignored)."""
    return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0


_GSM8K = re.compile(r"####\s*(-?[0-9.,$]+)")


@REWARDS.register("gsm8k")
def gsm8k(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
          format_score: float = 0.0, score: float = 1.0) -> float:
    """GSM8K style: the answer after the last ``#### `` must equal the ground truth."""
    found = _GSM8K.findall(solution_str)
    if not found:
        return 0.0
    return score if _norm_number(found[-1]) == _norm_number(str(ground_truth)) else format_score


@REWARDS.register("format")
def format_reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                  pattern: str = r"####\s*\S+") -> float:
    """1 when the response contains the expected format (``pattern``), whatever the answer."""
    return 1.0 if re.search(pattern, solution_str) else 0.0


@REWARDS.register("arith_lenient_length_bonus")
def arith_lenient_length_bonus(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                               length_bonus: float = 0.05, max_bonus: float = 0.6) -> float:
    """A deliberately exploitable reward (the ``arith-hacking`` preset): the answer only has to
    *appear* somewhere in the response and every character earns a small bonus, so a policy gains
    more by writing long strings of numbers than by answering."""
    hit = 1.0 if str(ground_truth) in re.findall(r"\d+", solution_str) else 0.0
    return hit + min(max_bonus, length_bonus * len(solution_str.strip()))


def load_custom_fn(spec: str) -> RewardFn:
    """``path/to/file.py:fn`` -> the function (verl's compute_score signature)."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise ValueError(f"reward.custom_fn={spec!r} must look like path/to/file.py:function")
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"reward.custom_fn: file not found: {file}")
    mod_spec = importlib.util.spec_from_file_location(f"rlcockpit_custom_reward_{file.stem}", file)
    module = importlib.util.module_from_spec(mod_spec)  # type: ignore[arg-type]
    mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    fn = getattr(module, name, None)
    if not callable(fn):
        funcs = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")]
        raise ValueError(f"reward.custom_fn: {file} has no function {name!r}; it defines: {', '.join(funcs)}")
    return fn


class RewardModelScorer:
    """An HF sequence-classification model from a local path; score = logit 0 of prompt+response."""

    def __init__(self, path: str, device: Any) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if not Path(path).is_dir():
            raise FileNotFoundError(f"reward.model_path: not a local model directory: {path}")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
        self.device = device

    def __call__(self, prompts: list[str], responses: list[str]) -> list[float]:
        import torch

        texts = [p + r for p, r in zip(prompts, responses)]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.device)
        with torch.no_grad():
            return self.model(**enc).logits[:, 0].float().tolist()


class RewardManager:
    """Scores a batch, turning per-sample exceptions into 0 and tracking the failure rate."""

    def __init__(self, cfg: RewardConfig, *, name: str | None = None, device: Any = "cpu") -> None:
        self.cfg = cfg
        self.kwargs = dict(cfg.kwargs)
        self.model: RewardModelScorer | None = None
        self.fn: RewardFn | None = None
        if cfg.model_path and name is None:
            self.model = RewardModelScorer(cfg.model_path, device)
        elif cfg.custom_fn and name is None:
            self.fn = load_custom_fn(cfg.custom_fn)
        else:
            self.fn = REWARDS.get(name or cfg.name)
            self.kwargs = {} if name is not None and name != cfg.name else self.kwargs
        self.calls = 0
        self.failures = 0
        self.last_error: str | None = None

    def __call__(self, rows: list[Any], responses: list[str]) -> tuple[list[float], list[Any]]:
        """Scores and per-sample extra dicts (``acc`` etc. when the function returns a dict)."""
        if self.model is not None:
            return self.model([r.text for r in rows], responses), [None] * len(rows)
        scores, extras = [], []
        for row, resp in zip(rows, responses):
            self.calls += 1
            try:
                out = self.fn(row.data_source, resp, row.ground_truth, row.extra_info, **self.kwargs)  # type: ignore[misc]
                extra = out if isinstance(out, dict) else None
                value = float(out["score"] if isinstance(out, dict) else out)
                if not math.isfinite(value):
                    raise ValueError(f"reward returned a non-finite value {value!r}")
            except Exception as exc:  # one bad sample must not end the run
                self.failures += 1
                self.last_error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                value, extra = 0.0, None
            scores.append(value)
            extras.append(extra)
        return scores, extras

    @property
    def failure_rate(self) -> float:
        return self.failures / self.calls if self.calls else 0.0

    def check(self) -> None:
        """Raise when the failure rate passes the configured limit."""
        if self.calls and self.failure_rate > self.cfg.max_failure_rate:
            raise RewardFailureError(
                f"reward function failed on {self.failures}/{self.calls} samples "
                f"({self.failure_rate:.0%} > reward.max_failure_rate={self.cfg.max_failure_rate:.0%}); "
                f"last error: {self.last_error}"
            )
