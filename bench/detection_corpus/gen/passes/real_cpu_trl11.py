"""Sixteenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings11``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings10``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: batch shapes 2 prompts x 5, 3 prompts x 4, 5 prompts x 2, 4 prompts x 4 and 1 prompt x 7;
``multi_objective_aggregation="normalize_then_sum"`` (GDPO) with two weighted rewards; the **adaptive entropy bonus**
(``use_adaptive_entropy``); ``generation_batch_size`` (one generation feeds three steps) with a narrow clip
``epsilon=0.1``; ``num_iterations=3`` under a **cosine schedule with restarts**; ``loss_type="bnpo"`` with gradient
accumulation 2, a **polynomial** schedule and a warm-up given as a ratio; ``adam_beta2=0.95`` with weight decay, a
**constant-with-warm-up** schedule and ``shuffle_dataset=False``; logging every 2 / 3 / 4 / 5, evaluation every 20;
models built from **model seed 7**; seeds 421-440.

Failure mechanisms, each starting slowly or late (how, from which step, sudden or ramp: written in each spec and
committed before the run): **a grader that raises (a time-out) for a growing share of rows, caught and scored 0**;
**a reward-weight schedule with its ends swapped** (the accuracy's weight 0.7 -> 0, the format check's 0.3 -> 1);
**reward noise growing** (seeded Gaussian noise on the paid reward, its std 0 -> 1); **a repetition-penalty ramp** in
generation (1 -> 3); **generation ``top_k`` shrinking to 1** (near-greedy sampling in generation only: a group's
completions become identical); **prompts reformatted with spaces** around the operators for a growing share of rows
(a preprocessing change the tokenizer never saw); **``max_new_tokens`` shrinking** 8 -> 2 step by step. Each run goes
through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings11/<name>/`` and labelled by reading it (README, sixteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl11.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl11.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import accuracy, arith_training_rows, main, prompt_dataset
from real_cpu_trl9 import format_check
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings11"


class FlakyGrader:
    """The paid reward (``rewards/grader/mean``) is the digit overlap from a grader that, from step ``start``, raises
    ``TimeoutError`` for a share of rows ramping linearly 0 (step ``start``) -> ``hi`` (step ``end``), then kept (a
    remote grader that times out more and more under load); the reward function catches the error and scores the row
    0.0. Which rows: seeded by ``seed``, the step and the row. ``accuracy`` (weight 0) logs the true accuracy."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.step, self.share = start, end, hi, seed, 0, 0.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, self.hi)

    def _grade(self, c: str, g: str, i: int) -> float:
        if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{i}/{c}/{g}").random() < self.share:
            raise TimeoutError("grader timed out")
        return digit_overlap("arith", c, g)

    def funcs(self) -> list[Any]:
        def grader(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for i, (c, g) in enumerate(zip(completions, ground_truth)):
                try:
                    out.append(self._grade(c, g, i))
                except TimeoutError:
                    out.append(0.0)
            return out

        return [grader, accuracy]


def weight_schedule(start: int, end: int, lo: tuple[float, float], hi: tuple[float, float]) -> Any:
    """Before every step ``k`` the trainer's reward weights are ``ramp(k, start, end, lo[i], hi[i])`` (a reward-weight
    schedule written with its ends swapped: the accuracy's weight decays while the format check's grows)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        for i in range(2):
            trainer.reward_weights[i] = ramp(step, start, end, lo[i], hi[i])

    return each_step


class NoisyReward:
    """The paid reward (``rewards/train_reward``) is the digit overlap plus seeded Gaussian noise whose std ramps
    linearly 0 (step ``start``) -> ``hi`` (step ``end``), then kept (a reward model whose outputs get noisier as it is
    served from a degrading replica). ``accuracy`` (weight 0) logs the true accuracy beside it."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.sd, self.rng = start, end, hi, 0.0, random.Random(seed)

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.sd = ramp(step, self.start, self.end, 0.0, self.hi)

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) + (self.rng.gauss(0.0, self.sd) if self.sd > 0 else 0.0)
                    for c, g in zip(completions, ground_truth)]

        return [train_reward, accuracy]


def repetition_penalty_ramp(start: int, end: int, lo: float, hi: float) -> Any:
    """Before every step ``k`` the generation config's ``repetition_penalty`` is ``ramp(k, start, end, lo, hi)``
    (generation only: the training pass scores the completions as before; the penalty also counts the prompt's
    tokens)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        trainer.generation_config.repetition_penalty = ramp(step, start, end, lo, hi)

    return each_step


def top_k_ramp(start: int, end: int, lo: int, hi: int) -> Any:
    """From the start of step ``start`` the generation config's ``top_k`` is ``round(ramp(k, start, end, lo, hi))``
    before every step ``k`` (``top_k`` 0, off, before ``start``; generation only: the training pass scores the full
    distribution), so sampling goes near-greedy as it reaches 1."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            trainer.generation_config.top_k = int(round(ramp(step, start, end, lo, hi)))

    return each_step


