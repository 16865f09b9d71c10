"""Seventh pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings5``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings4``) has, made as a held-out source.

Settings: ``gradient_accumulation_steps`` 2 and 4 (one generation of 8 prompts x 4 completions split over 4
micro-batches per optimizer step), ``loss_type`` ``dr_grpo`` / ``bnpo`` / ``dapo`` (TRL's default) with
``scale_rewards=False``, DAPO's ``epsilon_high=0.28`` with ``mask_truncated_completions=True``, logging every 5
steps; seeds 101-109. Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed
before the run): a bonus for characters past the answer whose weight ramps up, the task's accuracy logged beside
the paid reward with weight 0 (reward hacking through length), the stop token's logit raised step by step in
generation (responses collapse to the stop token alone), the sampling and scoring temperature cut to 0.3 (entropy
collapse), rewards x300 on two steps under ``bnpo`` without reward scaling (gradient spike), the learning rate
ramping to 100x under ``dr_grpo`` with gradient accumulation (collapse). Each run goes through
:func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings5/<name>/`` and labelled by reading it (README, seventh pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl5.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl5.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import main
from real_cpu_trl4 import lr_ramp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings5"


class LengthRamp:
    """The paid reward: the task's digit overlap plus ``weight`` x min(1, characters past the answer / 6), the weight
    ramping from 0 at ``start`` to ``hi`` at ``end`` (the accuracy is logged beside it with weight 0)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.weight = start, end, hi, 0.0
        self.__name__ = "length_ramp"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        extra = max(0, len(solution_str.strip()) - len(str(ground_truth)))
        return digit_overlap(data_source, solution_str, ground_truth) + self.weight * min(1.0, extra / 6)

    def each_step(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.weight = ramp(step, self.start, self.end, 0.0, self.hi)


def eos_logit_ramp(start: int, end: int, shift: float) -> Any:
    """Before every step, the stop token's logit in generation is shifted by ``ramp(k, start, end, 0, shift)``
    (``generation_config.sequence_bias``; positive: the model stops sooner). The training pass does not see it."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        value = ramp(step, start, end, 0.0, shift)
        if value:
            trainer.generation_config.sequence_bias = {(trainer.processing_class.eos_token_id,): value}

    return each_step


_LENGTH = LengthRamp(150, 300, 1.0)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: GPT-2, 8 prompts x 4 completions a step (per-device batch 8, gradient_accumulation_steps 4: one
    # generation of 32 split over 4 micro-batches), loss_type dr_grpo, scale_rewards False, 200 steps, logging every 5
    "gpt2-8prompt-4gen-gradacc4-drgrpo-noscale-200-log5": {
        "model": "gpt2", "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 5, "lr": 5e-5,
        "seed": 101, "config": {"gradient_accumulation_steps": 4, "loss_type": "dr_grpo", "scale_rewards": False}},
    # healthy: loss_type bnpo; Llama, 1 prompt x 8, 400 steps, logging every step, evaluation every 50
    "llama-1prompt-8gen-bnpo-400-eval50": {
        "model": "llama", "batch": 8, "num_generations": 8, "steps": 400, "logging_steps": 1, "eval_steps": 50,
        "lr": 5e-5, "seed": 102, "config": {"loss_type": "bnpo"}},
    # healthy: DAPO loss (TRL's default) with clip-higher epsilon_high 0.28 and mask_truncated_completions; Qwen2,
    # 2 prompts x 4, up to 8 tokens, 400 steps, logging every step
    "qwen2-2prompt-dapo-epshigh028-masktrunc-400": {
        "model": "qwen2", "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1, "lr": 5e-5,
        "seed": 103, "config": {"loss_type": "dapo", "epsilon_high": 0.28, "mask_truncated_completions": True}},
    # healthy: Llama seed 1, 1 prompt x 4 per micro-batch with gradient_accumulation_steps 2 (2 prompts a step),
    # scale_rewards False, 500 steps, logging every 5
    "llamas1-2prompt-4gen-gradacc2-noscale-500-log5": {
        "model": "llama", "model_seed": 1, "batch": 4, "num_generations": 4, "steps": 500, "logging_steps": 5,
        "lr": 5e-5, "seed": 104, "config": {"gradient_accumulation_steps": 2, "scale_rewards": False}},
    # slow reward hacking through length: from step 150 the paid reward is the task's digit overlap plus
    # w x min(1, characters past the answer / 6), w ramping 0 -> 1.0 at step 300; the accuracy logged beside it with
    # weight 0 (rewards/accuracy); lr 3e-4; GPT-2, 1 prompt x 8, up to 16 tokens, logging every step, evaluation
    # every 25
    "gpt2-1prompt-8gen-lenbonusramp-lr3e-4-len16-450": {
        "model": "gpt2", "batch": 8, "num_generations": 8, "steps": 450, "logging_steps": 1, "eval_steps": 25,
        "lr": 3e-4, "seed": 105, "max_len": 16, "reward_switch_at": 150, "reward_switch_to": _LENGTH,
        "each_step": _LENGTH.each_step},
    # slow collapse to the stop token alone: the stop token's logit in generation raised step by step, 0 at step
    # 150 to +8 at step 300 (then stays); Llama, 2 prompts x 4, 400 steps, logging every 2
    "llama-2prompt-eosboostramp8-400-log2": {
        "model": "llama", "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 2, "lr": 5e-5,
        "seed": 106, "each_step": eos_logit_ramp(150, 300, 8.0)},
    # sudden entropy collapse: sampling and scoring temperature 1.0 -> 0.3 from step 250; DAPO loss with
    # epsilon_high 0.28; GPT-2 seed 1, 2 prompts x 4, 400 steps, logging every 5
    "gpt2s1-2prompt-dapo-epshigh-temp03-400-log5": {
        "model": "gpt2", "model_seed": 1, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 5,
        "lr": 5e-5, "seed": 107, "temperature_at": 250, "temperature": 0.3,
        "config": {"loss_type": "dapo", "epsilon_high": 0.28}},
    # sudden gradient spike: rewards x300 at steps 230 and 231, loss_type bnpo with scale_rewards False
    # (max_grad_norm 1.0 stays); Llama seed 1, 2 prompts x 4, 400 steps, logging every step
    "llamas1-2prompt-bnpo-noscale-rewardx300-400": {
        "model": "llama", "model_seed": 1, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 108, "reward_scale_steps": [230, 231], "reward_scale": 300.0,
        "config": {"loss_type": "bnpo", "scale_rewards": False}},
    # slow collapse from an lr ramp: learning rate 1x at step 200 -> 100x at step 320 (then stays, on TRL's
    # linear decay); loss_type dr_grpo, gradient_accumulation_steps 2 (per-device 4 = 1 prompt x 4: 2 prompts a
    # step); Qwen2, 400 steps, logging every step
    "qwen2-2prompt-drgrpo-gradacc2-lrramp100-400": {
        "model": "qwen2", "batch": 4, "num_generations": 4, "steps": 400, "logging_steps": 1, "lr": 5e-5,
        "seed": 109, "each_step": lr_ramp(200, 320, 100.0),
        "config": {"loss_type": "dr_grpo", "gradient_accumulation_steps": 2}},
}


if __name__ == "__main__":
    main(SPECS, OUT)
