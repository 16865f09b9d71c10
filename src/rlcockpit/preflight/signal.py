"""Preflight of the trainer's inputs that decide whether RL can learn at all: the reward and the model.

``check_reward`` proves a learning signal per data source before any compute is spent: the ground truth,
written the way that data source's answers are written (GSM8K: ``#### 72``, MATH: ``\\boxed{72}``, DAPO:
``Answer: 72``), must score the maximum, and a wrong answer in the same format must score lower. Otherwise
every group gets the same reward, every GRPO advantage is 0 and the run trains on nothing: the check fails,
naming the reward and the data source. ``check_model`` fails on a model directory without weights or a
tokenizer, which would otherwise surface after the data has loaded.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from rlcockpit.preflight.checks import CheckResult, load_rows_for

ROWS_PER_SOURCE = 4


def answer_forms(data_source: str, answer: str) -> list[str]:
    """How a response states ``answer`` for this data source (several forms when the source is unknown)."""
    from rlcockpit.trainer.reward.score import DAPO_SOURCES, GSM8K_SOURCES, MATH_SOURCES

    if data_source in GSM8K_SOURCES:
        return [f"The answer is {answer}.\n#### {answer}"]
    if data_source in MATH_SOURCES:
        return [f"The answer is $\\boxed{{{answer}}}$."]
    if data_source in DAPO_SOURCES or data_source.startswith("aime"):
        return [f"Answer: {answer}"]
    if data_source == "arith":
        return [answer]
    return [answer, f"#### {answer}", f"\\boxed{{{answer}}}", f"Answer: {answer}", f"The answer is {answer}."]


def wrong_answer(truth: str) -> str:
    """An answer that is wrong but well formed: a number changed by one, else the text altered."""
    match = re.fullmatch(r"\s*(-?\d+)\s*", truth)
    if match:
        value = str(int(match.group(1)) + 1)
        return value.zfill(len(match.group(1))) if match.group(1).startswith("0") else value
    try:
        return f"{float(truth) + 1:g}"
    except ValueError:
        return f"{truth} not" if truth else "1"


def _score(manager: Any, row: Any, response: str) -> float:
    value = manager.score_one(row, response)
    raw = value.get("score") if isinstance(value, dict) else value
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
        raise TypeError(f"it returned {value!r}: it must return a finite number or a dict with a numeric 'score'")
    return float(raw)


def check_reward(cfg: Any, rows: list[Any] | None = None, n_samples: int = ROWS_PER_SOURCE) -> list[CheckResult]:
    """The reward loads, returns finite numbers, and scores the right answer above a wrong one, per data source."""
    from rlcockpit.trainer.reward.rewards import RewardManager, reward_model_enabled

    name = "reward: learning signal"
    if reward_model_enabled(cfg):
        p = Path(str(cfg.reward_model.model.path)).expanduser()
        if not (p / "config.json").is_file():
            return [CheckResult(name, "fail", f"reward_model.model.path={str(p)!r} is not a local model directory")]
        return [CheckResult(name, "pass", f"reward model at {p} (not loaded by preflight)")]
    try:
        manager = RewardManager.from_config(cfg)
    except Exception as exc:  # noqa: BLE001 - KeyError with a hint, SyntaxError in the user's file...
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else f"{type(exc).__name__}: {exc}"
        return [CheckResult(name, "fail", f"the reward function could not be loaded: {msg}")]
    if rows is None:
        try:
            rows = load_rows_for(cfg)[0]
        except Exception as exc:  # noqa: BLE001
            return [CheckResult(name, "warn", f"no data to test reward {manager.label} on ({exc})")]
    by_source: dict[str, list[tuple[int, Any]]] = defaultdict(list)
    for i, row in enumerate(rows):
        if len(by_source[row.data_source]) < n_samples and row.ground_truth is not None:
            by_source[row.data_source].append((i, row))
    fails, passes, scores = [], [], []
    for source, sample in by_source.items():
        problem = _source_signal(manager, source, sample, scores)
        (fails if problem else passes).append(problem or source)
    data = {"scores": scores, "sources": sorted(by_source)}
    if fails:
        return [CheckResult(name, "fail", "; ".join(fails), data)]
    return [CheckResult(name, "pass", f"reward {manager.label}: the ground truth scores highest and a wrong answer "
                        f"lower for data source(s) {', '.join(passes)}", data)]


def _source_signal(manager: Any, source: str, sample: list[tuple[int, Any]], scores: list[float]) -> str | None:
    """None when this data source has a learning signal, else what is wrong (naming reward and source)."""
    where = f"reward {manager.label} on data_source {source!r}"
    for i, row in sample:
        truth = str(row.ground_truth)
        right_forms = answer_forms(source, truth)
        wrong_forms = [*answer_forms(source, wrong_answer(truth)), "I don't know."]
        try:
            right = max(_score(manager, row, r) for r in right_forms)
            wrong = [_score(manager, row, w) for w in wrong_forms]
        except Exception as exc:  # noqa: BLE001 - the user's reward raised, or NoDefaultReward
            return f"{where}: row {i}: {type(exc).__name__}: {exc}"
        scores.extend([right, *wrong])
        if right < max(wrong):
            return (f"{where}: row {i}: a wrong answer scores {max(wrong):g}, above the ground truth "
                    f"({right:g} for {right_forms[0]!r})")
        if right == max(wrong):
            return (f"{where}: row {i}: the ground truth ({right_forms[0]!r}) and a wrong answer both score "
                    f"{right:g}: no learning signal (every advantage would be 0)")
    return None


def check_model(cfg: Any) -> list[CheckResult]:
    """``actor_rollout_ref.model.path`` (and the critic / tokenizer paths in use) can load: config, weights,
    tokenizer, all local."""
    from rlcockpit.trainer.models import model_dir_problems

    name = "model: files"
    m = cfg.model
    if m.path == "tiny":
        return [CheckResult(name, "pass", "built-in tiny model (built and cached on first use)")]
    own_tokenizer = not (m.tokenizer_path or cfg.data.tokenizer)
    problems = model_dir_problems(m.path, tokenizer=own_tokenizer)
    tok = m.tokenizer_path or cfg.data.tokenizer
    if tok:
        key = "actor_rollout_ref.model.tokenizer_path" if m.tokenizer_path else "data.tokenizer"
        problems += [p for p in model_dir_problems(tok, key) if "tokenizer" in p or "not a local" in p]
    if cfg.algorithm.adv_estimator == "gae" and cfg.critic.model.path:
        problems += model_dir_problems(cfg.critic.model.path, "critic.model.path", tokenizer=False)
    if m.lora_adapter_path and not (Path(m.lora_adapter_path).expanduser() / "adapter_config.json").is_file():
        problems.append(f"actor_rollout_ref.model.lora_adapter_path={m.lora_adapter_path!r} has no adapter_config.json")
    if problems:
        return [CheckResult(name, "fail", "; ".join(problems))]
    return [CheckResult(name, "pass", f"{m.path}: config, weights and tokenizer present")]
