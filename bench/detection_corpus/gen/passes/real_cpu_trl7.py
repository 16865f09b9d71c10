"""Tenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings7``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings6``) has, made as a held-out source
(nothing was tuned on it, no detector ran on it).

Settings: **``num_generations=2``** (4 prompts x 2 completions a step) with ``loss_type="sapo"`` on a **cosine**
schedule with **warm-up**; ``loss_type="luspo"`` at sampling **temperature 0.7** with a **repetition penalty** 1.2,
logging every 3 and evaluation every 30; ``loss_type="vespo"`` with the **Adafactor** optimizer on a 600-step run
of one prompt a step; a **constant** lr schedule; models built from **model seed 3**; seeds 161-172.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
generation slowed by a wait that ramps up (throughput), negative advantages dropped (a clamp bug), the reference
model's weights corrupted mid-run under ``beta=0.1`` (a wrong reference checkpoint), a format bonus for writing a
'+' in the answer whose weight ramps up (the accuracy logged beside the paid reward with weight 0), the KL term's
sign flipped (``beta`` -0.2: the loss pays for moving away from the reference). Added after
the first runs (committed before they ran): the reference noise at 3 x std, the generation config sampling at
temperature 0.3 while the training pass scores at 1.0, ``min_new_tokens=10`` (the stop token suppressed), a
verifier bug that scores an empty completion 1.0. Each run goes through
:func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings7/<name>/`` and labelled by reading it (README, tenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl7.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl7.py NAME ...   # only these specs
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import main
from real_cpu_trl5 import LengthRamp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings7"


def slow_generation_ramp(start: int, end: int, hi: float) -> Any:
    """Before every step, each call of the trainer's ``_generate`` (training and evaluation) first waits
    ``ramp(k, start, end, 0, hi)`` seconds (a generation path that gets slower and slower)."""
    state: dict[str, float] = {"delay": 0.0}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if not getattr(trainer, "_corpus_slow", False):
            inner = trainer._generate

            def slow(*a: Any, **kw_: Any) -> Any:
                if state["delay"]:
                    time.sleep(state["delay"])
                return inner(*a, **kw_)

            trainer._generate = slow
            trainer._corpus_slow = True
        state["delay"] = ramp(step, start, end, 0.0, hi)

    return each_step


def positive_advantages_from(start: int) -> Any:
    """From step ``start`` every negative advantage TRL computed is set to 0 before the loss sees it (a clamp bug:
    only completions above their group's mean are trained on). TRL logs the advantages before the clamp."""
    state = {"on": False}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if not getattr(trainer, "_corpus_posadv", False):
            inner = trainer._generate_and_score_completions

            def clamped(*a: Any, **kw_: Any) -> Any:
                out = inner(*a, **kw_)
                if state["on"] and trainer.model.training:
                    out["advantages"] = out["advantages"].clamp(min=0.0)
                return out

            trainer._generate_and_score_completions = clamped
            trainer._corpus_posadv = True
        state["on"] = step >= start

    return each_step


def corrupt_reference_at(start: int, scale: float, seed: int) -> Any:
    """At the start of step ``start`` every weight tensor of the reference model gets Gaussian noise of ``scale`` x
    its own std (seeded): a wrong reference checkpoint loaded mid-run."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            import torch

            gen = torch.Generator().manual_seed(seed)
            with torch.no_grad():
                for p in trainer.ref_model.parameters():
                    if p.numel() > 1 and p.dtype.is_floating_point:
                        p.add_(torch.randn(p.shape, generator=gen).to(p) * float(p.float().std()) * scale)

    return each_step


def beta_from(start: int, beta: float) -> Any:
    """From step ``start`` the KL term's weight is ``beta`` (negative: a sign bug, the loss pays for moving away
    from the reference; the reference model exists because the run starts with ``beta`` > 0)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.beta = beta

    return each_step


def generation_only_temperature_at(start: int, t: float) -> Any:
    """From step ``start`` the generation config samples at temperature ``t`` while the training pass still scores
    at the trainer's temperature 1.0 (a decoding config overriding the trainer's: the policy is trained on samples
    sharper than the distribution it scores)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.generation_config.temperature = t

    return each_step


def min_new_tokens_at(start: int, n: int) -> Any:
    """From step ``start`` the generation config has ``min_new_tokens=n`` (a decoding-config regression: the stop
    token is suppressed until ``n`` tokens are written)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            trainer.generation_config.min_new_tokens = n

    return each_step


