"""Twenty-fourth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings19``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings18``) has, made as a held-out
source (nothing was tuned on it, no detector ran on it).

Settings: **``loss_type="vespo"`` with ``scale_rewards="batch"``** on 1 prompt x 5 logging every 7; **GSPO
(``importance_sampling_level="sequence"``) with ``loss_type="dr_grpo"``** under ``num_iterations=2`` on 2 prompts x 3
logging every 3 and evaluating every 30; **``loss_type="sapo"`` with ``scale_rewards="none"``** on Qwen2, 2 prompts x 4
logging every 2; **gradient accumulation 2 with ``loss_type="cispo"`` and ``scale_rewards="batch"``** (one generation
of 2 prompts x 6 feeding two micro-batches) logging every 4; **``min_p=0.2`` sampling at temperature 1.3** on 2
prompts x 4; **1 prompt x 3 without a reference (beta 0) at a constant lr 1e-4**; a **600-step** run of 1 prompt x 4
logging every 10; a **500-step** run of 1 prompt x 3 logging every 5 and evaluating every 100; models built from
**model seed 15**; seeds 1101-1108 (healthy), 1111-1120 (planned failures and faults that may leave no mark).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): **a
format check's weight typed 10 for 0.1 at a resume** (a second reward paying a zero-padded answer, '0' first, the
answer field's '%03d' format the model can emit on any prompt); **a reward client catching a failing server call as
zeros**, for a share of calls ramping 0 -> 0.8 (every reward of a failed call 0); **the KL coefficient's sign flipped
by a typo at a resume** (beta 0.2 -> -0.2); **generation sampled hotter than the loss assumes, ramping** (the
generation config's temperature 1 -> 2 while the training pass scores at 1); **the data loader stuck on one shard**
(from a step every served prompt is one of the same eight); **a label join drifting** (a share of rows, ramping 0 -> 1,
graded against another row's answer); **a reward clamp whose ceiling ramps to 0.01** (a sanitiser's bound read in
percent); **a reward server answering in percent at a resume that also dropped reward scaling** (x100 with
``scale_rewards`` "none"). Faults that may leave no mark (stored healthy if they leave none): **a reward weight typed
0.01 for 1 at a resume under ``scale_rewards="none"``**; **the importance-sampling level switched to sequence by a
resume** under ``num_iterations=2``.
Added after the first four runs were read, in a block committed before it ran: **the format check's control at its
intended weight 0.1 throughout**, **the KL coefficient ramping 0.04 -> -0.04** and **gradient accumulation 1 -> 4 at a
resume** (seeds 1121-1123).
Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings19/<name>/`` and labelled by reading it (README, twenty-fourth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl19.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl19.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_cpu_trl18 import PercentScores
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings19"


def _set_weights(trainer: Any, weights: list[float]) -> None:
    """The trainer's reward weights as a tensor on their own device (TRL multiplies each function's rewards by
    them when it sums the paid reward)."""
    import torch

    trainer.reward_weights = torch.tensor(weights, dtype=torch.float32, device=trainer.reward_weights.device)


class WeightTypo(FromStep):
    """The reward weights are ``before`` until step ``start``, ``after`` from it (a resume whose config has a weight
    typed wrong: 10 for 0.1, 0.01 for 1)."""

    def __init__(self, start: int, before: list[float], after: list[float]) -> None:
        super().__init__(start)
        self.before, self.after = before, after

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        super().hook(trainer, args, step, kw)
        _set_weights(trainer, self.after if self.on else self.before)


def zero_padded(completions: list[str], **kw: Any) -> list[float]:
    """A format check: 1 when the answer is written zero-padded ('0' first, the answer field's '%03d' format), else
    0. The model can write a leading '0' on any prompt, so a large weight on it pays a wrong answer."""
    return [1.0 if c.strip().startswith("0") else 0.0 for c in completions]


def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
    """The paid reward under its own name (``rewards/graded``): the digit overlap, so a weight change on it shows
    beside ``accuracy`` (weight 0)."""
    return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]


class FailingCalls:
    """The paid reward (``rewards/served``) comes from a reward server; from step ``start`` a share of its calls,
    ramping linearly 0 (step ``start``) -> ``top`` (step ``end``), then kept, fails (ConnectionError), and the client
    catches the failure and returns 0 for every completion of the call (a whole step's rewards 0). Which calls:
    seeded by ``seed`` and the step. ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def __init__(self, start: int, end: int, top: float, seed: int) -> None:
        self.start, self.end, self.top, self.seed, self.share, self.step = start, end, top, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, self.top)

    def _call(self, completions: list[str], ground_truth: list[str]) -> list[float]:
        if self.share > 0 and random.Random(f"{self.seed}/{self.step}").random() < self.share:
            raise ConnectionError("reward server: 503")
        return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]

    def funcs(self) -> list[Any]:
        def served(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            try:
                return self._call(completions, ground_truth)
            except ConnectionError:
                return [0.0] * len(completions)

        return [served, accuracy]


def beta_at(at: int, beta: float) -> Any:
    """From the start of step ``at`` the KL coefficient is ``beta`` (a resume's config with the sign typed wrong:
    -0.2 for 0.2; a negative coefficient pays the policy for moving away from the reference)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.beta = beta

    return each_step


def generation_temperature_ramp(start: int, end: int, hi: float) -> Any:
    """The generation config's temperature ramps linearly 1 (step ``start``) -> ``hi`` (step ``end``), then kept,
    while the trainer's temperature (the training pass's scoring) stays 1 (a decoding config edited between jobs:
    rollouts sampled hotter than the loss assumes)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        trainer.generation_config.temperature = ramp(step, start, end, 1.0, hi)

    return each_step


