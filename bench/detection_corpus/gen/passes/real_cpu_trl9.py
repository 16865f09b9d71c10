"""Fourteenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings9``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings8``) has, made as a held-out
source (nothing was tuned on it, no detector ran on it).

Settings: ``loss_type="grpo"`` with ``scale_rewards="none"`` and ``mask_truncated_completions``, evaluation every 10;
``num_generations=2`` (tiny noisy groups) with ``top_entropy_quantile=0.2`` and ``epsilon_high=0.28`` on a 1000-step
run logging every 5; **several reward functions with ``reward_weights``** (a task accuracy and a format check, 0.7 /
0.3), ``max_grad_norm`` off (0: no clipping, no grad norm logged), a cosine schedule with warm-up; gradient
accumulation 4 (one generation of 8 prompts x 4 feeds 4 micro-steps); models built from **model seed 5**; seeds
201-212.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**reward scaled x100 by a bug from a step** (kept, under ``scale_rewards="none"``: the advantages x100); **one of two
weighted reward functions starting to return a constant 1.0** (a broken grader); **reward labels shuffled across
prompts**, the shuffled share ramping 0 -> 1; **the PPO clip epsilon set to 10** from a step under
``num_iterations=3``; **beta ramping 0.04 -> -0.2** (a sign bug ramp); **max_completion_length halved** from a step (a
truncation jump); **the reference model drifting** (its weights nudged by a little seeded noise every step from a
step). Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings9/<name>/`` and labelled by reading it (README, fourteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl9.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl9.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, main

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings9"


def format_check(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
    """A format reward: 1.0 for a completion of exactly three digits, 0.5 for any other all-digit one, else 0."""
    out = []
    for c in completions:
        got = c.strip()
        out.append(1.0 if got.isdigit() and len(got) == 3 else 0.5 if got.isdigit() else 0.0)
    return out


class BrokenGrader(FromStep):
    """A weighted grader (``grader``, logged as ``rewards/grader/mean``) that scores the task's accuracy until step
    ``start`` and returns a constant 1.0 for every completion from the start of step ``start`` (training and
    evaluation: a grader service that broke). ``accuracy`` (weight 0) logs the true accuracy beside it."""

    def grader(self, completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        if self.on:
            return [1.0 for _ in completions]
        return accuracy(completions, ground_truth)

    def funcs(self) -> list[Any]:
        def grader(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return self.grader(completions, ground_truth, **kw)

        return [grader, format_check, accuracy]


class ShuffledLabels:
    """The paid reward (``rewards/train_reward``) scores each training prompt's completions against the ground truth
    of another prompt of the same batch for a share of the prompts ramping linearly 0 (step ``start``) -> 1 (step
    ``end``), then all (a data pipeline that misaligns labels: each chosen prompt group gets the next group's answer;
    which groups, seeded by the step); evaluation keeps its own labels. ``accuracy`` (weight 0) logs the true accuracy
    beside it."""

    def __init__(self, start: int, end: int, num_generations: int, seed: int) -> None:
        self.start, self.end, self.n, self.seed = start, end, num_generations, seed
        self.share, self.step, self.trainer = 0.0, 0, None

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.trainer, self.step, self.share = trainer, step, ramp(step, self.start, self.end, 0.0, 1.0)

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            gts = list(ground_truth)
            training = self.trainer is not None and self.trainer.model.training
            if training and self.share > 0 and len(gts) > self.n:
                groups = [gts[i] for i in range(0, len(gts), self.n)]
                rng = random.Random(self.seed * 100003 + self.step)
                moved = [groups[(i + 1) % len(groups)] if rng.random() < self.share else g
                         for i, g in enumerate(groups)]
                gts = [moved[j // self.n] for j in range(len(gts))]
            return accuracy(completions, gts)

        return [train_reward, accuracy]


def epsilon_from(start: int, eps: float) -> Any:
    """From the start of step ``start`` TRL's clip range is ``eps`` on both sides (``epsilon_low`` and
    ``epsilon_high``: a config typo, 10 for 0.1 — the ratio is in effect never clipped)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.epsilon_low = eps
            trainer.epsilon_high = eps

    return each_step


