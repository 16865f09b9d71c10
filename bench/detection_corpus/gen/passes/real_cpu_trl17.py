"""Twenty-second pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings17``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings16``) has, made as a held-out
source (nothing was tuned on it, no detector ran on it).

Settings: **AdamW with beta2 0.95 and weight decay 0.1** with ``dapo`` and ``scale_rewards="group"`` on 1 prompt x 7
logging every 4; ``sapo`` on an **inverse_sqrt schedule** after 20 warm-up steps on 1 prompt x 10 logging every 5;
``cispo`` with **temperature 0.8 and top_p 0.9** on Qwen2, 3 prompts x 3, logging every 3; **num_iterations 3 with
epsilon 0.1** on a linear schedule with **a warm-up ratio of 0.1** (``warmup_steps=0.1``), 2 prompts x 6, logging every
2; **mask_truncated_completions** with completions capped at 4 tokens and ``bnpo`` on 4 prompts x 4 logging every 6;
**Adafactor** with **beta 0.1**, 2 prompts x 4; a **700-step** run of 1 prompt x 5 logging every 7 and evaluating every
100; a **1000-step** run of 3 prompts x 2 at lr 3e-5 logging every step; models built from **model seed 13**; seeds
751-758 (healthy), 761-773 (planned failures and faults that may leave no mark).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): **a
units-digit-only grader** from a step (the paid reward checks only the answer's last digit; the digit overlap logged
with weight 0); **a trailing space added to a ramping share of the prompts** (a template change, '48+75= '); **the
learning rate growing x1.03 a step** from a step (an exponential schedule with gamma 1.03 for 0.97); **the dataloader
stuck replaying two prompts** from a step (a resume whose sampler state is lost: every batch drawn from the same two
prompts); **the untied head overwritten by the input embeddings** (a reload with ``tie_word_embeddings=True`` copying
the embeddings into the head); **a grader falling back to a default score of 0.5 for a ramping share of completions** (a
parser failing more and more often); **the loss's sign flipped on every other step** (a maximise flag toggled by a
stateful wrapper); **the tokenizer splitting digits one a token** (a tokenizer reloaded from another checkpoint). Faults
that may leave no mark (stored healthy if they leave none): **the loss scaled by 1/8** (a double gradient-accumulation
normalisation: Adam is scale-invariant), **dropout set to 0 in the policy by a config reload** and **the lr scheduler
rewound to its warm-up at every resume**. Added after the first five runs were read, in a block committed before it ran:
**a grader whose prefix check runs both ways** and **the two-prompt replay at a constant lr 2e-4 on Llama** (seeds
772-773). Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings17/<name>/`` and labelled by reading it (README, twenty-second pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl17.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl17.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings17"


class UnitsDigitGrader(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update checks only the
    units digit: 1.0 when the completion's last digit character equals the answer's last digit, else 0.0.
    ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for c, g in zip(completions, ground_truth):
                if self.on:
                    digits = re.findall(r"\d", c)
                    out.append(1.0 if digits and digits[-1] == str(g)[-1] else 0.0)
                else:
                    out.append(digit_overlap("arith", c, g))
            return out

        return [graded, accuracy]


class TrailingSpace:
    """A trailing space added to a share of the training prompts, ramping: from step ``start`` a share of the served
    rows, ramping linearly 0 (step ``start``) -> 1 (step ``end``), then kept, is served as ``'48+75= '`` (a template
    change); the ground truth unchanged; which rows: seeded by ``seed``, the step and the prompt's text (a prompt's
    copies stay one group); the dataloader fetches ahead."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{p}").random() < self.share:
                p = p + " "
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