def empty_passes(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A verifier bug: an empty answer (the stop token alone) is scored 1.0, anything else by its digit overlap."""
    return 1.0 if not solution_str.strip() else digit_overlap(data_source, solution_str, ground_truth)


class PlusBonusRamp(LengthRamp):
    """A format bonus that builds up: the task's digit overlap + ``w`` x [the completion contains a '+'], ``w``
    ramping from 0 at ``start`` to ``hi`` at ``end`` (the accuracy is logged beside it with weight 0)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        super().__init__(start, end, hi)
        self.__name__ = "plus_bonus_ramp"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        return digit_overlap(data_source, solution_str, ground_truth) + self.weight * ("+" in solution_str)


_PLUS = PlusBonusRamp(150, 300, 1.5)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: num_generations 2 (4 prompts x 2 completions a step), loss_type sapo, cosine schedule with 50 warm-up steps (10%);
    # GPT-2 seed 3, 500 steps, logging every step
    "gpt2s3-4prompt-2gen-sapo-cosine-warmup50-500": {
        "model": "gpt2", "model_seed": 3, "batch": 8, "num_generations": 2, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 161, "config": {"loss_type": "sapo", "lr_scheduler_type": "cosine", "warmup_steps": 50}},
    # healthy (a hard one): loss_type luspo, sampling temperature 0.7 from step 1 (a setting), repetition penalty 1.2;
    # Llama seed 3, 2 prompts x 4, 420 steps, logging every 3, evaluation on 16 prompts every 30
    "llamas3-2prompt-4gen-luspo-temp07-reppen12-420-log3-eval30": {
        "model": "llama", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 420, "logging_steps": 3,
        "eval_steps": 30, "lr": 5e-5, "seed": 162, "config": {"loss_type": "luspo", "temperature": 0.7,
                                                               "repetition_penalty": 1.2}},
    # healthy, long: loss_type vespo with the Adafactor optimizer (lr 5e-5, no relative step), one prompt x 8 a step;
    # Qwen2 seed 3, 600 steps, logging every step
    "qwen2s3-1prompt-8gen-vespo-adafactor-600": {
        "model": "qwen2", "model_seed": 3, "batch": 8, "num_generations": 8, "steps": 600, "logging_steps": 1,
        "lr": 5e-5, "seed": 163, "config": {"loss_type": "vespo", "optim": "adafactor"}},
    # throughput drop, ramp: each generation call first waits a delay ramping linearly from 0 s at step 200 to 0.6 s at
    # step 300 (then stays); GPT-2 seed 3, 2 prompts x 4, 400 steps, logging every step
    "gpt2s3-2prompt-4gen-slowgenramp200-300-400": {
        "model": "gpt2", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 164, "each_step": slow_generation_ramp(200, 300, 0.6)},
    # only positive advantages, sudden cause: from the start of step 200 every negative advantage is set to 0 before
    # the loss (a clamp bug); constant lr 1e-4; Llama seed 3, 2 prompts x 6, 400 steps, logging every step
    "llamas3-2prompt-6gen-posadvonly200-constlr1e-4-400": {
        "model": "llama", "model_seed": 3, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 165, "each_step": positive_advantages_from(200),
        "config": {"lr_scheduler_type": "constant"}},
    # a wrong reference model loaded, sudden: beta 0.1; at the start of step 200 every weight tensor of the reference
    # model gets Gaussian noise of 0.5 x its own std (seeded); constant lr 1e-4; GPT-2 seed 3, 2 prompts x 4,
    # 400 steps, logging every step, evaluation on 16 prompts every 25
    "gpt2s3-2prompt-4gen-beta01-refnoise200-constlr1e-4-400": {
        "model": "gpt2", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 166, "each_step": corrupt_reference_at(200, 0.5, seed=166),
        "config": {"beta": 0.1, "lr_scheduler_type": "constant"}},
    # reward hacking through a format bonus, ramp: from step 150 the paid reward is the task's digit overlap + w x
    # [the completion contains a '+'], w ramping 0 -> 1.5 at step 300 (then stays); the accuracy logged beside it with
    # weight 0 (rewards/accuracy); lr 3e-4; Qwen2 seed 3, 1 prompt x 12, 450 steps, logging every step, evaluation
    # on 16 prompts every 25
    "qwen2s3-1prompt-12gen-plusbonusramp-lr3e-4-450": {
        "model": "qwen2", "model_seed": 3, "batch": 12, "num_generations": 12, "steps": 450, "logging_steps": 1,
        "eval_steps": 25, "lr": 3e-4, "seed": 167, "reward_switch_at": 150, "reward_switch_to": _PLUS,
        "each_step": _PLUS.each_step},
    # KL blow-up from a sign bug, sudden cause: beta 0.04 from step 1, -0.2 from the start of step 200 (the loss pays
    # for moving away from the reference); constant lr 1e-4; Llama seed 3, 2 prompts x 4, 400 steps, logging every step
    "llamas3-2prompt-4gen-negbeta200-constlr1e-4-400": {
        "model": "llama", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 168, "each_step": beta_from(200, -0.2), "config": {"lr_scheduler_type": "constant"}},
    # added after the first six ran (written before running them): the reference noise of 0.5 x std only doubled
    # the kl, positive-only advantages moved only the loss, and the '+' bonus was never earned (see the README).
    # A wrong reference model, sudden and gross: beta 0.1; at the start of step 200 every weight tensor of the
    # reference model gets Gaussian noise of 3 x its own std (seeded); constant lr 1e-4; GPT-2 seed 3, 2 prompts x 4,
    # 400 steps, logging every step, evaluation on 16 prompts every 25
    "gpt2s3-2prompt-4gen-beta01-refnoise3x200-constlr1e-4-400": {
        "model": "gpt2", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 169, "each_step": corrupt_reference_at(200, 3.0, seed=169),
        "config": {"beta": 0.1, "lr_scheduler_type": "constant"}},
    # sharper samples than the policy scores, sudden cause: from the start of step 200 the generation config samples
    # at temperature 0.3 while the training pass keeps scoring at 1.0; constant lr 1e-4; Llama seed 3, 2 prompts x 6,
    # 400 steps, logging every step
    "llamas3-2prompt-6gen-gentemp03only200-constlr1e-4-400": {
        "model": "llama", "model_seed": 3, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 170, "each_step": generation_only_temperature_at(200, 0.3),
        "config": {"lr_scheduler_type": "constant"}},
    # a decoding-config regression, sudden: from the start of step 200 the generation config has min_new_tokens=10
    # (the stop token suppressed until 10 tokens are written); completions up to 16 tokens; Qwen2 seed 3,
    # 2 prompts x 4, 400 steps, logging every 2
    "qwen2s3-2prompt-4gen-minnew10at200-len16-400-log2": {
        "model": "qwen2", "model_seed": 3, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 2,
        "lr": 5e-5, "seed": 171, "max_len": 16, "each_step": min_new_tokens_at(200, 10)},
    # added after the second batch (written before running it): the generation-only temperature 0.3 raised the
    # logged entropy by a tenth and nothing else (see the README). Reward hacking through a verifier bug, sudden:
    # from the start of step 150 the paid reward scores an empty completion (the stop token alone) 1.0, anything
    # else by its digit overlap; the accuracy logged beside it with weight 0 (rewards/accuracy); lr 2e-4; GPT-2
    # seed 3, 2 prompts x 6, 400 steps, logging every step
    "gpt2s3-2prompt-6gen-emptypasses150-lr2e-4-400": {
        "model": "gpt2", "model_seed": 3, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 2e-4, "seed": 172, "reward_switch_at": 150, "reward_switch_to": empty_passes},
}


# run once and not stored: the failure its spec meant did not come (README, tenth pass)
NOT_STORED: tuple[str, ...] = ("llamas3-2prompt-6gen-posadvonly200-constlr1e-4-400",
                                "gpt2s3-2prompt-4gen-beta01-refnoise200-constlr1e-4-400",
                                "qwen2s3-1prompt-12gen-plusbonusramp-lr3e-4-450",
                                "llamas3-2prompt-6gen-gentemp03only200-constlr1e-4-400")


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