def max_new_tokens_ramp(start: int, end: int, lo: int, hi: int) -> Any:
    """Before every step ``k`` from ``start`` the length budget (``trainer.max_completion_length`` and the generation
    config's ``max_new_tokens``) is ``round(ramp(k, start, end, lo, hi))`` (a budget schedule run backwards)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            n = int(round(ramp(step, start, end, lo, hi)))
            trainer.max_completion_length = n
            trainer.generation_config.max_new_tokens = n
            if isinstance(getattr(trainer, "generation_kwargs", None), dict):
                trainer.generation_kwargs["max_new_tokens"] = n

    return each_step


def lr_restarts_doubling(start: int, cycle: int) -> Any:
    """From the start of step ``start`` the learning rate follows cosine warm restarts of ``cycle`` steps whose peak
    doubles at every restart (a custom scheduler with its decay factor written as 2.0 instead of 0.5): before every
    step ``k`` the lr is ``base x 2**c x (1 + cos(pi x t / cycle)) / 2`` with ``c, t = divmod(k - start, cycle)``
    (the optimizer's lr and the scheduler's base lr; ``base`` the constant lr before ``start``)."""
    import math

    base: list[float] = []

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        opt, sched = kw["optimizer"], kw["lr_scheduler"]
        if not base:
            base.extend(g["lr"] for g in opt.param_groups)
        if step >= start:
            c, t = divmod(step - start, cycle)
            f = 2.0 ** c * (1 + math.cos(math.pi * t / cycle)) / 2
            for g, b in zip(opt.param_groups, base):
                g["lr"] = b * f
            sched.base_lrs = [b * f for b in base]

    return each_step


class SpacedPrompts:
    """A preprocessing change: a dataset transform writes a share of the training prompts with spaces around ``+`` and
    ``=`` (``'48 + 75 = '`` instead of ``'48+75='``: characters the BPE tokenizer never saw, so they become
    ``<unk>``), the share ramping linearly 0 (step ``start``) -> 1 (step ``end``), then all. Which rows: seeded by the
    row and the step. The dataloader fetches one batch ahead, so a step's batch follows the share set at the step
    before. Evaluation keeps the original prompts."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": list(batch["ground_truth"])}
        for i, p in enumerate(batch["prompt"]):
            spaced = self.share > 0 and random.Random(f"{self.seed}/{self.step}/{i}/{p}").random() < self.share
            out["prompt"].append(p.replace("+", " + ").replace("=", " = ") if spaced else p)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