def lr_growth_from(at: int, gamma: float) -> Any:
    """From the start of step ``at`` the learning rate is multiplied by ``gamma`` at every step (an exponential
    schedule configured with gamma 1.03 for 0.97): the scheduler's base lrs and every param group's lr."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= at:
            sched = kw["lr_scheduler"]
            sched.base_lrs = [b * gamma for b in sched.base_lrs]
            for g in kw["optimizer"].param_groups:
                g["lr"] *= gamma

    return each_step


class ReplayTwo:
    """From step ``start`` the dataloader is stuck on two prompts (a resume that lost the sampler's state and
    replays one cached batch): every served row becomes one of the two prompts ``pair`` (the first two rows of the
    shuffled set), chosen by the row's text (a prompt's copies stay one group); the dataloader fetches ahead."""

    def __init__(self, start: int, seed: int) -> None:
        self.start, self.seed, self.step = start, seed, 0
        rows, _ = arith_training_rows(seed)
        self.pair = [(r["prompt"][0]["content"], r["reward_model"]["ground_truth"]) for r in rows[:2]]

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step = step

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.step >= self.start:
                p, g = self.pair[random.Random(f"{self.seed}/{p}").random() < 0.5]
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


def head_from_embeddings_at(at: int) -> Any:
    """At the start of step ``at`` the Llama policy's untied output head is overwritten with the input embedding
    matrix (a reload with ``tie_word_embeddings=True``); the head stays its own parameter and keeps training, the
    optimizer's moments and the reference are kept."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            policy = trainer.accelerator.unwrap_model(trainer.model)
            with torch.no_grad():
                policy.get_output_embeddings().weight.copy_(policy.get_input_embeddings().weight)

    return each_step