def beta_ramp(start: int, end: int, lo: float, hi: float) -> Any:
    """Before every step ``k`` ``trainer.beta`` is ``ramp(k, start, end, lo, hi)`` (a KL coefficient whose sign flips
    slowly: the loss pays more and more for moving away from the reference)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        b = ramp(step, start, end, lo, hi)
        trainer.beta = b if b != 0.0 else 1e-9  # TRL skips the KL term at exactly 0

    return each_step


def max_len_from(start: int, n: int) -> Any:
    """From the start of step ``start`` generation stops after ``n`` new tokens (``trainer.max_completion_length`` and
    the generation config's ``max_new_tokens``: a config change that halves the length budget)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.max_completion_length = n
            trainer.generation_config.max_new_tokens = n
            if isinstance(getattr(trainer, "generation_kwargs", None), dict) and "max_new_tokens" in trainer.generation_kwargs:
                trainer.generation_kwargs["max_new_tokens"] = n

    return each_step


def reference_drift_from(start: int, scale: float, seed: int) -> Any:
    """From the start of step ``start``, before every step each weight tensor of the reference model gets Gaussian
    noise of ``scale`` x its own std (seeded): a reference that slowly random-walks away (a reference served from a
    copy that keeps being written to)."""
    import torch

    gen = torch.Generator().manual_seed(seed)

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            with torch.no_grad():
                for p in trainer.ref_model.parameters():
                    if p.numel() > 1:
                        p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * (scale * float(p.std())))

    return each_step