class GrowingPrefix:
    """A few-shot template whose example list is never cleared: a dataset transform puts ``n`` solved examples
    (``'12+34=046'``, one a line, drawn from the training rows by a seeded rng) before every training prompt, ``n =
    round(ramp(k, start, end, 0, hi))`` (the prefix grows by one example every ``(end - start) / hi`` steps, then
    stays at ``hi``: under 128 positions). The dataloader fetches one batch ahead, so a step's batch follows the count
    set at the step before. Evaluation keeps the plain prompts."""

    def __init__(self, start: int, end: int, hi: int, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.n = start, end, hi, seed, 0
        self.examples: list[str] = []

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.n = int(round(ramp(step, self.start, self.end, 0.0, float(self.hi))))

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        prefix = "".join(e + "\n" for e in self.examples[: self.n])
        return {"prompt": [prefix + p for p in batch["prompt"]], "ground_truth": list(batch["ground_truth"])}

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        self.examples = [r["prompt"][0]["content"] + r["reward_model"]["ground_truth"] for r in rows[-self.hi:]]
        return prompt_dataset(rows[:n], self.transform)


_flaky = FlakyGrader(150, 400, 0.8, 431)
_noisy = NoisyReward(150, 400, 1.0, 433)
_spaced = SpacedPrompts(150, 350, 436)
_prefix = GrowingPrefix(150, 350, 10, 439)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: two rewards (accuracy 0.7, format check 0.3) aggregated "normalize_then_sum" (GDPO: each reward
    # normalized within its group, then summed); GPT-2 seed 7, 2 prompts x 5, 600 steps, logging every 5, evaluation
    # on 16 prompts every 20
    "gpt2s7-2prompt-5gen-normthensum-acc07-format03-600-log5-eval20": {
        "model": "gpt2", "model_seed": 7, "batch": 10, "num_generations": 5, "steps": 600, "logging_steps": 5,
        "eval_steps": 20, "lr": 5e-5, "seed": 421, "reward_funcs": [accuracy, format_check],
        "reward_weights": [0.7, 0.3], "config": {"multi_objective_aggregation": "normalize_then_sum"}},
    # healthy: the adaptive entropy bonus (use_adaptive_entropy: coefficient 0.01 to start, moved by 0.002 a step
    # within [0, 0.05] towards an entropy target of 1.5); Llama seed 7, 3 prompts x 4, 600 steps, logging every 2
    "llamas7-3prompt-4gen-adaptiveentropy-target15-600-log2": {
        "model": "llama", "model_seed": 7, "batch": 12, "num_generations": 4, "steps": 600, "logging_steps": 2,
        "lr": 5e-5, "seed": 422,
        "config": {"use_adaptive_entropy": True, "entropy_coef": 0.01, "entropy_target": 1.5,
                   "entropy_coef_delta": 0.002, "entropy_coef_min": 0.0, "entropy_coef_max": 0.05}},
    # healthy: generation_batch_size 30 (one generation of 15 prompts x 2 feeds three steps of 10) with a narrow clip
    # epsilon 0.1; Qwen2 seed 7, 5 prompts x 2 a step, 500 steps, logging every 5
    "qwen2s7-5prompt-2gen-genbatch30-eps01-500-log5": {
        "model": "qwen2", "model_seed": 7, "batch": 10, "num_generations": 2, "steps": 500, "logging_steps": 5,
        "lr": 5e-5, "seed": 423, "config": {"generation_batch_size": 30, "epsilon": 0.1}},
    # healthy: num_iterations 3 under a cosine schedule with 3 restarts (20 warm-up steps); GPT-2 seed 7, 4 prompts x 4,
    # 600 steps, logging every 3, evaluation every 20
    "gpt2s7-4prompt-4gen-iter3-cosinerestarts3-warmup20-600-log3-eval20": {
        "model": "gpt2", "model_seed": 7, "batch": 16, "num_generations": 4, "steps": 600, "logging_steps": 3,
        "eval_steps": 20, "lr": 5e-5, "seed": 424,
        "config": {"num_iterations": 3, "lr_scheduler_type": "cosine_with_restarts",
                   "lr_scheduler_kwargs": {"num_cycles": 3}, "warmup_steps": 20}},
    # healthy: loss_type bnpo, gradient accumulation 2, a polynomial schedule (power 1 to lr_end 1e-7) after a
    # warm-up of 10% of the steps (warmup_steps 0.1: a ratio); Llama seed 7, 2 prompts x 5, 400 steps, logging every 2
    "llamas7-2prompt-5gen-bnpo-gradacc2-polynomial-warmup01-400-log2": {
        "model": "llama", "model_seed": 7, "batch": 10, "num_generations": 5, "steps": 400, "logging_steps": 2,
        "lr": 5e-5, "seed": 425,
        "config": {"loss_type": "bnpo", "gradient_accumulation_steps": 2, "lr_scheduler_type": "polynomial",
                   "warmup_steps": 0.1}},
    # healthy: adam_beta2 0.95 with weight decay 0.1, constant lr after 40 warm-up steps, the dataset not shuffled
    # (shuffle_dataset False: the rows in the order given); Qwen2 seed 7, 1 prompt x 7, 500 steps, logging every 4
    "qwen2s7-1prompt-7gen-beta2095-wd01-constwarmup40-noshuffle-500-log4": {
        "model": "qwen2", "model_seed": 7, "batch": 7, "num_generations": 7, "steps": 500, "logging_steps": 4,
        "lr": 5e-5, "seed": 426,
        "config": {"adam_beta2": 0.95, "weight_decay": 0.1, "lr_scheduler_type": "constant_with_warmup",
                   "warmup_steps": 40, "shuffle_dataset": False}},
    # grader time-outs, ramp: from step 150 the paid grader raises TimeoutError for a share of rows ramping 0 -> 0.8
    # (step 400), then kept; each caught and scored 0.0; the true accuracy logged with weight 0; GPT-2 seed 7,
    # 3 prompts x 4, 500 steps, logging every step
    "gpt2s7-3prompt-4gen-graderraisesramp0-08-150-400-500": {
        "model": "gpt2", "model_seed": 7, "batch": 12, "num_generations": 4, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 431, "reward_funcs": _flaky.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _flaky.hook},
    # a reward-weight schedule with its ends swapped, ramp: weights (accuracy, format check) (0.7, 0.3) to step 150,
    # ramped linearly to (0.0, 1.0) at step 400 and kept (training and evaluation); Llama seed 7, 2 prompts x 5,
    # 500 steps, logging every step, evaluation every 20
    "llamas7-2prompt-5gen-weightschedule-acc07to0-format03to1-150-400-500-eval20": {
        "model": "llama", "model_seed": 7, "batch": 10, "num_generations": 5, "steps": 500, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 432, "reward_funcs": [accuracy, format_check],
        "reward_weights": [0.7, 0.3], "each_step": weight_schedule(150, 400, (0.7, 0.3), (0.0, 1.0))},
    # reward noise growing, ramp: from step 150 the paid reward gets seeded Gaussian noise, its std ramping 0 -> 1.0
    # (step 400), then kept; the true accuracy logged with weight 0; Qwen2 seed 7, 3 prompts x 3, 450 steps, logging
    # every step
    "qwen2s7-3prompt-3gen-rewardnoiseramp0-1-150-400-450": {
        "model": "qwen2", "model_seed": 7, "batch": 9, "num_generations": 3, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 433, "reward_funcs": _noisy.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _noisy.hook},
    # a repetition-penalty ramp in generation, ramp: repetition_penalty 1.0 to step 150, ramped linearly to 3.0 at
    # step 350 and kept (generation only); GPT-2 seed 7, 4 prompts x 3, 450 steps, logging every step
    "gpt2s7-4prompt-3gen-reppenramp1-3-150-350-450": {
        "model": "gpt2", "model_seed": 7, "batch": 12, "num_generations": 3, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 434, "each_step": repetition_penalty_ramp(150, 350, 1.0, 3.0)},
    # generation top_k shrinking to 1, ramp: top_k off to step 149, then round(ramp(k, 150, 350, 20, 1)) and 1 from
    # step 350 (generation only: near-greedy sampling, a group's completions identical); Llama seed 7, 3 prompts x 4,
    # 450 steps, logging every step
    "llamas7-3prompt-4gen-gentopkramp20-1-150-350-450": {
        "model": "llama", "model_seed": 7, "batch": 12, "num_generations": 4, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 435, "each_step": top_k_ramp(150, 350, 20, 1)},
    # prompts reformatted with spaces, ramp: a share of the training prompts ramping 0 (step 150) -> 1 (step 350)
    # written '48 + 75 = ' instead of '48+75=' (spaces: <unk> to the tokenizer); evaluation keeps the original
    # prompts; Qwen2 seed 7, 2 prompts x 5, 450 steps, logging every step, evaluation every 20
    "qwen2s7-2prompt-5gen-spacedpromptsramp150-350-450-eval20": {
        "model": "qwen2", "model_seed": 7, "batch": 10, "num_generations": 5, "steps": 450, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 436, "train_dataset": _spaced.dataset, "each_step": _spaced.hook},
    # max_new_tokens shrinking, ramp: the length budget 8 to step 149, then round(ramp(k, 150, 300, 8, 2)) and 2 from
    # step 300 (the answers take 3 tokens or fewer); GPT-2 seed 7, 3 prompts x 4, 450 steps, logging every step
    "gpt2s7-3prompt-4gen-maxnewtokensramp8-2-150-300-450": {
        "model": "gpt2", "model_seed": 7, "batch": 12, "num_generations": 4, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 437, "each_step": max_new_tokens_ramp(150, 300, 8, 2)},
    # added after the first twelve ran (written and committed before running it): the repetition-penalty ramp left
    # no mark (reward, entropy, length unchanged). Learning-rate warm restarts whose peak doubles, periodic and
    # compounding: constant lr 1e-4 to step 99; from step 100 cosine warm restarts of 75 steps, peaks 1e-4, 2e-4,
    # 4e-4, 8e-4, 1.6e-3 (restarts at 100, 175, 250, 325, 400); Llama seed 7, 3 prompts x 4, 450 steps, logging
    # every step
    "llamas7-3prompt-4gen-lrrestartspeakx2-from100-cycle75-constlr1e-4-450": {
        "model": "llama", "model_seed": 7, "batch": 12, "num_generations": 4, "steps": 450, "logging_steps": 1,
        "lr": 1e-4, "seed": 438, "each_step": lr_restarts_doubling(100, 75),
        "config": {"lr_scheduler_type": "constant"}},
    # added after the first thirteen ran (written and committed before running it): the spaced prompts left no mark
    # (the tokenizer drops the spaces: the model saw the same tokens). A few-shot prefix that keeps growing, ramp:
    # from step 150 every training prompt is preceded by n solved examples, n = round(ramp(k, 150, 350, 0, 10)) (one
    # more every 20 steps, 10 from step 350); evaluation keeps the plain prompts; GPT-2 seed 7, 2 prompts x 5, 450
    # steps, logging every step, evaluation every 20
    "gpt2s7-2prompt-5gen-fewshotprefixgrows0-10-150-350-450-eval20": {
        "model": "gpt2", "model_seed": 7, "batch": 10, "num_generations": 5, "steps": 450, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 439, "train_dataset": _prefix.dataset, "each_step": _prefix.hook},
}


# run once and not stored: the failure its spec meant did not come (README, sixteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