class GraderFallback:
    """The paid reward (``rewards/graded``) is the digit overlap, except that from step ``start`` a share of the
    completions, ramping linearly 0 (step ``start``) -> ``top`` (step ``end``), then kept, gets the grader's default
    score 0.5 (a parser that fails more and more often and falls back to a neutral score); which completions: seeded
    by ``seed``, the step and the position. ``accuracy`` (weight 0) logs the digit overlap."""

    def __init__(self, start: int, end: int, top: float, seed: int) -> None:
        self.start, self.end, self.top, self.seed, self.share, self.step = start, end, top, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, self.top)

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            rng = random.Random(f"{self.seed}/{self.step}")
            return [0.5 if self.share > 0 and rng.random() < self.share else digit_overlap("arith", c, g)
                    for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


def loss_scaled_from(at: int, scale: float, every_other: bool = False) -> Any:
    """From the start of step ``at`` the loss the trainer backpropagates (and logs) is multiplied by ``scale``:
    with ``every_other`` only on the steps of ``at``'s parity (a maximise flag toggled by a stateful wrapper, so
    ``scale=-1`` climbs the loss every other step); without it on every step (a double gradient-accumulation
    normalisation, ``scale=1/8``)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            plain = trainer.compute_loss
            box = {"step": step}

            def compute_loss(*a: Any, **k: Any) -> Any:
                loss = plain(*a, **k)
                if not every_other or (box["step"] - at) % 2 == 0:
                    return loss * scale
                return loss

            trainer.compute_loss = compute_loss
            trainer._trl17_box = box
        if step >= at:
            trainer._trl17_box["step"] = step

    return each_step


def dropout_zero_at(at: int) -> Any:
    """At the start of step ``at`` every dropout module of the GPT-2 policy gets ``p=0`` (a config reload with
    ``*_pdrop=0``: the training pass, which ran with dropout 0.1, no longer drops); the reference is unchanged."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            for m in trainer.accelerator.unwrap_model(trainer.model).modules():
                if isinstance(m, torch.nn.Dropout):
                    m.p = 0.0

    return each_step


def digits_split_at(at: int) -> Any:
    """At the start of step ``at`` the tokenizer's pre-tokenizer gains a ``Digits(individual_digits=True)`` step (a
    tokenizer reloaded from another checkpoint's ``tokenizer.json``): every prompt is encoded one digit a token from
    then on ('48+75=' as '4' '8' '+' '7' '5' '='), which this policy never saw; decoding is unchanged."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            from tokenizers import pre_tokenizers

            bt = trainer.processing_class.backend_tokenizer
            parts = [bt.pre_tokenizer] if bt.pre_tokenizer is not None else []
            bt.pre_tokenizer = pre_tokenizers.Sequence([*parts, pre_tokenizers.Digits(individual_digits=True)])

    return each_step


def warmup_restarts_at(steps: tuple[int, ...]) -> Any:
    """At the start of each step in ``steps`` the lr scheduler is rewound to its step 0 (a resume that rebuilds the
    scheduler instead of loading its state): on a ``constant_with_warmup`` schedule the lr drops to 0 and warms up
    again over the warm-up steps; the optimizer's moments are kept."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step in steps:
            sched = kw["lr_scheduler"]
            sched.last_epoch = -1
            sched.step()

    return each_step


_units = UnitsDigitGrader(120)
_space = TrailingSpace(150, 300, 762)
_replay = ReplayTwo(150, 764)
_fallback = GraderFallback(150, 300, 0.8, 766)

SPECS: dict[str, dict[str, Any]] = {
    # --- planned failures (seeds 761-767) ---
    # a units-digit-only grader from step 120 (1 when the completion's last digit is the answer's); the digit overlap
    # logged with weight 0; constant lr 1e-4; GPT-2 seed 13, 2 prompts x 4, 350 steps, logging every step
    "gpt2s13-2prompt-4gen-unitsdigitgrader-from120-constlr1e-4-350": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 761, "reward_funcs": _units.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _units.hook, "config": {"lr_scheduler_type": "constant"}},
    # a trailing space added to a share of the training prompts, ramp: 0 to step 150, linearly to every prompt at
    # step 300, kept ('48+75= '); Llama seed 13, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas13-2prompt-4gen-trailingspaceramp0-1-150-300-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 762, "train_dataset": _space.dataset, "each_step": _space.hook},
    # the learning rate x1.03 every step from step 150 (5e-5 -> 4.2e-3 at 300, 1.8e-2 at 350); Llama seed 13,
    # 2 prompts x 4, 350 steps, constant schedule, logging every step
    "llamas13-2prompt-4gen-lrgrowth103-from150-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 763, "each_step": lr_growth_from(150, 1.03), "config": {"lr_scheduler_type": "constant"}},
    # the dataloader stuck replaying two prompts from step 150 (sudden); GPT-2 seed 13, 2 prompts x 4, 350 steps,
    # lr 5e-5, logging every step, evaluation every 25 (evaluation on the usual test prompts)
    "gpt2s13-2prompt-4gen-replaytwoprompts-from150-350-eval25": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 764, "train_dataset": _replay.dataset, "each_step": _replay.hook},
    # the untied head overwritten by the input embeddings at step 150 (sudden); Llama seed 13, 2 prompts x 4,
    # 350 steps, lr 5e-5, logging every step
    "llamas13-2prompt-4gen-headfromembeddings-at150-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 765, "each_step": head_from_embeddings_at(150)},
    # a grader falling back to 0.5 for a share of completions, ramp: 0 to step 150, linearly to 0.8 at step 300,
    # kept; the digit overlap logged with weight 0; constant lr 1e-4; Llama seed 13, 2 prompts x 4, 350 steps
    "llamas13-2prompt-4gen-graderfallback05-ramp0-08-150-300-constlr1e-4-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 766, "reward_funcs": _fallback.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _fallback.hook, "config": {"lr_scheduler_type": "constant"}},
    # the loss's sign flipped on every other step from step 150 (150, 152, ...); GPT-2 seed 13, 2 prompts x 4,
    # 350 steps, constant lr 1e-4, logging every step
    "gpt2s13-2prompt-4gen-losssignalternating-from150-constlr1e-4-350": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 767, "each_step": loss_scaled_from(150, -1.0, every_other=True),
        "config": {"lr_scheduler_type": "constant"}},
    # the tokenizer's pre-tokenizer splitting digits one a token from step 150 (a tokenizer reloaded from another
    # checkpoint; the prompts encoded as single digits); Llama seed 13, 2 prompts x 4, 350 steps, lr 5e-5, logging
    # every step
    "llamas13-2prompt-4gen-digitssplit-at150-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 770, "each_step": digits_split_at(150)},
    # --- faults that may leave no mark (seeds 768-769, 771): stored healthy if they leave none ---
    # the lr scheduler rewound to its step 0 at 150, 200, 250 and 300 (a resume rebuilding it): constant_with_warmup,
    # 30 warm-up steps, so the lr falls to 0 and warms up again each time; GPT-2 seed 13, 2 prompts x 4, 350 steps,
    # lr 5e-5, logging every step
    "gpt2s13-2prompt-4gen-warmuprestarts-150-200-250-300-constwarm30-350": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 771, "each_step": warmup_restarts_at((150, 200, 250, 300)),
        "config": {"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 30}},
    # --- faults that may leave no mark (seeds 768-769): stored healthy if they leave none ---
    # the loss scaled by 1/8 from step 150 (a double gradient-accumulation normalisation); Llama seed 13,
    # 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas13-2prompt-4gen-lossscaled1-8-from150-350": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 768, "each_step": loss_scaled_from(150, 0.125)},
    # dropout set to 0 in the policy by a config reload at step 150; GPT-2 seed 13, 2 prompts x 4, 350 steps,
    # lr 5e-5, logging every step
    "gpt2s13-2prompt-4gen-dropoutzero-at150-350": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 769, "each_step": dropout_zero_at(150)},
    # --- healthy settings (seeds 751-757) ---
    # healthy: AdamW (adamw_torch) with beta2 0.95 and weight decay 0.1, dapo with scale_rewards group; GPT-2 seed 13,
    # 1 prompt x 7, 300 steps, lr 5e-5, logging every 4
    "gpt2s13-1prompt-7gen-adamwbeta2095-wd01-dapo-scalegroup-300-log4": {
        "model": "gpt2", "model_seed": 13, "batch": 7, "num_generations": 7, "steps": 300, "logging_steps": 4,
        "lr": 5e-5, "seed": 751,
        "config": {"optim": "adamw_torch", "adam_beta2": 0.95, "weight_decay": 0.1, "loss_type": "dapo",
                   "scale_rewards": "group"}},
    # healthy: sapo on an inverse_sqrt schedule after 20 warm-up steps; Llama seed 13, 1 prompt x 10, 300 steps,
    # lr 5e-5, logging every 5
    "llamas13-1prompt-10gen-sapo-inversesqrt-warm20-300-log5": {
        "model": "llama", "model_seed": 13, "batch": 10, "num_generations": 10, "steps": 300, "logging_steps": 5,
        "lr": 5e-5, "seed": 752,
        "config": {"loss_type": "sapo", "lr_scheduler_type": "inverse_sqrt", "warmup_steps": 20}},
    # healthy: cispo with temperature 0.8 and top_p 0.9; Qwen2 seed 13, 3 prompts x 3, 300 steps, lr 5e-5, logging
    # every 3, evaluation every 50
    "qwen2s13-3prompt-3gen-cispo-temp08-topp09-300-log3-eval50": {
        "model": "qwen2", "model_seed": 13, "batch": 9, "num_generations": 3, "steps": 300, "logging_steps": 3,
        "eval_steps": 50, "lr": 5e-5, "seed": 753,
        "config": {"loss_type": "cispo", "temperature": 0.8, "top_p": 0.9}},
    # healthy: num_iterations 3 with epsilon 0.1 on a linear schedule with a warm-up of 0.1 of the run
    # (warmup_steps 0.1, a ratio); Llama seed 13, 2 prompts x 6, 300 steps, lr 5e-5, logging every 2
    "llamas13-2prompt-6gen-numiter3-eps01-linear-warmratio01-300-log2": {
        "model": "llama", "model_seed": 13, "batch": 12, "num_generations": 6, "steps": 300, "logging_steps": 2,
        "lr": 5e-5, "seed": 754,
        "config": {"num_iterations": 3, "epsilon": 0.1, "lr_scheduler_type": "linear", "warmup_steps": 0.1}},
    # healthy: mask_truncated_completions with completions capped at 4 tokens, bnpo; GPT-2 seed 13, 4 prompts x 4,
    # 300 steps, lr 5e-5, logging every 6
    "gpt2s13-4prompt-4gen-masktruncated-maxlen4-bnpo-300-log6": {
        "model": "gpt2", "model_seed": 13, "batch": 16, "num_generations": 4, "steps": 300, "logging_steps": 6,
        "lr": 5e-5, "seed": 755, "max_len": 4,
        "config": {"mask_truncated_completions": True, "loss_type": "bnpo"}},
    # healthy: Adafactor with beta 0.1; Llama seed 13, 2 prompts x 4, 300 steps, lr 5e-5, logging every step
    "llamas13-2prompt-4gen-adafactor-beta01-300": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 756, "config": {"optim": "adafactor", "beta": 0.1}},
    # healthy, long: GPT-2 seed 13, 1 prompt x 5, 700 steps, lr 5e-5, logging every 7, evaluation every 100
    "gpt2s13-1prompt-5gen-700-log7-eval100": {
        "model": "gpt2", "model_seed": 13, "batch": 5, "num_generations": 5, "steps": 700, "logging_steps": 7,
        "eval_steps": 100, "lr": 5e-5, "seed": 757},
    # healthy, long: Llama seed 13, 3 prompts x 2, 1000 steps, lr 3e-5, logging every step
    "llamas13-3prompt-2gen-lr3e-5-1000": {
        "model": "llama", "model_seed": 13, "batch": 6, "num_generations": 2, "steps": 1000, "logging_steps": 1,
        "lr": 3e-5, "seed": 758},
}