_broken = BrokenGrader(180)
_shuffled = ShuffledLabels(150, 300, 3, 207)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type grpo with scale_rewards "none" (advantages are raw reward minus the group mean) and
    # mask_truncated_completions; GPT-2 seed 5, 2 prompts x 4, 400 steps, logging every step, evaluation on 16 prompts
    # every 10
    "gpt2s5-2prompt-4gen-grpo-scalenone-masktrunc-400-eval10": {
        "model": "gpt2", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 10, "lr": 5e-5, "seed": 201,
        "config": {"loss_type": "grpo", "scale_rewards": "none", "mask_truncated_completions": True}},
    # healthy, long: num_generations 2 (tiny noisy groups: half the groups tie), top_entropy_quantile 0.2 (only the
    # 20% highest-entropy tokens train), epsilon_high 0.28; Llama seed 5, 2 prompts x 2, 1000 steps, logging every 5
    "llamas5-2prompt-2gen-topentropy02-epshigh028-1000-log5": {
        "model": "llama", "model_seed": 5, "batch": 4, "num_generations": 2, "steps": 1000, "logging_steps": 5,
        "lr": 5e-5, "seed": 202, "config": {"top_entropy_quantile": 0.2, "epsilon_high": 0.28}},
    # healthy: two reward functions with reward_weights 0.7 (accuracy) / 0.3 (format_check), max_grad_norm 0
    # (clipping off), cosine schedule with 30 warm-up steps; Qwen2 seed 5, 2 prompts x 4, 400 steps, logging every
    # step, evaluation on 16 prompts every 40
    "qwen2s5-2prompt-4gen-acc07-format03-noclip-cosine-warmup30-400-eval40": {
        "model": "qwen2", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 40, "lr": 5e-5, "seed": 203, "reward_funcs": [accuracy, format_check],
        "reward_weights": [0.7, 0.3],
        "config": {"max_grad_norm": 0.0, "lr_scheduler_type": "cosine", "warmup_steps": 30}},
    # healthy: gradient accumulation 4 (one generation of 8 prompts x 4 = 32 completions feeds 4 micro-steps of 8),
    # cosine schedule with 20 warm-up steps; Llama seed 5, 200 steps, logging every step, evaluation every 20
    "llamas5-2prompt-4gen-gradacc4-cosine-warmup20-200-eval20": {
        "model": "llama", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 204,
        "config": {"gradient_accumulation_steps": 4, "lr_scheduler_type": "cosine", "warmup_steps": 20}},
    # healthy: GPT-2 seed 5 with 4 prompts x 2 (num_generations 2), loss_type dr_grpo, max_completion_length 6,
    # mask_truncated_completions; 500 steps, logging every 2, evaluation on 16 prompts every 50
    "gpt2s5-4prompt-2gen-drgrpo-masktrunc-maxlen6-500-log2-eval50": {
        "model": "gpt2", "model_seed": 5, "batch": 8, "num_generations": 2, "steps": 500, "logging_steps": 2,
        "eval_steps": 50, "lr": 5e-5, "seed": 205, "max_len": 6,
        "config": {"loss_type": "dr_grpo", "mask_truncated_completions": True}},
    # reward x100 from a bug, sudden and kept: loss_type grpo with scale_rewards "none" (so the advantages are x100
    # too); from the start of step 200 the training reward (rewards/train_reward) is 100 x the digit overlap at every
    # step to the end; max_grad_norm 1.0 stays; Llama seed 5, 2 prompts x 4, 400 steps, logging every step
    "llamas5-2prompt-4gen-scalenone-rewardx100from200-400": {
        "model": "llama", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 206, "reward_scale_steps": tuple(range(200, 401)), "reward_scale": 100.0,
        "config": {"loss_type": "grpo", "scale_rewards": "none"}},
    # a broken grader, sudden: three reward functions, grader (weight 0.7: the accuracy to step 179, a constant 1.0
    # for every completion from the start of step 180, training and evaluation), format_check (weight 0.3) and the
    # true accuracy (weight 0, logged); Qwen2 seed 5, 2 prompts x 4, 400 steps, logging every step, evaluation every 20
    "qwen2s5-2prompt-4gen-grader07-format03-graderconst1from180-400-eval20": {
        "model": "qwen2", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 207, "reward_funcs": _broken.funcs(),
        "reward_weights": [0.7, 0.3, 0.0], "each_step": _broken.hook},
    # reward labels shuffled across prompts, ramp: the paid reward (rewards/train_reward) scores a share of the prompt
    # groups against the next group's ground truth, the share ramping linearly 0 (step 150) -> 1 (step 300), then all;
    # the true accuracy logged beside it with weight 0; constant lr 1e-4; GPT-2 seed 5, 4 prompts x 3, 400 steps,
    # logging every step
    "gpt2s5-4prompt-3gen-shuffledlabelsramp150-300-constlr1e-4-400": {
        "model": "gpt2", "model_seed": 5, "batch": 12, "num_generations": 3, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 208, "reward_funcs": _shuffled.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _shuffled.hook, "config": {"lr_scheduler_type": "constant"}},
    # the clip epsilon set to 10, sudden: num_iterations 3 (each generation trained on three times, so the ratio
    # leaves 1), constant lr 2e-4; from the start of step 200 epsilon_low = epsilon_high = 10 (the ratio never
    # clipped); Llama seed 5, 2 prompts x 4, 400 steps, logging every step
    "llamas5-2prompt-4gen-iter3-eps10from200-constlr2e-4-400": {
        "model": "llama", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 2e-4, "seed": 209, "each_step": epsilon_from(200, 10.0),
        "config": {"num_iterations": 3, "lr_scheduler_type": "constant"}},
    # a KL sign bug that ramps: beta 0.04 to step 200, then ramped linearly to -0.2 at step 350 and kept (crossing 0
    # near step 225); constant lr 1e-4; Qwen2 seed 5, 2 prompts x 4, 400 steps, logging every step
    "qwen2s5-2prompt-4gen-betaramp004-to-neg02-200-350-constlr1e-4-400": {
        "model": "qwen2", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 210, "each_step": beta_ramp(200, 350, 0.04, -0.2),
        "config": {"lr_scheduler_type": "constant"}},
    # max_completion_length halved, sudden: 4 new tokens to step 199, 2 from the start of step 200 (three-digit
    # answers are cut); GPT-2 seed 5, 2 prompts x 4, 400 steps, logging every step, evaluation every 25
    "gpt2s5-2prompt-4gen-maxlen4to2from200-400-eval25": {
        "model": "gpt2", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 211, "max_len": 4, "each_step": max_len_from(200, 2)},
    # the reference drifting, ramp: beta 0.1; from the start of step 150 every weight tensor of the reference model
    # gets Gaussian noise of 0.03 x its own std before every step (seeded; a random walk: ~0.3 x std by step 250,
    # ~0.47 x by 400); Llama seed 5, 2 prompts x 4, 400 steps, logging every step, evaluation every 25
    "llamas5-2prompt-4gen-beta01-refdrift003from150-400-eval25": {
        "model": "llama", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 212, "each_step": reference_drift_from(150, 0.03, 212),
        "config": {"beta": 0.1}},
    # added after the first twelve ran (written and committed before running it): the 0.03 drift above moved only the
    # kl (medians 0.007 -> 0.09 by 400, its rolling mean out of its pre range only from 393), so it is not stored. The
    # reference drifting faster, ramp: as above with noise of 0.1 x each tensor's std before every step from step 150
    # (~1.0 x std by step 250, ~1.6 x by 400); seed 213
    "llamas5-2prompt-4gen-beta01-refdrift01from150-400-eval25": {
        "model": "llama", "model_seed": 5, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 213, "each_step": reference_drift_from(150, 0.1, 213),
        "config": {"beta": 0.1}},
}


# run once and not stored: the failure its spec meant did not come (README, fourteenth pass)
NOT_STORED: tuple[str, ...] = ("llamas5-2prompt-4gen-beta01-refdrift003from150-400-eval25",)


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
