"""Seventeenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings12``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings11``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: batch shapes 4 prompts x 3 and 1 prompt x 10; ``loss_type="sapo"`` with ``scale_rewards="batch"`` and
evaluation every 25; ``loss_type="vespo"`` on one prompt of ten at lr 3e-4; ``loss_type="cispo"`` with
``scale_rewards=False``, ``epsilon_high=0.28`` and ``mask_truncated_completions``; ``loss_type="luspo"`` (sequence-level
importance sampling) with ``scale_rewards="group"`` written out; logging every 1 / 3 / 7; lr 3e-5 .. 3e-4; models built
from **model seed 8**; seeds 521-540.

Failure mechanisms, each starting slowly or late (how, from which step, sudden or ramp: written in each spec and
committed before the run): **a reward clipped to a shrinking range** (the clip's upper bound 1 -> 0.1); **a reward
that pays repetition from step k** (a hackable "fluency" bonus for repeated characters switched on); **the reference
model's weights corrupted by noise once**; **a resume that drops the optimizer state and multiplies the lr by 10**;
**prompts truncated from the left by a growing number of characters** (a collator cutting prompts progressively).
Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings12/<name>/`` and labelled by reading it (README, seventeenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl12.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl12.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings12"


class ShrinkingClip:
    """The paid reward (``rewards/clipped_reward``) is the digit overlap clipped to ``[0, hi_k]`` where the upper
    bound ``hi_k = ramp(k, start, end, 1.0, lo)`` shrinks linearly from 1 (step ``start``) to ``lo`` (step ``end``),
    then kept (a reward-clipping bound read from a schedule meant for something else). ``accuracy`` (weight 0) logs
    the true accuracy beside it."""

    def __init__(self, start: int, end: int, lo: float) -> None:
        self.start, self.end, self.lo, self.hi = start, end, lo, 1.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.hi = ramp(step, self.start, self.end, 1.0, self.lo)

    def funcs(self) -> list[Any]:
        def clipped_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [min(self.hi, digit_overlap("arith", c, g)) for c, g in zip(completions, ground_truth)]

        return [clipped_reward, accuracy]


def repeats(c: str) -> float:
    """The share of a completion's adjacent character pairs that are the same character (0 for under two)."""
    c = c.strip()
    return sum(a == b for a, b in zip(c, c[1:])) / (len(c) - 1) if len(c) > 1 else 0.0


class RepetitionBonus:
    """The paid reward (``rewards/train_reward``) is the digit overlap, plus from step ``start`` a "fluency" bonus of
    ``weight`` x the share of repeated adjacent characters (a bonus meant for another task switched on by a config
    merge: hackable, a completion like '777777' scores it in full). ``accuracy`` (weight 0) logs the accuracy."""

    def __init__(self, start: int, weight: float) -> None:
        self.start, self.weight, self.on = start, weight, False

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.on = step >= self.start

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) + (self.weight * repeats(c) if self.on else 0.0)
                    for c, g in zip(completions, ground_truth)]

        return [train_reward, accuracy]


