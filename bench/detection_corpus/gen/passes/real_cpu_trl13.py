"""Eighteenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings13``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings12``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: ``loss_type="grpo"`` with ``num_iterations=3``, a narrow clip ``epsilon=0.1`` / ``epsilon_high=0.2`` and
``beta=0.02``; ``loss_type="dapo"`` with a constant positive entropy bonus (``entropy_coef=0.005``) and
``top_entropy_quantile=0.5``; ``loss_type="sapo"`` with its own temperatures (``sapo_temperature_neg=2.0``,
``sapo_temperature_pos=0.5``), ``beta=0.1`` and ``sync_ref_model`` (alpha 0.3 every 25); ``loss_type="bnpo"`` with two
weighted rewards (accuracy 0.8, a width check 0.2), a ``cosine_with_min_lr`` schedule with 30 warm-up steps and
sampling temperature 0.9; logging every 1 / 2 / 3 / 4 / 6, evaluation every 20 / 25 / 30; models built from **model
seed 9**; seeds 561-564 (healthy), 570-580 (planned failures).

Failure mechanisms, each starting slowly or late (how, from which step, sudden or ramp: written in each spec and
committed before the run): **a grader that returns None for a growing share of samples** (TRL drops them from the
baseline and the logged reward); **the grader's ground truth re-parsed with ``int()`` from a step** (zero padding
dropped: '052' -> '52'); **a warm-up far too long to a far too high peak** (300 of 350 steps to lr 3e-3);
**a reward normaliser whose divisor drifts** (the paid reward x1 -> x30) under ``scale_rewards="none"``; **the dataset
sorted by difficulty** (carries, then sum) with ``shuffle_dataset=False``; **reward time-outs from a step** (every
reward call waits 0.25 s and 30% of samples score 0); **a format check that pays a leading zero** from a step;
**``ref_model_mixup_alpha`` flipped to -0.5** under ``sync_ref_model`` (each sync pushes the reference away from
the policy); **``max_grad_norm`` set to 1e-3** from a step (a config typo: updates all but stop). Added after
the first thirteen ran (committed before they ran): **a prompt template changed by a resume** ('Q: ' before every
training prompt) and **lr 2e-3 constant from the first step**. Each run goes
through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings13/<name>/`` and labelled by reading it (README, eighteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl13.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl13.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings13"


def width_ok(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
    """A format check: 1.0 when the completion is exactly as many digits as the (zero-padded) answer."""
    return [1.0 if c.strip().isdigit() and len(c.strip()) == len(g) else 0.0 for c, g in zip(completions, ground_truth)]


class NoneShare:
    """The only reward function (``rewards/graded``) is the digit overlap, but from step ``start`` a share of the
    samples, ramping linearly 0 (step ``start``) -> ``hi`` (step ``end``), then kept, comes back ``None`` (a grading
    service that drops answers under load; TRL treats a sample every reward function returned None for as
    unscorable: out of the group baseline and of the logged reward, advantage 0). Which samples: seeded by ``seed``,
    the step and the sample's index."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.share, self.step = start, end, hi, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, self.hi)

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float | None]:
            r = random.Random(f"{self.seed}/{self.step}")
            return [None if r.random() < self.share else digit_overlap("arith", c, g)
                    for c, g in zip(completions, ground_truth)]

        return [graded]


