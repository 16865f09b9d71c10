"""Twelfth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings8``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings7``) has, made as a held-out source
(nothing was tuned on it, no detector ran on it).

Settings: ``loss_type="bnpo"`` with **``num_iterations=2`` and ``steps_per_generation=2`` together** and the
**bias-corrected KL** (``use_bias_correction_kl``), evaluation every 20; ``loss_type="dr_grpo"`` with
**``scale_rewards="batch"``** on one prompt a step, logging every 4, evaluation every 40 with
**``num_generations_eval=2``**; a constant lr schedule; models built from **model seed 4**; seeds 191-200.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**grader that starts paying format only** (any all-digit completion scores 1.0; the accuracy logged beside the paid
reward with weight 0); the **generation config's temperature raised to 2.0** while the training pass scores at 1.0
(the tenth pass lowered it to 0.3 and nothing showed); a **weight-decay sign bug** (the optimizer's ``weight_decay``
-200 from a step: every step multiplies the weights by 1 + lr x 200). Added after the first batch ran (each committed
before it ran): a healthy DAPO run, a data loader stuck on one batch, a reward server whose latency ramps up, a
loss-scale bug (isolated gradient spikes) and another run's checkpoint loaded as the reference. Each run goes through
:func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings8/<name>/`` and labelled by reading it (README, twelfth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl8.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl8.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trl import main
from real_cpu_trl7 import generation_only_temperature_at

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings8"


def format_only(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A grader that pays format only: 1.0 for any non-empty all-digit completion, 0.0 otherwise."""
    got = solution_str.strip()
    return 1.0 if got and got.isdigit() else 0.0