def ref_noise_once(at: int, std: float, seed: int) -> Any:
    """At the start of step ``at`` seeded Gaussian noise of std ``std`` is added once to every weight of the
    reference model (``trainer.ref_model``: a reference checkpoint reloaded from a corrupted shard); the policy is
    untouched."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            g = torch.Generator().manual_seed(seed)
            with torch.no_grad():
                for p in trainer.ref_model.parameters():
                    p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * std)

    return each_step


def bad_resume(at: int, factor: float) -> Any:
    """At the start of step ``at`` a resume that lost the optimizer state (Adam's moments and step counts cleared,
    as a resume from a model-only checkpoint does) and restored the lr ``factor`` times too high (the optimizer's lr
    and the scheduler's base lr multiplied by ``factor``, kept)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            opt, sched = kw["optimizer"], kw["lr_scheduler"]
            opt.state.clear()
            sched.base_lrs = [b * factor for b in sched.base_lrs]
            for g in opt.param_groups:
                g["lr"] *= factor

    return each_step


class LeftTruncatedPrompts:
    """A collator that cuts prompts progressively: from step ``start`` every training prompt loses its first ``n``
    characters, ``n = round(ramp(k, start, end, 0, hi))`` (one more about every ``(end - start) / hi`` steps, then
    ``hi``): '48+75=' -> '8+75=' -> '+75=' -> '75=' (a left-truncation length read from a budget that shrinks).
    The dataloader fetches one batch ahead, so a step's batch follows the count set at the step before. Evaluation
    keeps the full prompts."""

    def __init__(self, start: int, end: int, hi: int, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.n = start, end, hi, seed, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.n = int(round(ramp(step, self.start, self.end, 0.0, float(self.hi))))

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {"prompt": [p[self.n:] for p in batch["prompt"]], "ground_truth": list(batch["ground_truth"])}

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


class EvalLeak:
    """Evaluation prompts leaking into training: from step ``start`` a dataset transform swaps a share of the training
    rows, ramping linearly 0 (step ``start``) -> 1 (step ``end``), then all, for rows of the 16-prompt evaluation set
    (the first 16 test rows, as :func:`real_cpu_trl.run` builds it: a split written with the eval file on the train
    list). Which rows and which eval prompt: seeded by the row, the step and ``seed``. The dataloader fetches one
    batch ahead, so a step's batch follows the share set at the step before."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0
        self.leak: list[tuple[str, str]] = []

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for i, (p, g) in enumerate(zip(batch["prompt"], batch["ground_truth"])):
            r = random.Random(f"{self.seed}/{self.step}/{i}/{p}")
            if self.share > 0 and r.random() < self.share:
                p, g = self.leak[r.randrange(len(self.leak))]
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, test = arith_training_rows(self.seed)
        self.leak = [(r["prompt"][0]["content"], r["reward_model"]["ground_truth"]) for r in test[:16]]
        return prompt_dataset(rows[:n], self.transform)


_clip = ShrinkingClip(120, 270, 0.1)
_rep = RepetitionBonus(120, 1.0)
_trunc = LeftTruncatedPrompts(120, 270, 4, 535)
_leak = EvalLeak(120, 220, 536)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type sapo with scale_rewards "batch"; GPT-2 seed 8, 4 prompts x 3, 350 steps, lr 3e-5, logging
    # every 7, evaluation on 16 prompts every 25
    "gpt2s8-4prompt-3gen-sapo-scalebatch-lr3e-5-350-log7-eval25": {
        "model": "gpt2", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 350, "logging_steps": 7,
        "eval_steps": 25, "lr": 3e-5, "seed": 521, "config": {"loss_type": "sapo", "scale_rewards": "batch"}},
    # healthy: loss_type vespo on one prompt of ten completions at lr 3e-4; Llama seed 8, 1 prompt x 10, 300 steps,
    # logging every step
    "llamas8-1prompt-10gen-vespo-lr3e-4-300-log1": {
        "model": "llama", "model_seed": 8, "batch": 10, "num_generations": 10, "steps": 300, "logging_steps": 1,
        "lr": 3e-4, "seed": 522, "config": {"loss_type": "vespo"}},
    # healthy: loss_type cispo, scale_rewards False, epsilon_high 0.28, mask_truncated_completions; GPT-2 seed 8,
    # 1 prompt x 10, 300 steps, lr 1e-4, logging every 3, evaluation every 25
    "gpt2s8-1prompt-10gen-cispo-noscale-epshigh028-masktrunc-lr1e-4-300-log3-eval25": {
        "model": "gpt2", "model_seed": 8, "batch": 10, "num_generations": 10, "steps": 300, "logging_steps": 3,
        "eval_steps": 25, "lr": 1e-4, "seed": 523,
        "config": {"loss_type": "cispo", "scale_rewards": False, "epsilon_high": 0.28,
                   "mask_truncated_completions": True}},
    # healthy: loss_type luspo (sequence-level importance sampling) with scale_rewards "group" written out; Llama
    # seed 8, 4 prompts x 3, 300 steps, lr 5e-5, logging every 7
    "llamas8-4prompt-3gen-luspo-seqis-scalegroup-300-log7": {
        "model": "llama", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 300, "logging_steps": 7,
        "lr": 5e-5, "seed": 524,
        "config": {"loss_type": "luspo", "importance_sampling_level": "sequence", "scale_rewards": "group"}},
    # a reward clipped to a shrinking range, ramp: the paid reward's upper bound 1.0 to step 120, ramped linearly to
    # 0.1 at step 270 and kept; the true accuracy logged with weight 0; GPT-2 seed 8, 4 prompts x 3, 350 steps,
    # logging every step
    "gpt2s8-4prompt-3gen-rewardclipshrinks1-01-120-270-350": {
        "model": "gpt2", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 531, "reward_funcs": _clip.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _clip.hook},
    # a reward that pays repetition, sudden cause (the hack has to be learned): from step 120 the paid reward adds
    # 1.0 x the share of repeated adjacent characters; the true accuracy logged with weight 0; Llama seed 8,
    # 1 prompt x 10, 350 steps, lr 1e-4, logging every step
    "llamas8-1prompt-10gen-repetitionbonus-from120-lr1e-4-350": {
        "model": "llama", "model_seed": 8, "batch": 10, "num_generations": 10, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 532, "reward_funcs": _rep.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _rep.hook},
    # the reference model's weights corrupted by noise once, sudden: at the start of step 150 Gaussian noise of std
    # 0.05 added to every reference-model weight (beta 0.04); GPT-2 seed 8, 4 prompts x 3, 300 steps, logging every
    # step, evaluation every 25
    "gpt2s8-4prompt-3gen-refmodelnoise005-at150-300-eval25": {
        "model": "gpt2", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 300, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 533, "each_step": ref_noise_once(150, 0.05, 533)},
    # a bad resume, sudden: at the start of step 150 the optimizer state is cleared and the lr multiplied by 10
    # (5e-5 -> 5e-4, constant schedule); Llama seed 8, 4 prompts x 3, 300 steps, logging every step
    "llamas8-4prompt-3gen-resumeoptstatelost-lrx10-at150-constlr-300": {
        "model": "llama", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 534, "each_step": bad_resume(150, 10.0), "config": {"lr_scheduler_type": "constant"}},
    # prompts truncated from the left, ramp: from step 120 every training prompt loses its first n characters,
    # n = round(ramp(k, 120, 270, 0, 4)) (4 from step 270: '48+75=' -> '75='); evaluation keeps the full prompts;
    # GPT-2 seed 8, 4 prompts x 3, 350 steps, logging every step, evaluation every 25
    "gpt2s8-4prompt-3gen-prompttruncleft0-4-120-270-350-eval25": {
        "model": "gpt2", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 535, "train_dataset": _trunc.dataset, "each_step": _trunc.hook},
    # added after the first nine were started (written and committed before running it): evaluation prompts leaking
    # into training, ramp: from step 120 a share of the training rows ramping 0 -> 1 (step 220), then all, replaced by
    # rows of the 16-prompt evaluation set; GPT-2 seed 8, 4 prompts x 3, 350 steps, lr 2e-4 (constant), logging every
    # step, evaluation every 25
    "gpt2s8-4prompt-3gen-evalleakramp0-1-120-220-constlr2e-4-350-eval25": {
        "model": "gpt2", "model_seed": 8, "batch": 12, "num_generations": 3, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 2e-4, "seed": 536, "train_dataset": _leak.dataset, "each_step": _leak.hook,
        "config": {"lr_scheduler_type": "constant"}},
}


# run once and not stored: the failure its spec meant did not come (README, seventeenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