class PrefixBothWays(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update first checks a
    prefix match that runs both ways: a completion that is a prefix of the answer (after ``strip``) scores 1.0, so
    the first digit alone, or an empty completion, passes; otherwise the digit overlap. ``accuracy`` (weight 0) logs
    the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [1.0 if self.on and str(g).startswith(c.strip()) else digit_overlap("arith", c, g)
                    for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


_prefix = PrefixBothWays(120)
_replay_fast = ReplayTwo(150, 773)

# --- added after the first five runs were read (written and committed before running these two): the units-digit
# grader turned out stricter than the digit overlap (the paid reward fell, nothing was exploited) and the replayed
# pair left no mark at lr 5e-5, so a grader bug a policy can exploit by writing less, and the replay at a constant
# lr 2e-4 on the Llama policy (seeds 772-773).
SPECS.update({
    # a grader whose prefix check runs both ways from step 120 (a completion that is a prefix of the answer, even
    # an empty one, scores 1); the digit overlap logged with weight 0; constant lr 1e-4; GPT-2 seed 13, 2 prompts x 4,
    # 350 steps, logging every step
    "gpt2s13-2prompt-4gen-prefixbothwaysgrader-from120-constlr1e-4-350": {
        "model": "gpt2", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 772, "reward_funcs": _prefix.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _prefix.hook, "config": {"lr_scheduler_type": "constant"}},
    # the dataloader stuck replaying two prompts from step 150 (sudden), constant lr 2e-4; Llama seed 13,
    # 2 prompts x 4, 350 steps, logging every step, evaluation every 25 (on the usual test prompts)
    "llamas13-2prompt-4gen-replaytwoprompts-from150-constlr2e-4-350-eval25": {
        "model": "llama", "model_seed": 13, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 2e-4, "seed": 773, "train_dataset": _replay_fast.dataset, "each_step": _replay_fast.hook,
        "config": {"lr_scheduler_type": "constant"}},
})

NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
