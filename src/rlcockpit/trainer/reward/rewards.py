"""Rewards: rule functions by name, a user function from a file, or an HF reward model.

Every reward function has verl's ``compute_score`` signature
``fn(data_source, solution_str, ground_truth, extra_info=None) -> float | {"score": float, ...}``
so functions written for verl work unchanged.  A function that raises on one sample must not kill a
long run: that sample scores 0, the failure is counted and reported, and the run stops only when the
failure rate passes ``reward.max_failure_rate`` (a broken reward should not silently train on zeros).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import math
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rlcockpit.registry import Registry
from rlcockpit.trainer.reward.score import dapo_score, default_compute_score, gsm8k_score, math_score

RewardFn = Callable[..., Any]
REWARDS: Registry[RewardFn] = Registry("reward")


class RewardFailureError(RuntimeError):
    """Too many reward calls raised; the message carries the last traceback."""


@REWARDS.register("auto", "default", "default_compute_score")
def auto_reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                **kwargs: Any) -> float | dict[str, Any]:
    """By ``data_source``, as verl's ``default_compute_score`` (see :mod:`rlcockpit.trainer.reward.score`)."""
    return default_compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)


@REWARDS.register("arith", "exact_match")
def arith_exact_match(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """1 when the response is exactly the answer (surrounding whitespace ignored)."""
    return 1.0 if solution_str.strip() == str(ground_truth).strip() else 0.0


@REWARDS.register("bars")
def bars_reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None,
                format_score: float = 0.1) -> dict[str, Any]:
    """The built-in vision task (:mod:`rlcockpit.trainer.vision.task`): 1 for the taller bar's colour; as verl's
    geo3k reward gives ``format_score`` for a well-formed wrong answer, naming the other bar's colour (a colour
    that is in the picture) gets ``format_score``; anything else 0. ``acc`` is the exact answer."""
    answer = solution_str.strip()
    correct = answer == str(ground_truth).strip()
    in_picture = answer in ((extra_info or {}).get("colors") or ())
    return {"score": 1.0 if correct else format_score if in_picture else 0.0, "acc": bool(correct)}


@REWARDS.register("gsm8k")
def gsm8k(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, method: str = "strict",
          format_score: float = 0.0, score: float = 1.0) -> float:
    """verl's GSM8K rule: the number after the last ``#### `` must equal the ground truth."""
    return gsm8k_score(solution_str, ground_truth, method=method, format_score=format_score, score=score)


@REWARDS.register("math", "math_reward")
def math_reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """verl's MATH rule: the last ``\\boxed{}`` equals the ground truth after Hendrycks normalisation."""
    return math_score(solution_str, ground_truth)


@REWARDS.register("math_dapo")
def math_dapo(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, Any]:
    """verl's DAPO math rule: ``Answer: x`` (else the last box); +1 / -1 with ``acc`` and ``pred``."""
    return dapo_score(solution_str, ground_truth)


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


def load_custom_fn(path: str, name: str | None = None) -> RewardFn:
    """The function ``name`` (default ``compute_score``, as verl) from ``path``, in verl 0.9.1's forms
    (``verl.utils.import_utils.load_module``): a Python file, ``file://`` + a file, or ``pkg://`` + an importable
    module (``pkg://my_pkg.rewards`` or ``pkg://my_pkg/rewards``; the working directory is importable, as it is
    under verl's ``python -m verl.trainer.main_ppo``)."""
    name = name or "compute_score"
    if path.startswith("pkg://"):
        module_name = path[len("pkg://"):].replace("/", ".")
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        try:
            spec = importlib.util.find_spec(module_name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            raise ImportError(f"custom_reward_function.path: {path}: no module {module_name!r} (a pkg:// path names a "
                              f"module importable from {os.getcwd()} or the installed packages)")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the user's module: name it, the line and what to do
            raise ImportError(_import_failure(Path(spec.origin or module_name), exc)) from exc
        file = Path(getattr(module, "__file__", None) or module_name)
    else:
        file = Path(path[len("file://"):] if path.startswith("file://") else path).expanduser()
        if not file.is_file():
            raise FileNotFoundError(f"custom_reward_function.path: file not found: {file}")
        mod_spec = importlib.util.spec_from_file_location(f"rlcockpit_custom_reward_{file.stem}", file)
        module = importlib.util.module_from_spec(mod_spec)  # type: ignore[arg-type]
        try:
            mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
        except Exception as exc:  # the user's file: name it, the line and what to do, not just the exception
            raise ImportError(_import_failure(file, exc)) from exc
    fn = getattr(module, name, None)
    if not callable(fn):
        funcs = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")]
        raise ValueError(f"custom_reward_function.name: {file} has no function {name!r}; it defines: "
                         f"{', '.join(funcs) or 'nothing callable'}")
    return fn


def _import_failure(file: Path, exc: BaseException) -> str:
    line = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__)) if f.filename == str(file)),
                getattr(exc, "lineno", None))
    where = f"{file}" + (f", line {line}" if line else "")
    msg = f"custom_reward_function.path: importing {where} failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "verl":
        msg += (" (the file imports verl, which is not installed in this environment: install verl here, or use "
                "the built-in rules: reward.name=auto scores gsm8k, MATH and DAPO/AIME data as verl's "
                "default_compute_score does)")
    return msg