class StuckShard(FromStep):
    """The data loader stuck on one shard: from step ``start`` every served training row is replaced by one of the
    same ``size`` rows (the shuffled set's first ``size``, chosen by the prompt's text: a prompt's copies stay one
    group). The dataloader fetches one batch ahead, so the first stuck batch can come a step late. Evaluation keeps
    the test prompts."""

    def __init__(self, start: int, seed: int, size: int) -> None:
        super().__init__(start)
        self.seed, self.size = seed, size
        self.shard: list[dict[str, Any]] = []

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.on:
                r = self.shard[random.Random(f"{self.seed}/{p}").randrange(self.size)]
                p, g = r["prompt"][0]["content"], r["reward_model"]["ground_truth"]
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        self.shard = rows[:self.size]
        return prompt_dataset(rows[:n], self.transform)


class DriftingJoin:
    """A label join drifting: from step ``start`` the paid reward (``rewards/graded``) grades a share of rows, ramping
    linearly 0 (step ``start``) -> 1 (step ``end``), then kept, against another row's answer (the answers table joined
    on a key that drifts; which rows: seeded by ``seed``, the step and the prompt's text, the other answer by the
    prompt's text). ``accuracy`` (weight 0) logs the digit overlap against the true answer beside it."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0
        self.answers = [r["reward_model"]["ground_truth"] for r in arith_training_rows(seed + 500)[0]]

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def _truth(self, p: str, g: str) -> str:
        if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{p}").random() < self.share:
            return self.answers[random.Random(f"{self.seed}/{p}").randrange(len(self.answers))]
        return g

    def funcs(self) -> list[Any]:
        def graded(prompts: list[str], completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, self._truth(p, g)) for p, c, g in zip(prompts, completions, ground_truth)]

        return [graded, accuracy]


class ClampRamp:
    """The paid reward (``rewards/graded``) is the digit overlap clamped to a ceiling that ramps linearly 1 (step
    ``start``) -> ``low`` (step ``end``), then kept (a sanitiser's upper bound written in percent and read as a
    fraction: 1 meant, 0.01 applied by the end). ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def __init__(self, start: int, end: int, low: float) -> None:
        self.start, self.end, self.low, self.ceiling = start, end, low, 1.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.ceiling = ramp(step, self.start, self.end, 1.0, self.low)

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [min(digit_overlap("arith", c, g), self.ceiling) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


def percent_unscaled_from(percent: PercentScores) -> Any:
    """The reward server answers in percent from ``percent.start`` (:class:`real_cpu_trl18.PercentScores`) and the
    same resume drops reward scaling (``scale_rewards`` "none"): the advantages x100."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        percent.hook(trainer, args, step, kw)
        if step == percent.start:
            trainer.scale_rewards = "none"

    return each_step


def is_level_at(at: int, level: str) -> Any:
    """From the start of step ``at`` the importance-sampling level is ``level`` (a resume's config: "sequence" where
    the run had "token")."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.importance_sampling_level = level

    return each_step


_padtypo = WeightTypo(100, [1.0, 0.1], [1.0, 10.0])
_failing = FailingCalls(100, 200, 0.8, 1112)
_stuck = StuckShard(100, 1115, 8)
_join = DriftingJoin(100, 200, 1116)
_clamp = ClampRamp(100, 200, 0.01)
_percent = PercentScores(100)
_smallw = WeightTypo(100, [1.0, 0.0], [0.01, 0.0])

SPECS: dict[str, dict[str, Any]] = {
    # --- planned failures (seeds 1111-1118) ---
    # a format check paying a zero-padded answer ('0' first) beside the digit overlap, weights [1, 0.1] to step 99,
    # [1, 10] from step 100 (a weight typed 10 for 0.1 at a resume); constant lr 1e-4; GPT-2 seed 15, 2 prompts x 4,
    # 250 steps, logging every step
    "gpt2s15-2prompt-4gen-zeropadtag-weight01to10-at100-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1111, "reward_funcs": [accuracy, zero_padded], "reward_weights": [1.0, 0.1],
        "each_step": _padtypo.hook, "config": {"lr_scheduler_type": "constant"}},
    # a reward client catching a failing server call as zeros for a whole call, the share of failing calls ramping
    # 0 (step 100) -> 0.8 (step 200), kept; the digit overlap logged with weight 0; Llama seed 15, 2 prompts x 4,
    # 250 steps, lr 5e-5, logging every step
    "llamas15-2prompt-4gen-failingcallsramp0-08-100-200-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1112, "reward_funcs": _failing.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _failing.hook},
    # beta 0.2, its sign flipped at step 100 (-0.2: a typo at a resume); constant lr 1e-4; GPT-2 seed 15,
    # 2 prompts x 4, 250 steps, logging every step
    "gpt2s15-2prompt-4gen-beta02-negated-at100-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1113, "each_step": beta_at(100, -0.2),
        "config": {"beta": 0.2, "lr_scheduler_type": "constant"}},
    # the generation temperature ramping 1 (step 100) -> 2 (step 200), kept, while the loss scores at 1; Llama seed
    # 15, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "llamas15-2prompt-4gen-gentemperatureramp1-2-100-200-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1114, "each_step": generation_temperature_ramp(100, 200, 2.0)},
    # the data loader stuck on one shard of eight prompts from step 100 (sudden); constant lr 1e-4; GPT-2 seed 15,
    # 2 prompts x 4, 250 steps, logging every step
    "gpt2s15-2prompt-4gen-stuckshard8-from100-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1115, "train_dataset": _stuck.dataset, "each_step": _stuck.hook,
        "config": {"lr_scheduler_type": "constant"}},
    # a label join drifting: the share of rows graded against another row's answer ramping 0 (step 100) -> 1 (step
    # 200), kept; the digit overlap against the true answer logged with weight 0; Llama seed 15, 2 prompts x 4,
    # 250 steps, lr 5e-5, logging every step
    "llamas15-2prompt-4gen-driftingjoinramp0-1-100-200-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1116, "reward_funcs": _join.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _join.hook},
    # the paid reward clamped to a ceiling ramping 1 (step 100) -> 0.01 (step 200), kept; the digit overlap logged
    # with weight 0; GPT-2 seed 15, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "gpt2s15-2prompt-4gen-clampceilingramp1-001-100-200-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1117, "reward_funcs": _clamp.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _clamp.hook},
    # the reward server answering in percent from step 100 and the same resume dropping reward scaling
    # (scale_rewards none); the digit overlap logged with weight 0; Llama seed 15, 2 prompts x 4, 250 steps, lr 5e-5,
    # logging every step
    "llamas15-2prompt-4gen-percentscores-scalenone-from100-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1118, "reward_funcs": _percent.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": percent_unscaled_from(_percent)},
    # --- faults that may leave no mark (seeds 1119-1120): stored healthy if they leave none ---
    # scale_rewards none; the paid reward's weight typed 0.01 for 1 at a resume at step 100; the digit overlap logged
    # with weight 0 (the same function, its own column); GPT-2 seed 15, 2 prompts x 4, 250 steps, lr 5e-5, logging
    # every step
    "gpt2s15-2prompt-4gen-scalenone-weight1to001-at100-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1119, "reward_funcs": [graded, accuracy], "reward_weights": [1.0, 0.0],
        "each_step": _smallw.hook, "config": {"scale_rewards": "none"}},
    # the importance-sampling level switched token -> sequence at step 100 under num_iterations 2; Llama seed 15,
    # 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "llamas15-2prompt-4gen-numiter2-islevelsequence-at100-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1120, "each_step": is_level_at(100, "sequence"), "config": {"num_iterations": 2}},
    # --- healthy settings (seeds 1101-1108) ---
    # healthy: loss_type vespo with scale_rewards batch; GPT-2 seed 15, 1 prompt x 5, 200 steps, lr 5e-5, logging
    # every 7
    "gpt2s15-1prompt-5gen-vespo-scalebatch-200-log7": {
        "model": "gpt2", "model_seed": 15, "batch": 5, "num_generations": 5, "steps": 200, "logging_steps": 7,
        "lr": 5e-5, "seed": 1101, "config": {"loss_type": "vespo", "scale_rewards": "batch"}},
    # healthy: GSPO (importance_sampling_level sequence) with loss_type dr_grpo under num_iterations 2; Llama seed 15,
    # 2 prompts x 3, 200 steps, lr 5e-5, logging every 3, evaluation every 30
    "llamas15-2prompt-3gen-gspo-drgrpo-numiter2-200-log3-eval30": {
        "model": "llama", "model_seed": 15, "batch": 6, "num_generations": 3, "steps": 200, "logging_steps": 3,
        "eval_steps": 30, "lr": 5e-5, "seed": 1102,
        "config": {"importance_sampling_level": "sequence", "loss_type": "dr_grpo", "num_iterations": 2}},
    # healthy: loss_type sapo with scale_rewards none; Qwen2 seed 15, 2 prompts x 4, 200 steps, lr 5e-5, logging
    # every 2
    "qwen2s15-2prompt-4gen-sapo-scalenone-200-log2": {
        "model": "qwen2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 2,
        "lr": 5e-5, "seed": 1103, "config": {"loss_type": "sapo", "scale_rewards": "none"}},
    # healthy: gradient accumulation 2 (one generation of 2 prompts x 6 feeding two micro-batches of 1 prompt x 6)
    # with loss_type cispo and scale_rewards batch; GPT-2 seed 15, 200 steps, lr 5e-5, logging every 4
    "gpt2s15-1prompt-6gen-ga2-cispo-scalebatch-200-log4": {
        "model": "gpt2", "model_seed": 15, "batch": 6, "num_generations": 6, "steps": 200, "logging_steps": 4,
        "lr": 5e-5, "seed": 1104,
        "config": {"gradient_accumulation_steps": 2, "loss_type": "cispo", "scale_rewards": "batch"}},
    # healthy: min_p 0.2 sampling at temperature 1.3 (sampled and scored at 1.3); Llama seed 15, 2 prompts x 4,
    # 200 steps, lr 5e-5, logging every step
    "llamas15-2prompt-4gen-minp02-temp13-200": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 1,
        "lr": 5e-5, "seed": 1105, "config": {"min_p": 0.2, "temperature": 1.3}},
    # healthy: no reference (beta 0) at a constant lr 1e-4; GPT-2 seed 15, 1 prompt x 3, 200 steps, logging every
    # step
    "gpt2s15-1prompt-3gen-beta0-constlr1e-4-200": {
        "model": "gpt2", "model_seed": 15, "batch": 3, "num_generations": 3, "steps": 200, "logging_steps": 1,
        "lr": 1e-4, "seed": 1106, "config": {"beta": 0.0, "lr_scheduler_type": "constant"}},
    # healthy, long: GPT-2 seed 15, 1 prompt x 4, 600 steps, lr 5e-5, logging every 10
    "gpt2s15-1prompt-4gen-600-log10": {
        "model": "gpt2", "model_seed": 15, "batch": 4, "num_generations": 4, "steps": 600, "logging_steps": 10,
        "lr": 5e-5, "seed": 1107},
    # healthy, long: Llama seed 15, 1 prompt x 3, 500 steps, lr 5e-5, logging every 5, evaluation every 100
    "llamas15-1prompt-3gen-500-log5-eval100": {
        "model": "llama", "model_seed": 15, "batch": 3, "num_generations": 3, "steps": 500, "logging_steps": 5,
        "eval_steps": 100, "lr": 5e-5, "seed": 1108},
}

