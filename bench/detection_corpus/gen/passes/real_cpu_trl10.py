"""Fifteenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings10``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings9``) has, made as a held-out
source (nothing was tuned on it, no detector ran on it).

Settings: batch shapes 3 prompts x 3, 1 prompt x 12 and 6 prompts x 2; 700-1000 steps logging every 3 or 10,
evaluation every 15; ``importance_sampling_level="sequence"`` (GSPO); ``delta`` (two-sided clipping) under
``num_iterations=2``; ``sync_ref_model`` with a small ``ref_model_sync_steps``; ``beta`` 0; ``scale_rewards="batch"``;
``max_completion_length`` 16 / 24; temperature 0.7 / 1.2; a warm-up + linear decay schedule; models built from
**model seed 6**; seeds 321-340.

Failure mechanisms, each starting slowly or late (how, from which step, sudden or ramp: written in each spec and
committed before the run): **a bonus for the digit '0' whose weight grows with the step** (learned hacking);
**prompts drifting to harder ones** (3-digit operands replacing 2-digit ones, a share ramping 0 -> 1); **beta
decaying 0.04 -> 0 over 200 steps** under a higher constant lr; **max_grad_norm removed with the lr rising** (a ramp
1x -> 40x); **Adam's second moments zeroed at one step** (a half-restored optimizer state); **the reference re-synced
to the policy at every step** (KL pinned near 0 while the policy drifts); **the reward computed on truncated text**
(the first two characters). Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored
under ``bench/detection_corpus/real/trl_cpu_settings10/<name>/`` and labelled by reading it (README, fifteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl10.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl10.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import accuracy, main
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings10"


class GrowingBonus:
    """The paid reward (``rewards/train_reward``) is the digit overlap plus ``w x min(3, number of '0' in the
    completion) / 3`` with ``w = rate x (step - start)`` from step ``start`` (0 before; a learned reward model whose
    liking for zeros grows as it is retrained on the policy's own outputs: no cap). ``accuracy`` (weight 0) logs the
    true accuracy beside it."""

    def __init__(self, start: int, rate: float) -> None:
        self.start, self.rate, self.w = start, rate, 0.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.w = max(0.0, self.rate * (step - self.start))

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) + self.w * min(3, c.count("0")) / 3
                    for c, g in zip(completions, ground_truth)]

        return [train_reward, accuracy]


class TruncatedReward:
    """The paid reward (``rewards/train_reward``) scores only the first ``keep`` characters of each completion from
    step ``start`` (a decoding bug that cuts the text before the grader: the third answer digit is never paid);
    ``accuracy`` (weight 0) logs the true accuracy of the whole text beside it."""

    def __init__(self, start: int, keep: int) -> None:
        self.start, self.keep, self.on = start, keep, False

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.on = step >= self.start

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c.strip()[: self.keep] if self.on else c, g)
                    for c, g in zip(completions, ground_truth)]

        return [train_reward, accuracy]


class HarderPrompts:
    """Prompts drifting to harder ones: every training row also carries a 3-digit problem (``hard_prompt``,
    ``hard_ground_truth``, four-digit answers); a dataset transform serves the hard problem instead of the 2-digit
    one for a share of the rows ramping linearly 0 (step ``start``) -> 1 (step ``end``), then all (a data mix that
    shifts as a curriculum pipeline moves to a new shard). Which rows: seeded by the row and the step. The
    dataloader fetches one batch ahead, so a step's batch follows the share set at the step before. Evaluation keeps
    the 2-digit validation set."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out = {"prompt": [], "ground_truth": []}
        for i, (p, g, hp, hg) in enumerate(zip(batch["prompt"], batch["ground_truth"], batch["hard_prompt"],
                                               batch["hard_ground_truth"])):
            rng = random.Random(hash((self.seed, self.step, p, i)))
            hard = self.share > 0 and rng.random() < self.share
            out["prompt"].append(hp if hard else p)
            out["ground_truth"].append(hg if hard else g)
        return out

    def dataset(self, n: int) -> Any:
        from datasets import Dataset

        from rlcockpit.trainer.config import BuiltinDataConfig
        from rlcockpit.trainer.data import arith_rows

        rng = random.Random(self.seed)
        easy, _ = arith_rows(BuiltinDataConfig())
        hard, _ = arith_rows(BuiltinDataConfig(digits=3))
        rng.shuffle(easy)
        rng.shuffle(hard)
        ds = Dataset.from_dict({
            "prompt": [r["prompt"][0]["content"] for r in easy[:n]],
            "ground_truth": [r["reward_model"]["ground_truth"] for r in easy[:n]],
            "hard_prompt": [r["prompt"][0]["content"] for r in hard[:n]],
            "hard_ground_truth": [r["reward_model"]["ground_truth"] for r in hard[:n]]})
        ds.set_transform(self.transform, output_all_columns=False)
        return ds


def beta_ramp(start: int, end: int, lo: float, hi: float) -> Any:
    """Before every step ``k`` ``trainer.beta`` is ``ramp(k, start, end, lo, hi)`` (a KL coefficient decayed by a
    schedule meant for another run; exactly 0 replaced by 1e-9 so TRL keeps computing and logging the kl)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        b = ramp(step, start, end, lo, hi)
        trainer.beta = b if b != 0.0 else 1e-9

    return each_step


def noclip_lr_ramp(start: int, end: int, factor: float) -> Any:
    """From the start of step ``start`` gradient clipping is off (``args.max_grad_norm`` 1e9: Trainer reads it every
    step, the grad norm is still logged) and the learning rate (constant schedule) is ``ramp(k, start, end, 1,
    factor)`` x its base before every step ``k`` (the optimizer's lr and the scheduler's base lr)."""
    base: list[float] = []

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        opt, sched = kw["optimizer"], kw["lr_scheduler"]
        if not base:
            base.extend(g["lr"] for g in opt.param_groups)
        if step >= start:
            args.max_grad_norm = 1e9
        f = ramp(step, start, end, 1.0, factor)
        for g, b in zip(opt.param_groups, base):
            g["lr"] = b * f
        sched.base_lrs = [b * f for b in base]

    return each_step


def second_moments_zeroed_at(at: int) -> Any:
    """At the start of step ``at`` every Adam ``exp_avg_sq`` is zeroed (the first moments and the step count kept: a
    resume that restored only half the optimizer state): the next updates divide by a near-zero second moment."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            for st in kw["optimizer"].state.values():
                if "exp_avg_sq" in st:
                    st["exp_avg_sq"].zero_()

    return each_step


def ref_resync_from(start: int) -> Any:
    """From the start of step ``start`` the reference model's weights are copied from the policy before every step
    (a ``ref_model_sync_steps`` of 1 with mixup alpha 1: the KL penalty measures one step's move only)."""
    import torch

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            with torch.no_grad():
                for r, p in zip(trainer.ref_model.parameters(), trainer.model.parameters()):
                    r.copy_(p)

    return each_step


def eos_suppressed_from(start: int) -> Any:
    """From the start of step ``start`` the generation config's ``suppress_tokens`` holds the stop token's id (a
    logits processor sets its logit to -inf while sampling; the training pass scores the completions as before):
    completions run to ``max_completion_length``."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.generation_config.suppress_tokens = [int(t) for t in trainer.eos_token_ids] if isinstance(
                trainer.eos_token_ids, (list, tuple)) else [int(trainer.eos_token_ids)]

    return each_step


_bonus = GrowingBonus(150, 0.004)
_trunc = TruncatedReward(200, 2)
_harder = HarderPrompts(150, 350, 332)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: GSPO (importance_sampling_level "sequence"), temperature 0.7; GPT-2 seed 6, 3 prompts x 3, 700 steps,
    # logging every 3, evaluation on 16 prompts every 15
    "gpt2s6-3prompt-3gen-gspo-temp07-700-log3-eval15": {
        "model": "gpt2", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 700, "logging_steps": 3,
        "eval_steps": 15, "lr": 5e-5, "seed": 321,
        "config": {"importance_sampling_level": "sequence", "temperature": 0.7}},
    # healthy: beta 0, two-sided clipping delta 1.5 under num_iterations 2 (each generation trained on twice),
    # max_completion_length 16; Llama seed 6, 1 prompt x 12, 800 steps, logging every 10
    "llamas6-1prompt-12gen-beta0-delta15-iter2-maxlen16-800-log10": {
        "model": "llama", "model_seed": 6, "batch": 12, "num_generations": 12, "steps": 800, "logging_steps": 10,
        "lr": 5e-5, "seed": 322, "max_len": 16,
        "config": {"beta": 0.0, "delta": 1.5, "num_iterations": 2}},
    # healthy: sync_ref_model every 10 steps (mixup alpha 0.6), 70 warm-up steps then linear decay, temperature 1.2,
    # max_completion_length 16; Qwen2 seed 6, 6 prompts x 2, 700 steps, logging every 3, evaluation every 15
    "qwen2s6-6prompt-2gen-syncref10-warmup70-temp12-maxlen16-700-log3-eval15": {
        "model": "qwen2", "model_seed": 6, "batch": 12, "num_generations": 2, "steps": 700, "logging_steps": 3,
        "eval_steps": 15, "lr": 5e-5, "seed": 323, "max_len": 16,
        "config": {"sync_ref_model": True, "ref_model_sync_steps": 10, "ref_model_mixup_alpha": 0.6,
                   "warmup_steps": 70, "lr_scheduler_type": "linear", "temperature": 1.2}},
    # healthy, long: loss_type sapo with scale_rewards "batch", max_completion_length 24; GPT-2 seed 6, 3 prompts x 3,
    # 1000 steps, logging every 10
    "gpt2s6-3prompt-3gen-sapo-scalebatch-maxlen24-1000-log10": {
        "model": "gpt2", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 1000, "logging_steps": 10,
        "lr": 5e-5, "seed": 324, "max_len": 24, "config": {"loss_type": "sapo", "scale_rewards": "batch"}},
    # healthy: GSPO with delta 1.5 under num_iterations 2, beta 0, 50 warm-up steps then linear decay; Llama seed 6,
    # 6 prompts x 2, 700 steps, logging every 3, evaluation every 15
    "llamas6-6prompt-2gen-gspo-delta15-iter2-beta0-warmup50-700-log3-eval15": {
        "model": "llama", "model_seed": 6, "batch": 12, "num_generations": 2, "steps": 700, "logging_steps": 3,
        "eval_steps": 15, "lr": 5e-5, "seed": 325,
        "config": {"importance_sampling_level": "sequence", "delta": 1.5, "num_iterations": 2, "beta": 0.0,
                   "warmup_steps": 50, "lr_scheduler_type": "linear"}},
    # healthy: loss_type cispo with sync_ref_model every 5 steps (alpha 0.9), temperature 0.7; Qwen2 seed 6,
    # 3 prompts x 3, 800 steps, logging every 10
    "qwen2s6-3prompt-3gen-cispo-syncref5-temp07-800-log10": {
        "model": "qwen2", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 800, "logging_steps": 10,
        "lr": 5e-5, "seed": 326,
        "config": {"loss_type": "cispo", "sync_ref_model": True, "ref_model_sync_steps": 5,
                   "ref_model_mixup_alpha": 0.9, "temperature": 0.7}},
    # learned hacking, ramp: from step 150 the paid reward (rewards/train_reward) = digit overlap + w x min(3, '0'
    # count) / 3 with w = 0.004 x (step - 150) (1.0 at step 400, no cap); the true accuracy logged with weight 0;
    # GPT-2 seed 6, 3 prompts x 3, 500 steps, logging every step
    "gpt2s6-3prompt-3gen-zerobonusgrows004from150-500": {
        "model": "gpt2", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 331, "reward_funcs": _bonus.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _bonus.hook},
    # prompts drifting to harder ones, ramp: a share of the training rows ramping 0 (step 150) -> 1 (step 350) serve a
    # 3-digit problem (four-digit answer) instead of the 2-digit one; evaluation stays on 2-digit problems; Llama
    # seed 6, 3 prompts x 3, 450 steps, logging every step, evaluation every 15
    "llamas6-3prompt-3gen-harderpromptsramp150-350-450-eval15": {
        "model": "llama", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 450, "logging_steps": 1,
        "eval_steps": 15, "lr": 5e-5, "seed": 332, "train_dataset": _harder.dataset, "each_step": _harder.hook},
    # the KL coefficient decaying, ramp: constant lr 2e-4; beta 0.04 to step 200, ramped linearly to 0 at step 400
    # and kept; Qwen2 seed 6, 6 prompts x 2, 550 steps, logging every step
    "qwen2s6-6prompt-2gen-betadecay004to0-200-400-constlr2e-4-550": {
        "model": "qwen2", "model_seed": 6, "batch": 12, "num_generations": 2, "steps": 550, "logging_steps": 1,
        "lr": 2e-4, "seed": 333, "each_step": beta_ramp(200, 400, 0.04, 0.0),
        "config": {"lr_scheduler_type": "constant"}},
    # clipping removed with the lr rising, ramp: constant lr 5e-5; from the start of step 200 max_grad_norm 1e9 and
    # the lr ramped linearly 1x (step 200) -> 40x (step 400) and kept; GPT-2 seed 6, 1 prompt x 12, 500 steps,
    # logging every step
    "gpt2s6-1prompt-12gen-noclip-lrramp1-40x-200-400-500": {
        "model": "gpt2", "model_seed": 6, "batch": 12, "num_generations": 12, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 334, "each_step": noclip_lr_ramp(200, 400, 40.0),
        "config": {"lr_scheduler_type": "constant"}},
    # Adam's second moments zeroed, sudden: constant lr 1e-4; at the start of step 250 every exp_avg_sq is zeroed
    # (first moments and step count kept); Llama seed 6, 3 prompts x 3, 450 steps, logging every step
    "llamas6-3prompt-3gen-adamvzeroedat250-constlr1e-4-450": {
        "model": "llama", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 450, "logging_steps": 1,
        "lr": 1e-4, "seed": 335, "each_step": second_moments_zeroed_at(250),
        "config": {"lr_scheduler_type": "constant"}},
    # the reference re-synced to the policy at every step from step 200 (sudden in the kl, a drift after): beta 0.2,
    # constant lr 2e-4; Qwen2 seed 6, 3 prompts x 3, 500 steps, logging every step, evaluation every 15
    "qwen2s6-3prompt-3gen-beta02-refresyncevery1from200-constlr2e-4-500-eval15": {
        "model": "qwen2", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 500, "logging_steps": 1,
        "eval_steps": 15, "lr": 2e-4, "seed": 336, "each_step": ref_resync_from(200),
        "config": {"beta": 0.2, "lr_scheduler_type": "constant"}},
    # the reward computed on truncated text, sudden: from the start of step 200 the paid reward scores only the first
    # two characters of each completion (the third digit never paid); the true accuracy logged with weight 0; GPT-2
    # seed 6, 6 prompts x 2, 500 steps, logging every step
    "gpt2s6-6prompt-2gen-rewardontruncated2from200-500": {
        "model": "gpt2", "model_seed": 6, "batch": 12, "num_generations": 2, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 337, "reward_funcs": _trunc.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _trunc.hook},
    # added after the first thirteen ran (written and committed before running it): the truncated-reward run above
    # showed nothing a user could act on within 300 steps (paid reward medians 0.389 -> 0.361, accuracy flat), so it
    # is not stored. The stop token suppressed, sudden: from the start of step 250 the generation config's
    # suppress_tokens holds the EOS id (its logit -inf in generation only; scoring unchanged), max_completion_length
    # 24; Llama seed 6, 3 prompts x 3, 450 steps, logging every step
    "llamas6-3prompt-3gen-eossuppressedfrom250-maxlen24-450": {
        "model": "llama", "model_seed": 6, "batch": 9, "num_generations": 3, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 338, "max_len": 24, "each_step": eos_suppressed_from(250)},
}


# run once and not stored: the failure its spec meant did not come (README, fifteenth pass)
NOT_STORED: tuple[str, ...] = ("gpt2s6-6prompt-2gen-rewardontruncated2from200-500",)


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