def _call_all(fn: RewardFn, calls: list[dict[str, Any]]) -> list[Any]:
    """Results (or the exception raised) of ``fn(**kw)`` for each call. An ``async def compute_score`` (verl
    0.9's reward loop awaits those) has all of the batch's calls awaited concurrently in one event loop."""
    out: list[Any] = []
    for kw in calls:
        try:
            out.append(fn(**kw))
        except Exception as exc:  # noqa: BLE001 - counted by the caller
            out.append(exc)
    pending = [i for i, r in enumerate(out) if inspect.isawaitable(r)]
    if pending:
        async def gather() -> list[Any]:
            return await asyncio.gather(*(out[i] for i in pending), return_exceptions=True)

        for i, result in zip(pending, asyncio.run(gather())):
            out[i] = result
    return out


def verl_extra_info(row: Any, manager: str | None = None) -> dict[str, Any]:
    """``extra_info`` as verl 0.9.1 hands it to ``compute_score`` for a single-turn rollout, a fresh dict per
    response: the row's ``extra_info``, then what the agent loop adds (``turn_scores``/``tool_rewards`` = [],
    ``raw_prompt`` = the chat messages; merged by the naive, remote and rate_limited managers), then what the
    naive and remote managers add (``num_turns`` = 2, one prompt and one response; ``rollout_reward_scores`` =
    {}). The DAPO, GDPO and prime managers pass the row's alone; the batch manager adds ``rollout_reward_scores``."""
    info = dict(getattr(row, "extra_info", None) or {})
    manager = manager or "naive"
    if manager in ("naive", "remote", "rate_limited"):
        info.update(turn_scores=[], tool_rewards=[])
        prompt = getattr(row, "prompt", None)
        if isinstance(prompt, list):
            info["raw_prompt"] = prompt
    if manager in ("naive", "remote"):
        info.update(num_turns=2, rollout_reward_scores={})
    elif manager == "batch":
        info["rollout_reward_scores"] = {}
    return info


def reward_model_enabled(cfg: Any) -> bool:
    """Whether the reward model scores: ``reward_model.enable`` (null = on when ``model.path`` is set), unless
    ``custom_reward_function.path`` is set: verl 0.9.1's reward loop then calls the function
    (``RewardLoopWorker.compute_score``; a generative reward model's function also gets the model's server,
    which rlcockpit does not run)."""
    rm = cfg.reward_model
    on = bool(rm.model.path) if rm.enable is None else bool(rm.enable)
    return on and not cfg.custom_reward_function.path


def resolve_reward_fn(cfg: Any, *, validation: bool = False) -> tuple[RewardFn, str, dict[str, Any]]:
    """(function, label, kwargs) the config selects, in verl's order: a custom function file first, else the
    named rule (``reward.name``; ``reward.val_name`` for validation when set)."""
    crf = cfg.custom_reward_function
    val_name = cfg.reward.val_name if validation else None
    if crf.path and not val_name:
        return load_custom_fn(crf.path, crf.name), f"{crf.path}:{crf.name or 'compute_score'}", dict(cfg.reward.kwargs)
    name = val_name or cfg.reward.name
    kwargs = dict(cfg.reward.kwargs) if name == cfg.reward.name else {}
    return REWARDS.get(name), f"reward.name={name}" if not val_name else f"reward.val_name={name}", kwargs


class RewardModelScorer:
    """An HF sequence-classification model from a local path; score = logit 0 at the last token of the text verl
    0.9.1's reward loop gives it (``RewardLoopWorker._preprocess_reward_inputs``): the row's chat messages plus
    ``{"role": "assistant", "content": response}`` through the reward model's own chat template, without a
    generation prompt, a leading BOS left to the tokenizer. Rows without chat messages, or a reward model
    without a chat template, score the prompt text followed by the response."""

    def __init__(self, path: str, device: Any) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if not Path(path).is_dir():
            raise FileNotFoundError(f"reward_model.model.path: not a local model directory: {path}")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"  # every text ends at the last position: no pad token can be mistaken
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
        # ... for the end of a text (a pad that is also the EOS the text ends on): the last position is the score's
        self.model.config.get_text_config().pad_token_id = -1
        self.device = device

    def text(self, row: Any, response: str) -> str:
        """What the reward model reads for ``row`` and ``response``."""
        prompt = getattr(row, "prompt", None)
        if isinstance(prompt, list) and getattr(self.tokenizer, "chat_template", None):
            chat = [*prompt, {"role": "assistant", "content": response}]
            text = self.tokenizer.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
            bos = self.tokenizer.bos_token
            return text[len(bos):] if bos and text.startswith(bos) else text
        return (row if isinstance(row, str) else getattr(row, "text", "") or str(prompt or "")) + response

    def __call__(self, rows: list[Any], responses: list[str]) -> list[float]:
        import torch

        texts = [self.text(row, r) for row, r in zip(rows, responses)]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.device)
        positions = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            try:
                out = self.model(**enc, position_ids=positions).logits[:, 0]
            except TypeError:  # a classifier that takes no position_ids
                out = self.model(**enc).logits[:, 0]
        return out.float().tolist()


