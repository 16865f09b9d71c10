"""Fifth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings3``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings``, ``trl_cpu_settings2``) has, made as a held-out source.

Settings: other base models (the BPE Qwen2 of :func:`real_trainer.bpe_model_dir`; GPT-2 and Llama from model seed
1), 1-3 prompts per step with 2-8 completions, logging every 1/2/4/7 steps, evaluation every 20/50 steps, no KL
term (``beta=0``, TRL's default: no reference model, no ``kl`` logged), runs of 500-700 steps. Failure mechanisms,
switched on by a ``TrainerCallback`` at ``on_step_begin`` of the step written in the spec (committed before the
run): the learning rate x300 on Qwen2, rewards x300 on two steps with ``scale_rewards="none"`` under Dr. GRPO, the
stop token lost, the sampling/scoring temperature cut to 0.25 on Llama, gradient clipping off with the learning rate
x30, a biased reward paying for sevens (accuracy logged beside it with weight 0). Each run goes through
:func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings3/<name>/`` and labelled by reading it (README, fifth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl3.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl3.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trl import main

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings3"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: the BPE Qwen2, 3 prompts x 2 completions, 600 steps, logging every 7
    "qwen2-3prompt-2gen-600-log7": {"model": "qwen2", "batch": 6, "num_generations": 2, "steps": 600,
                                    "logging_steps": 7, "lr": 5e-5, "seed": 61},
    # healthy: Llama from model seed 1, 1 prompt x 5, 500 steps, logging every 4, evaluation on 16 prompts every 20
    "llamas1-1prompt-5gen-500-log4-eval20": {"model": "llama", "model_seed": 1, "batch": 5, "num_generations": 5,
                                             "steps": 500, "logging_steps": 4, "eval_steps": 20, "lr": 5e-5,
                                             "seed": 62},
    # healthy: GPT-2 from model seed 1, 2 prompts x 3, no KL term (beta 0), 700 steps, logging every 2
    "gpt2s1-2prompt-beta0-700-log2": {"model": "gpt2", "model_seed": 1, "batch": 6, "num_generations": 3,
                                      "steps": 700, "logging_steps": 2, "lr": 5e-5, "seed": 63,
                                      "config": {"beta": 0.0}},
    # collapse: learning rate x300 from step 250; the BPE Qwen2, 2 prompts x 4, logging every step
    "qwen2-2prompt-lr300-400": {"model": "qwen2", "batch": 8, "num_generations": 4, "steps": 400,
                                "logging_steps": 1, "lr": 5e-5, "seed": 64, "lr_jump_at": 250, "lr_factor": 300},
    # gradient spike: rewards x300 on steps 200 and 207, Dr. GRPO loss with scale_rewards="none"; GPT-2 from model
    # seed 1, 1 prompt x 8, logging every step
    "gpt2s1-1prompt-drgrpo-rewardx300-400": {"model": "gpt2", "model_seed": 1, "batch": 8, "num_generations": 8,
                                             "steps": 400, "logging_steps": 1, "lr": 5e-5, "seed": 65,
                                             "reward_scale_steps": [200, 207], "reward_scale": 300.0,
                                             "config": {"loss_type": "dr_grpo", "scale_rewards": "none"}},
    # the stop token lost from step 220 (up to 16 tokens); Llama from model seed 1, 2 prompts x 3, logging every 4
    "llamas1-2prompt-eos-lost-400-log4": {"model": "llama", "model_seed": 1, "batch": 6, "num_generations": 3,
                                          "steps": 400, "logging_steps": 4, "lr": 5e-5, "seed": 66, "max_len": 16,
                                          "eos_off_at": 220},
    # sampling and scoring temperature 1.0 -> 0.25 from step 250; Llama, 1 prompt x 6, logging every 2,
    # evaluation every 50
    "llama-1prompt-temp025-400-log2": {"model": "llama", "batch": 6, "num_generations": 6, "steps": 400,
                                       "logging_steps": 2, "eval_steps": 50, "lr": 5e-5, "seed": 67,
                                       "temperature_at": 250, "temperature": 0.25},
    # gradient clipping off (max_grad_norm 1e9) and learning rate x30 from step 250; the BPE Qwen2, 1 prompt x 6,
    # logging every step
    "qwen2-1prompt-noclip-lr30-400": {"model": "qwen2", "batch": 6, "num_generations": 6, "steps": 400,
                                      "logging_steps": 1, "lr": 5e-5, "seed": 68, "lr_jump_at": 250, "lr_factor": 30,
                                      "clip_off_at": 250},
    # reward hacking: from step 150 the training reward is likes_sevens; accuracy logged beside it with weight 0;
    # lr 3e-4 all run; the BPE Qwen2, 2 prompts x 4, logging every 2, evaluation every 25
    "qwen2-2prompt-sevens-lr3e-4-450-log2": {"model": "qwen2", "batch": 8, "num_generations": 4, "steps": 450,
                                             "logging_steps": 2, "eval_steps": 25, "lr": 3e-4, "seed": 69,
                                             "reward_switch_at": 150, "reward_switch_to": "likes_sevens"},
    # added after the runs above (written before running it): gradient clipping off with the learning rate x1000
    # from step 200 (x30 above made a collapse, not a diverging loss); Llama from model seed 1, 2 prompts x 4,
    # logging every step
    "llamas1-2prompt-noclip-lr1000-300": {"model": "llama", "model_seed": 1, "batch": 8, "num_generations": 4,
                                          "steps": 300, "logging_steps": 1, "lr": 5e-5, "seed": 70,
                                          "lr_jump_at": 200, "lr_factor": 1000, "clip_off_at": 200},
}


if __name__ == "__main__":
    main(SPECS, OUT)
