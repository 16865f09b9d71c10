"""Sixth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings4``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings3``) has, made as a held-out source.

Settings: 12-16 completions per prompt, completions up to 24 tokens, top-k / top-p sampling, ``beta=0.04`` with
``sync_ref_model`` (the reference model mixed towards the policy every 50 steps), ``num_iterations=2`` (each
generation trained on twice: off-policy clipping), an 800-step run logging every step. Failure mechanisms that
BUILD UP (the issue's slow failures), applied at every step by the spec's ``each_step`` hook (committed before the
run): the learning rate ramping linearly from 1x to 60x, the stop token's logit lowered step by step (responses
lengthen, truncation creeps up), a bonus for sevens whose weight ramps from 0 up (accuracy logged beside the paid
reward with weight 0). Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings4/<name>/`` and labelled by reading it (README, sixth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl4.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl4.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import main
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings4"


def lr_ramp(start: int, end: int, hi: float) -> Any:
    """Before every step, the learning rate is ``ramp(k, start, end, 1, hi)`` x what the schedule gives."""
    state = {"prev": 1.0, "base": None}

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        sched, value = kw["lr_scheduler"], ramp(step, start, end, 1.0, hi)
        state["base"] = state["base"] or list(sched.base_lrs)
        sched.base_lrs = [b * value for b in state["base"]]
        for g in kw["optimizer"].param_groups:
            g["lr"] *= value / state["prev"]
        state["prev"] = value

    return each_step


def eos_bias_ramp(start: int, end: int, hi: float) -> Any:
    """Before every step, the stop token's logit in generation is lowered by ``ramp(k, start, end, 0, hi)``
    (``generation_config.sequence_bias``; a decoding-config change that creeps up)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        bias = ramp(step, start, end, 0.0, hi)
        if bias > 0:
            trainer.generation_config.sequence_bias = {(trainer.processing_class.eos_token_id,): -bias}

    return each_step


def temperature_ramp(start: int, end: int, lo: float, every: int = 10) -> Any:
    """Every ``every`` steps from ``start`` to ``end``, sample and score at ``ramp(k, start, end, 1, lo)``: TRL bakes
    the temperature into the fused LM head at init, so the head is patched again with the new value (as
    ``real_cpu_trl.run``'s ``temperature_at`` does once)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step <= start or step > end or (step - start) % every:
            return
        from trl.trainer.utils import add_fused_lm_head

        t = ramp(step, start, end, 1.0, lo)
        trainer.temperature = t
        trainer.generation_config.temperature = t
        add_fused_lm_head(trainer.model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32,
                          outputs=("log_probs", "entropy"))
        if trainer.ref_model is not None:
            add_fused_lm_head(trainer.ref_model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32)

    return each_step


class SevensRamp:
    """The paid reward: the task's partial credit plus ``weight`` x (sevens in the answer, up to three) / 3, the
    weight ramping from 0 at ``start`` to ``hi`` at ``end``."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.weight = start, end, hi, 0.0
        self.__name__ = "sevens_ramp"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        return digit_overlap(data_source, solution_str, ground_truth) + self.weight * min(3, solution_str.count("7")) / 3

    def each_step(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.weight = ramp(step, self.start, self.end, 0.0, self.hi)


_SEVENS = SevensRamp(150, 300, 1.5)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: GPT-2, 1 prompt x 16 completions, up to 24 tokens, top-k 20 and top-p 0.9, 300 steps, logging every 2
    "gpt2-1prompt-16gen-topk20-topp09-len24-300-log2": {
        "model": "gpt2", "batch": 16, "num_generations": 16, "steps": 300, "logging_steps": 2, "lr": 5e-5,
        "seed": 81, "max_len": 24, "config": {"top_k": 20, "top_p": 0.9}},
    # healthy: beta 0.04 with sync_ref_model (every 50 steps, mixup alpha 0.6); Llama, 2 prompts x 6 completions,
    # 400 steps, logging every step, evaluation every 40
    "llama-2prompt-12gen-syncref50-400": {
        "model": "llama", "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1, "eval_steps": 40,
        "lr": 5e-5, "seed": 82, "config": {"beta": 0.04, "sync_ref_model": True, "ref_model_sync_steps": 50,
                                            "ref_model_mixup_alpha": 0.6}},
    # healthy: num_iterations 2 (each generation trained on twice, off-policy clipping); Qwen2, 1 prompt x 4,
    # 800 steps, logging every step
    "qwen2-1prompt-4gen-iter2-800-log1": {
        "model": "qwen2", "batch": 4, "num_generations": 4, "steps": 800, "logging_steps": 1, "lr": 5e-5,
        "seed": 83, "config": {"num_iterations": 2}},
    # slow: the learning rate ramps linearly from 1x at step 200 to 60x at step 350; Llama seed 1, 1 prompt x 12,
    # logging every step
    "llamas1-1prompt-12gen-lrramp60-450": {
        "model": "llama", "model_seed": 1, "batch": 12, "num_generations": 12, "steps": 450, "logging_steps": 1,
        "lr": 5e-5, "seed": 84, "each_step": lr_ramp(200, 350, 60.0)},
    # slow: the stop token's logit lowered step by step, 0 at step 150 to -8 at step 330 (responses lengthen,
    # truncation at 12 tokens creeps up); GPT-2 seed 1, 2 prompts x 4, logging every 2
    "gpt2s1-2prompt-eosbiasramp-len12-400-log2": {
        "model": "gpt2", "model_seed": 1, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 2,
        "lr": 5e-5, "seed": 85, "max_len": 12, "each_step": eos_bias_ramp(150, 330, 8.0)},
    # slow: from step 150 a bonus per '7' joins the paid reward, its weight ramping 0 -> 1.5 at step 300; accuracy
    # logged beside it with weight 0; lr 3e-4; Qwen2, 1 prompt x 12, logging every step, evaluation every 25
    "qwen2-1prompt-12gen-sevensramp-lr3e-4-450": {
        "model": "qwen2", "batch": 12, "num_generations": 12, "steps": 450, "logging_steps": 1, "eval_steps": 25,
        "lr": 3e-4, "seed": 86, "reward_switch_at": 150, "reward_switch_to": _SEVENS, "each_step": _SEVENS.each_step},
    # added after the runs above (written before running it): sampling and scoring temperature lowered step by step,
    # every 10 steps from 1.0 at step 200 to 0.2 at step 350 (entropy drifting down); Qwen2, 1 prompt x 8, logging
    # every step
    "qwen2-1prompt-8gen-tempramp02-400": {
        "model": "qwen2", "batch": 8, "num_generations": 8, "steps": 400, "logging_steps": 1, "lr": 5e-5,
        "seed": 87, "each_step": temperature_ramp(200, 350, 0.2)},
}


if __name__ == "__main__":
    main(SPECS, OUT)