class RewardManager:
    """Scores a batch, turning per-sample exceptions into 0 and tracking the failure rate."""

    def __init__(self, fn: RewardFn | None = None, *, label: str = "reward", kwargs: dict[str, Any] | None = None,
                 max_failure_rate: float = 0.2, model: RewardModelScorer | None = None, batched: bool = False,
                 manager: str | None = None) -> None:
        self.fn, self.model, self.label = fn, model, label
        self.batched = batched  # verl's BatchRewardManager: one call with lists per batch
        self.manager = "batch" if batched else manager  # reward_model.reward_manager: what extra_info carries
        self.kwargs = dict(kwargs or {})
        self.max_failure_rate = max_failure_rate
        self.calls = 0
        self.failures = 0
        self.last_error: str | None = None

    @classmethod
    def from_config(cls, cfg: Any, *, validation: bool = False, device: Any = "cpu") -> RewardManager:
        if reward_model_enabled(cfg) and not (validation and cfg.reward.val_name):
            path = cfg.reward_model.model.path
            return cls(label=f"reward model {path}", model=RewardModelScorer(path, device),
                       max_failure_rate=cfg.reward.max_failure_rate)
        fn, label, kwargs = resolve_reward_fn(cfg, validation=validation)
        rm = cfg.reward_model
        if cfg.custom_reward_function.path and (rm.enable or (rm.enable is None and rm.model.path)) and not validation:
            print(f"[rlcockpit] reward: {label} scores, as in verl 0.9.1 when custom_reward_function.path is set; "
                  f"the reward model ({rm.model.path}) is not run, and a function that calls it (verl hands it "
                  "reward_router_address and reward_model_tokenizer) fails")
        batched = cfg.reward_model.reward_manager == "batch" and bool(cfg.custom_reward_function.path) and \
            not (validation and cfg.reward.val_name)
        return cls(fn, label=label, kwargs=kwargs, max_failure_rate=cfg.reward.max_failure_rate, batched=batched,
                   manager=cfg.reward_model.reward_manager)

    def score_one(self, row: Any, response: str) -> Any:
        """The raw result for one response (verl passes these by keyword)."""
        (out,) = self._results([row], [response])
        if isinstance(out, BaseException):
            raise out
        return out

    def _results(self, rows: list[Any], responses: list[str]) -> list[Any]:
        """One result (or the exception raised) per response."""
        if not self.batched:
            return _call_all(self.fn, [dict(data_source=row.data_source, solution_str=resp,  # type: ignore[arg-type]
                                            ground_truth=row.ground_truth,
                                            extra_info=verl_extra_info(row, self.manager), **self.kwargs)
                                       for row, resp in zip(rows, responses)])
        (out,) = _call_all(self.fn, [dict(  # type: ignore[arg-type]
            data_sources=[r.data_source for r in rows], solution_strs=list(responses),
            ground_truths=[r.ground_truth for r in rows], extra_infos=[verl_extra_info(r, "batch") for r in rows],
            **self.kwargs)])
        if isinstance(out, BaseException):
            return [out] * len(rows)
        out = list(out) if isinstance(out, (list, tuple)) or hasattr(out, "tolist") else out
        if not isinstance(out, list) or len(out) != len(rows):
            got = f"{len(out)} results" if isinstance(out, list) else type(out).__name__
            return [ValueError(f"reward_model.reward_manager=batch: {self.label} must return one score per "
                               f"response ({len(rows)}), got {got}")] * len(rows)
        return out

    def __call__(self, rows: list[Any], responses: list[str]) -> tuple[list[float], list[Any]]:
        """Scores and per-sample extra dicts (``acc`` etc. when the function returns a dict)."""
        if self.model is not None:
            return self.model(rows, responses), [None] * len(rows)
        scores, extras = [], []
        for out in self._results(rows, responses):
            self.calls += 1
            try:
                if isinstance(out, BaseException):
                    raise out
                extra = {k: v for k, v in out.items() if k != "score"} if isinstance(out, dict) else None
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
        if self.calls and self.failure_rate > self.max_failure_rate:
            raise RewardFailureError(
                f"reward {self.label} failed on {self.failures}/{self.calls} samples "
                f"({self.failure_rate:.0%} > reward.max_failure_rate={self.max_failure_rate:.0%}); "
                f"last error: {self.last_error}"
            )


def extra_metrics(extras: list[Any], prefix: str = "reward_extra") -> dict[str, float]:
    """Per-key means of the numeric extra values reward functions returned (``{prefix}/{key}/mean``)."""
    sums: dict[str, list[float]] = {}
    for ex in extras:
        if not isinstance(ex, dict):
            continue
        for k, v in ex.items():
            if isinstance(v, (bool, int, float)) and math.isfinite(float(v)):
                sums.setdefault(k, []).append(float(v))
    return {f"{prefix}/{k}/mean": sum(v) / len(v) for k, v in sums.items()}