def weight_decay_from(start: int, wd: float) -> Any:
    """From step ``start`` every optimizer param group's ``weight_decay`` is ``wd`` (negative: a sign bug, each step
    multiplies every weight by 1 - lr x wd, i.e. grows it)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            for g in kw["optimizer"].param_groups:
                g["weight_decay"] = wd

    return each_step


def stuck_prompts_from(start: int) -> Any:
    """From step ``start`` every generation is made from the prompts of step ``start``'s batch (a data loader whose
    position is reset to the same offset each step: the run trains on the same prompts over and over); evaluation
    keeps its own prompts."""
    state: dict[str, Any] = {"on": False, "kept": None}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if not getattr(trainer, "_corpus_stuck", False):
            inner = trainer._generate_and_score_completions

            def stuck(inputs: Any, *a: Any, **kw_: Any) -> Any:
                if state["on"] and trainer.model.training:
                    if state["kept"] is None:
                        state["kept"] = [dict(x) for x in inputs]
                    inputs = [dict(x) for x in state["kept"]]
                return inner(inputs, *a, **kw_)

            trainer._generate_and_score_completions = stuck
            trainer._corpus_stuck = True
        state["on"] = step >= start

    return each_step


def slow_reward_ramp(start: int, end: int, hi: float) -> Any:
    """Before every step, each call of the reward function (one call per generation batch) first waits
    ``ramp(k, start, end, 0, hi)`` seconds (a reward-model server whose latency keeps growing)."""
    from real_cpu_trainer4 import ramp

    state: dict[str, float] = {"delay": 0.0}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if not getattr(trainer, "_corpus_slow_reward", False):
            import time

            inner = trainer.reward_funcs[0]

            def slow(*a: Any, **kw_: Any) -> Any:
                if state["delay"]:
                    time.sleep(state["delay"])
                return inner(*a, **kw_)

            slow.__name__ = inner.__name__
            trainer.reward_funcs[0] = slow
            trainer._corpus_slow_reward = True
        state["delay"] = ramp(step, start, end, 0.0, hi)

    return each_step


def loss_scaled_at(steps: tuple[int, ...], factor: float) -> Any:
    """At the steps in ``steps`` the loss is ``factor`` x TRL's (a loss-scale bug: the scaler's factor not removed
    before the norm and the clip on those steps); the grad norm logged is the scaled one, max_grad_norm 1.0 bounds
    the update."""
    state = {"on": False}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if not getattr(trainer, "_corpus_lossscale", False):
            inner = trainer.compute_loss

            def scaled(*a: Any, **kw_: Any) -> Any:
                out = inner(*a, **kw_)
                return out * factor if state["on"] else out

            trainer.compute_loss = scaled
            trainer._corpus_lossscale = True
        state["on"] = step in steps

    return each_step


def swap_reference_at(start: int, arch: str, seed: int) -> Any:
    """At the start of step ``start`` the reference model's weights are replaced by another checkpoint of the same
    architecture (the corpus model of ``arch`` built from model seed ``seed``: another run's checkpoint)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == start:
            from real_trainer import bpe_model_dir
            from transformers import AutoModelForCausalLM

            other = AutoModelForCausalLM.from_pretrained(bpe_model_dir(arch, seed))
            trainer.ref_model.load_state_dict(other.state_dict())

    return each_step


SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type bnpo, num_iterations 2 with steps_per_generation 2 (one generation of 4 prompts x 4 reused
    # over 2 optimizer steps, each trained on twice), bias-corrected KL (use_bias_correction_kl, beta 0.04); Llama
    # seed 4, 2 prompts x 4 a step, 400 steps, logging every step, evaluation on 16 prompts every 20
    "llamas4-2prompt-4gen-bnpo-iter2-stepsper2-biaskl-400-eval20": {
        "model": "llama", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 20, "lr": 5e-5, "seed": 191,
        "config": {"loss_type": "bnpo", "num_iterations": 2, "steps_per_generation": 2,
                   "use_bias_correction_kl": True}},
    # healthy, long: loss_type dr_grpo with scale_rewards "batch", one prompt x 8 a step; Qwen2 seed 4, 480 steps,
    # logging every 4, evaluation on 16 prompts every 40 with num_generations_eval 2
    "qwen2s4-1prompt-8gen-drgrpo-batchscale-480-log4-eval40": {
        "model": "qwen2", "model_seed": 4, "batch": 8, "num_generations": 8, "steps": 480, "logging_steps": 4,
        "eval_steps": 40, "lr": 5e-5, "seed": 192,
        "config": {"loss_type": "dr_grpo", "scale_rewards": "batch", "num_generations_eval": 2}},
    # reward hacking through a grader that pays format only, sudden: the paid reward (rewards/train_reward) is the
    # digit overlap to step 149 and from the start of step 150 1.0 for any non-empty all-digit completion (0
    # otherwise); the accuracy logged beside it with weight 0 (rewards/accuracy); constant lr 1e-4; GPT-2 seed 4,
    # 2 prompts x 6, 400 steps, logging every step
    "gpt2s4-2prompt-6gen-formatonly150-constlr1e-4-400": {
        "model": "gpt2", "model_seed": 4, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 193, "reward_switch_at": 150, "reward_switch_to": format_only,
        "config": {"lr_scheduler_type": "constant"}},
    # sampling hotter than the policy scores, sudden cause: from the start of step 200 the generation config samples
    # at temperature 2.0 while the training pass keeps scoring at 1.0; Llama seed 4, 2 prompts x 4, 400 steps,
    # logging every step
    "llamas4-2prompt-4gen-gentemp2at200-400": {
        "model": "llama", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 194, "each_step": generation_only_temperature_at(200, 2.0)},
    # weight-decay sign bug, sudden cause with a compounding effect: constant lr 1e-4, weight_decay 0 to step 199
    # and -200 in every param group from the start of step 200 (each step multiplies the weights by 1.02); Qwen2
    # seed 4, 2 prompts x 4, 400 steps, logging every step
    "qwen2s4-2prompt-4gen-wdneg200at200-constlr1e-4-400": {
        "model": "qwen2", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 195, "each_step": weight_decay_from(200, -200.0),
        "config": {"lr_scheduler_type": "constant"}},
    # added after the first batch ran (written and committed before running it): the first runs took ~30 s, so
    # there is time for more. Healthy, long: loss_type dapo with num_iterations 2 and an off-policy mask
    # (off_policy_mask_threshold 0.5), 4 prompts x 3 a step; GPT-2 seed 4, 600 steps, logging every 2, evaluation on
    # 16 prompts every 50
    "gpt2s4-4prompt-3gen-dapo-iter2-offpolicymask-600-log2-eval50": {
        "model": "gpt2", "model_seed": 4, "batch": 12, "num_generations": 3, "steps": 600, "logging_steps": 2,
        "eval_steps": 50, "lr": 5e-5, "seed": 196,
        "config": {"loss_type": "dapo", "num_iterations": 2, "off_policy_mask_threshold": 0.5}},
    # the data loader stuck on one batch, sudden cause: from the start of step 150 every generation is made from
    # step 150's two prompts (evaluation keeps its own); constant lr 1e-4; Llama seed 4, 2 prompts x 6, 450 steps,
    # logging every step, evaluation on 16 prompts every 25
    "llamas4-2prompt-6gen-stuckloader150-constlr1e-4-450-eval25": {
        "model": "llama", "model_seed": 4, "batch": 12, "num_generations": 6, "steps": 450, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 197, "each_step": stuck_prompts_from(150),
        "config": {"lr_scheduler_type": "constant"}},
    # added after the second batch was written (committed before running it). Throughput drop from a reward server
    # whose latency grows, ramp: each reward call (one a step) first waits a delay ramping 0 s (step 200) -> 0.4 s
    # (step 300), then stays; Qwen2 seed 4, 2 prompts x 4, 400 steps, logging every step
    "qwen2s4-2prompt-4gen-slowrewardramp200-300-400": {
        "model": "qwen2", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 198, "each_step": slow_reward_ramp(200, 300, 0.4)},
    # added after the first 17 runs were stored (written and committed before running these). Gradient spikes from a
    # loss-scale bug, sudden and isolated: at steps 220, 260, 300 and 340 only, the loss is x50 before backward (the
    # logged grad norm x50; max_grad_norm 1.0 stays); Llama seed 4, 2 prompts x 4, 400 steps, logging every step
    "llamas4-2prompt-4gen-lossscale50x-at220-260-300-340-400": {
        "model": "llama", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 199, "each_step": loss_scaled_at((220, 260, 300, 340), 50.0)},
    # another checkpoint loaded as the reference, sudden: beta 0.1; at the start of step 200 the reference's weights
    # are replaced by the corpus GPT-2 of model seed 3 (same architecture, another run); constant lr 1e-4; GPT-2
    # seed 4, 2 prompts x 4, 400 steps, logging every step, evaluation on 16 prompts every 25
    "gpt2s4-2prompt-4gen-beta01-refswap-s3at200-constlr1e-4-400": {
        "model": "gpt2", "model_seed": 4, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 200, "each_step": swap_reference_at(200, "gpt2", 3),
        "config": {"beta": 0.1, "lr_scheduler_type": "constant"}},
}


# run once and not stored: the failure its spec meant did not come (README, twelfth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