class UnpaddedTruth(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` the grader parses the ground
    truth with ``int()`` before comparing (a grader update: '052' -> '52', zero padding dropped), so for sums under
    100 a correct fixed-width answer scores 0 and a two-digit one scores 1. ``accuracy`` (weight 0) logs the
    fixed-width accuracy beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, str(int(g)) if self.on else g) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


class NormDrift:
    """The paid reward (``rewards/normalized_reward``) is the digit overlap divided by a reward normaliser's running
    scale, which goes stale: the divisor ramps 1 (step ``start``) -> ``1 / hi`` (step ``end``), then kept, so the paid
    reward is x``ramp(k, start, end, 1, hi)`` (under ``scale_rewards="none"`` the advantages scale with it).
    ``accuracy`` (weight 0) logs the accuracy beside it."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.scale = start, end, hi, 1.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.scale = ramp(step, self.start, self.end, 1.0, self.hi)

    def funcs(self) -> list[Any]:
        def normalized_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [self.scale * digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]

        return [normalized_reward, accuracy]


def carries(a: int, b: int) -> int:
    """How many carries the two-digit addition a + b needs (0-2)."""
    return int(a % 10 + b % 10 >= 10) + int(a + b >= 100)


def sorted_by_difficulty(rows_used: int, seed: int) -> Any:
    """The training set as a preprocessing script wrote it: the first ``rows_used`` rows of the seeded shuffle,
    sorted by difficulty (carries, then the sum: easy -> hard); with ``shuffle_dataset=False`` the run meets them in
    that order (a curriculum nobody meant)."""

    def dataset(n: int) -> Any:
        from datasets import Dataset

        from rlcockpit.trainer.config import BuiltinDataConfig
        from rlcockpit.trainer.data import arith_rows

        rows, _ = arith_rows(BuiltinDataConfig())
        random.Random(seed).shuffle(rows)
        rows = sorted(rows[:rows_used], key=lambda r: (carries(r["extra_info"]["a"], r["extra_info"]["b"]),
                                                        r["extra_info"]["a"] + r["extra_info"]["b"]))
        return Dataset.from_dict({"prompt": [r["prompt"][0]["content"] for r in rows],
                                  "ground_truth": [r["reward_model"]["ground_truth"] for r in rows]})

    return dataset


class TimeOuts:
    """The only reward function (``rewards/graded``) is the digit overlap; from step ``start`` the grading service
    times out: every call waits ``wait`` seconds (the client's retry budget) and a share ``share`` of the samples
    (seeded by ``seed``, the step and the index) scores 0 (timed out, caught)."""

    def __init__(self, start: int, wait: float, share: float, seed: int) -> None:
        self.start, self.wait, self.share, self.seed, self.step = start, wait, share, seed, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step = step

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            if self.step < self.start:
                return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            time.sleep(self.wait)
            r = random.Random(f"{self.seed}/{self.step}")
            return [0.0 if r.random() < self.share else digit_overlap("arith", c, g)
                    for c, g in zip(completions, ground_truth)]

        return [graded]


class LeadingZeroBonus:
    """The paid reward (``rewards/train_reward``) is the digit overlap, plus from step ``start`` a format check's
    ``weight`` for a completion that starts with '0' (meant to check zero padding, written as ``startswith("0")``:
    it pays a leading zero whatever the sum; about half the answers are 100 or more). ``accuracy`` (weight 0) logs
    the accuracy."""

    def __init__(self, start: int, weight: float) -> None:
        self.start, self.weight, self.on = start, weight, False

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.on = step >= self.start

    def funcs(self) -> list[Any]:
        def train_reward(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) + (self.weight if self.on and c.strip().startswith("0") else 0.0)
                    for c, g in zip(completions, ground_truth)]

        return [train_reward, accuracy]


def set_arg_at(at: int, name: str, value: Any) -> Any:
    """At the start of step ``at`` the training argument ``name`` is set to ``value`` (read again by the trainer or
    a callback at every step: a config reloaded mid-run with a typo)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            setattr(args, name, value)

    return each_step


_none = NoneShare(120, 270, 0.9, 571)
_unpad = UnpaddedTruth(150)
_norm = NormDrift(150, 300, 30.0)
_timeout = TimeOuts(200, 0.25, 0.3, 576)
_zero = LeadingZeroBonus(120, 0.5)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type grpo with num_iterations 3, a narrow clip (epsilon 0.1, epsilon_high 0.2), beta 0.02; Llama
    # seed 9, 2 prompts x 4, 300 steps, lr 5e-5, logging every 2, evaluation on 16 prompts every 20
    "llamas9-2prompt-4gen-grpo-numiter3-eps01-02-beta002-300-log2-eval20": {
        "model": "llama", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 300, "logging_steps": 2,
        "eval_steps": 20, "lr": 5e-5, "seed": 561,
        "config": {"loss_type": "grpo", "num_iterations": 3, "epsilon": 0.1, "epsilon_high": 0.2, "beta": 0.02}},
    # healthy: loss_type dapo with a constant positive entropy bonus (entropy_coef 0.005) and top_entropy_quantile
    # 0.5; GPT-2 seed 9, 1 prompt x 8, 300 steps, lr 1e-4, logging every 4
    "gpt2s9-1prompt-8gen-dapo-entropybonus0005-topentq05-lr1e-4-300-log4": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 8, "steps": 300, "logging_steps": 4,
        "lr": 1e-4, "seed": 562, "config": {"loss_type": "dapo", "entropy_coef": 0.005, "top_entropy_quantile": 0.5}},
    # healthy: loss_type sapo with its own temperatures (neg 2.0, pos 0.5), beta 0.1 and sync_ref_model (alpha 0.3
    # every 25); GPT-2 seed 9, 2 prompts x 3, 300 steps, lr 5e-5, logging every 6, evaluation every 30
    "gpt2s9-2prompt-3gen-sapo-tneg2-tpos05-beta01-syncref03-25-300-log6-eval30": {
        "model": "gpt2", "model_seed": 9, "batch": 6, "num_generations": 3, "steps": 300, "logging_steps": 6,
        "eval_steps": 30, "lr": 5e-5, "seed": 563,
        "config": {"loss_type": "sapo", "sapo_temperature_neg": 2.0, "sapo_temperature_pos": 0.5, "beta": 0.1,
                   "sync_ref_model": True, "ref_model_mixup_alpha": 0.3, "ref_model_sync_steps": 25}},
    # healthy: loss_type bnpo with two weighted rewards (accuracy 0.8, a width check 0.2), cosine_with_min_lr (min lr
    # 0.1 x) after 30 warm-up steps, sampling temperature 0.9; Llama seed 9, 3 prompts x 3, 300 steps, lr 1e-4,
    # logging every step
    "llamas9-3prompt-3gen-bnpo-2rewards08-02-cosminlr-warm30-temp09-lr1e-4-300": {
        "model": "llama", "model_seed": 9, "batch": 9, "num_generations": 3, "steps": 300, "logging_steps": 1,
        "lr": 1e-4, "seed": 564, "reward_funcs": [accuracy, width_ok], "reward_weights": [0.8, 0.2],
        "config": {"loss_type": "bnpo", "lr_scheduler_type": "cosine_with_min_lr",
                   "lr_scheduler_kwargs": {"min_lr_rate": 0.1}, "warmup_steps": 30, "temperature": 0.9}},
    # a grader returning None for a growing share of samples, ramp: share 0 to step 120, ramped linearly to 0.9 at
    # step 270 and kept (the only reward function; TRL leaves the None samples out); GPT-2 seed 9, 2 prompts x 4,
    # 350 steps, logging every step
    "gpt2s9-2prompt-4gen-rewardnone0-09-120-270-350": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 571, "reward_funcs": _none.funcs(), "each_step": _none.hook},
    # the grader's ground truth re-parsed with int() from step 150, sudden cause with a learned effect ('052' ->
    # '52': zero padding dropped); the fixed-width accuracy logged with weight 0; Llama seed 9, 4 prompts x 3,
    # 350 steps, lr 1e-4, logging every step
    "llamas9-4prompt-3gen-gradertruthunpadded-from150-lr1e-4-350": {
        "model": "llama", "model_seed": 9, "batch": 12, "num_generations": 3, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 572, "reward_funcs": _unpad.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _unpad.hook},
    # a warm-up far too long to a far too high peak, ramp: constant_with_warmup, warmup_steps 300 of 350, lr 3e-3
    # (the lr climbs linearly 0 -> 3e-3 over 300 steps, then stays); GPT-2 seed 9, 2 prompts x 4, 350 steps,
    # logging every step
    "gpt2s9-2prompt-4gen-warmup300of350-peak3e-3-350": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 3e-3, "seed": 573, "config": {"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 300}},
    # a reward normaliser whose divisor drifts, ramp: the paid reward x1 to step 150, ramped linearly to x30 at step
    # 300 and kept; loss_type dr_grpo with scale_rewards "none" (the advantages scale with it); the accuracy logged
    # with weight 0; Llama seed 9, 1 prompt x 8, 350 steps, logging every step
    "llamas9-1prompt-8gen-drgrpo-noscale-rewardnormdrift1-30-150-300-350": {
        "model": "llama", "model_seed": 9, "batch": 8, "num_generations": 8, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 574, "reward_funcs": _norm.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _norm.hook, "config": {"loss_type": "dr_grpo", "scale_rewards": "none"}},
    # the dataset sorted by difficulty (carries, then sum: easy -> hard) with shuffle_dataset False, from the start
    # (700 rows: one pass); evaluation on the usual 16 test prompts every 25; GPT-2 seed 9, 2 prompts x 4, 350 steps,
    # logging every step
    "gpt2s9-2prompt-4gen-sortedbydifficulty-noshuffle-350-eval25": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 575, "train_dataset": sorted_by_difficulty(700, 575),
        "config": {"shuffle_dataset": False}},
    # reward time-outs, sudden: from step 200 every reward call waits 0.25 s and 30% of the samples score 0 (the
    # only reward function); Llama seed 9, 2 prompts x 4, 350 steps, logging every step
    "llamas9-2prompt-4gen-rewardtimeouts025s-30pct-from200-350": {
        "model": "llama", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 576, "reward_funcs": _timeout.funcs(), "each_step": _timeout.hook},
    # a format check that pays a leading zero, sudden cause (the hack has to be learned): from step 120 the paid
    # reward adds 0.5 for a completion starting with '0'; the accuracy logged with weight 0; GPT-2 seed 9, 1 prompt
    # x 8, 350 steps, lr 1e-4, logging every step
    "gpt2s9-1prompt-8gen-leadingzerobonus05-from120-lr1e-4-350": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 8, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 577, "reward_funcs": _zero.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _zero.hook},
    # ref_model_mixup_alpha flipped, compounding: sync_ref_model every 10 steps with alpha 0.6, set to -0.5 from step
    # 150 (each sync then moves the reference away from the policy: ref <- 1.5 ref - 0.5 policy); beta 0.04; Llama
    # seed 9, 2 prompts x 4, 350 steps, logging every step, evaluation every 25
    "llamas9-2prompt-4gen-syncrefalphaneg05-from150-350-eval25": {
        "model": "llama", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 578, "each_step": set_arg_at(150, "ref_model_mixup_alpha", -0.5),
        "config": {"sync_ref_model": True, "ref_model_mixup_alpha": 0.6, "ref_model_sync_steps": 10}},
    # max_grad_norm set to 1e-3 from step 150 (a config typo: updates all but stop; may leave no mark); GPT-2 seed 9,
    # 2 prompts x 4, 300 steps, logging every 3
    "gpt2s9-2prompt-4gen-maxgradnorm1e-3-from150-300-log3": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 300, "logging_steps": 3,
        "lr": 5e-5, "seed": 579, "each_step": set_arg_at(150, "max_grad_norm", 1e-3)},
}


class TemplateChange:
    """A prompt template changed by a resume: from step ``start`` every training prompt is served as ``prefix +
    prompt`` (a dataset transform: '48+75=' -> 'Q: 48+75='; a chat/template setting that differs between the first
    launch and the resumed one). The dataloader fetches one batch ahead, so a step's batch follows the template set at
    the step before. Evaluation keeps the plain prompts."""

    def __init__(self, start: int, prefix: str, seed: int) -> None:
        self.start, self.prefix, self.seed, self.on = start, prefix, seed, False

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.on = step >= self.start

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {"prompt": [self.prefix + p if self.on else p for p in batch["prompt"]],
                "ground_truth": list(batch["ground_truth"])}

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


_template = TemplateChange(150, "Q: ", 580)

# --- added after the first thirteen ran (written and committed before running them): the first runs took 21-112 s,
# so there is time for two more failure specs.
SPECS.update({
    # a prompt template changed by a resume, sudden: from step 150 every training prompt is served as 'Q: ' + prompt
    # (evaluation keeps the plain prompts, every 25); GPT-2 seed 9, 2 prompts x 4, 350 steps, logging every step
    "gpt2s9-2prompt-4gen-templatechangeQ-from150-350-eval25": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 580, "train_dataset": _template.dataset, "each_step": _template.hook},
    # broken from the start: a learning rate copied from a fine-tuning recipe, 2e-3 constant with no warm-up (40 x the
    # corpus's usual 5e-5); GPT-2 seed 9, 2 prompts x 4, 300 steps, logging every step (read against the same
    # model and batch shape at 5e-5: gpt2s9-2prompt-4gen-rewardnone0-09-120-270-350 before its step 120)
    "gpt2s9-2prompt-4gen-lr2e-3-constant-nowarmup-300": {
        "model": "gpt2", "model_seed": 9, "batch": 8, "num_generations": 4, "steps": 300, "logging_steps": 1,
        "lr": 2e-3, "seed": 570, "config": {"lr_scheduler_type": "constant"}},
})


# run once and not stored: the failure its spec meant did not come (README, eighteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