def grad_accumulation_at(at: int, steps: int) -> Any:
    """From step ``at`` the optimizer step accumulates ``steps`` micro-batches (a resume's config with
    ``gradient_accumulation_steps`` 4 where the run had 1): the Trainer reads it per update, so each logged step then
    holds four generations' rollouts. The micro-batches of an update are fetched before ``on_step_begin``, so the
    change shows from step ``at + 1``."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            args.gradient_accumulation_steps = steps

    return each_step


def beta_ramp(start: int, end: int, lo: float, hi: float) -> Any:
    """The KL coefficient ramps linearly ``lo`` (step ``start``) -> ``hi`` (step ``end``), then kept (a schedule's
    end written with the wrong sign: 0.04 -> -0.04; the coefficient crosses 0 half-way)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        b = ramp(step, start, end, lo, hi)
        trainer.beta = b if b != 0.0 else 1e-9  # TRL skips the reference at beta 0 exactly; keep it computed

    return each_step


_padkept = WeightTypo(100, [1.0, 0.1], [1.0, 0.1])  # the control: the format check at its intended weight throughout

# --- added after the first four runs were read (written and committed before running these three): the format
# check at weight 10 was learned (the zero-padded share 0.5 -> 1.0, the accuracy 0.40 -> 0.29) and the KL sign flip
# to -0.2 collapsed the entropy 1.57 -> 0.65, so the matched control of the first (the format check at its intended
# weight 0.1 throughout), the sign flip as a slow ramp of a small coefficient (0.04 -> -0.04 over 100-200), and the
# gradient accumulation changed by a resume (1 -> 4 from step 100) (seeds 1121-1123).
SPECS.update({
    # the format check paying a zero-padded answer at its intended weight 0.1 throughout (the control of the weight
    # typo); constant lr 1e-4; GPT-2 seed 15, 2 prompts x 4, 250 steps, logging every step
    "gpt2s15-2prompt-4gen-zeropadtag-weight01-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1121, "reward_funcs": [accuracy, zero_padded], "reward_weights": [1.0, 0.1],
        "each_step": _padkept.hook, "config": {"lr_scheduler_type": "constant"}},
    # the KL coefficient ramping 0.04 (step 100) -> -0.04 (step 200), kept; constant lr 1e-4; Llama seed 15,
    # 2 prompts x 4, 250 steps, logging every step
    "llamas15-2prompt-4gen-betaramp004-neg004-100-200-constlr1e-4-250": {
        "model": "llama", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1122, "each_step": beta_ramp(100, 200, 0.04, -0.04),
        "config": {"lr_scheduler_type": "constant"}},
    # gradient accumulation 1 -> 4 at a resume at step 100 (each optimizer step then four micro-batches); GPT-2 seed
    # 15, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "gpt2s15-2prompt-4gen-gradaccum1to4-at100-250": {
        "model": "gpt2", "model_seed": 15, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1123, "each_step": grad_accumulation_at(100, 4)},
})

NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
