"""Second pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings2``): settings and failure mechanisms
the first pass (``real_cpu_trl.py``, source ``trl_cpu_settings``) lacks.

Settings: Dr. GRPO (``loss_type="dr_grpo"``, ``scale_rewards="none"``) and BNPO losses, logging every 3 steps,
evaluation every 10 steps, 1-2 prompts per step. Failure mechanisms: an entropy penalty (a negative
``entropy_coef``) switched on mid-run, and the training reward swapped mid-run for one that pays for length, with
the task's accuracy logged beside it as a second reward function of weight 0 (logged, never optimised). Each run
goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings2/<name>/`` and labelled by reading it (README, fourth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl2.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl2.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trl import main

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings2"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: Dr. GRPO loss, no reward scaling, 1 prompt x 8 completions, 600 steps, logging every 3
    "gpt2-1prompt-drgrpo-600-log3": {"model": "gpt2", "batch": 8, "num_generations": 8, "steps": 600,
                                     "logging_steps": 3, "lr": 5e-5, "seed": 31,
                                     "config": {"loss_type": "dr_grpo", "scale_rewards": "none"}},
    # healthy: BNPO loss, 2 prompts x 3 completions, logging every step, evaluation on 16 prompts every 10 steps
    "llama-2prompt-bnpo-300-eval10": {"model": "llama", "batch": 6, "num_generations": 3, "steps": 300,
                                      "logging_steps": 1, "eval_steps": 10, "lr": 5e-5, "seed": 32,
                                      "config": {"loss_type": "bnpo"}},
    # entropy penalty: entropy_coef -0.5 from step 250 (2 prompts x 4, logging every 2, evaluation every 50).
    # Run once and not stored: entropy drifted 1.62 -> 1.45 in 200 steps, no failure one can name (README)
    "gpt2-2prompt-negentropy-450-log2": {"model": "gpt2", "batch": 8, "num_generations": 4, "steps": 450,
                                         "logging_steps": 2, "eval_steps": 50, "lr": 5e-5, "seed": 33,
                                         "entropy_coef_at": 250, "entropy_coef": -0.5},
    # as above with entropy_coef -5 from step 250 (-0.5 moved the entropy only 1.62 -> 1.45 in 200 steps: README).
    # Run once and not stored: entropy 1.62 -> 1.25 in 200 steps, a drift, not a collapse (README)
    "gpt2-2prompt-negentropy5-450-log2": {"model": "gpt2", "batch": 8, "num_generations": 4, "steps": 450,
                                          "logging_steps": 2, "eval_steps": 50, "lr": 5e-5, "seed": 33,
                                          "entropy_coef_at": 250, "entropy_coef": -5.0},
    # reward hacking: from step 150 the training reward pays for length (longer_is_better); accuracy logged beside
    # it with weight 0; 1 prompt x 6, up to 16 tokens, logging every step, evaluation every 25.
    # Run once and not stored: never learned (length stayed 3 tokens), the reward just fell to ~0 (README)
    "llama-1prompt-lenreward-400": {"model": "llama", "batch": 6, "num_generations": 6, "steps": 400,
                                    "logging_steps": 1, "eval_steps": 25, "lr": 5e-5, "seed": 34, "max_len": 16,
                                    "reward_switch_at": 150},
    # sampling and scoring temperature 1.0 -> 0.2 from step 250; 1 prompt x 8, logging every 5, evaluation every 50
    "gpt2-1prompt-temp02-400-log5": {"model": "gpt2", "batch": 8, "num_generations": 8, "steps": 400,
                                     "logging_steps": 5, "eval_steps": 50, "lr": 5e-5, "seed": 36,
                                     "temperature_at": 250, "temperature": 0.2},
    # reward hacking: from step 150 a biased reward pays for nines (likes_nines); accuracy logged beside it with weight
    # 0; learning rate 3e-4 for the whole run (5e-5 learns nothing visible in hundreds of steps); 2 prompts x 4,
    # logging every step, evaluation every 25
    "gpt2-2prompt-nines-lr3e-4-400": {"model": "gpt2", "batch": 8, "num_generations": 4, "steps": 400,
                                      "logging_steps": 1, "eval_steps": 25, "lr": 3e-4, "seed": 35,
                                      "reward_switch_at": 150, "reward_switch_to": "likes_nines"},
    # healthy control of the run above: the same settings and seed, lr 3e-4, no reward switch
    "gpt2-2prompt-lr3e-4-400": {"model": "gpt2", "batch": 8, "num_generations": 4, "steps": 400,
                                "logging_steps": 1, "eval_steps": 25, "lr": 3e-4, "seed": 35},
}


if __name__ == "__main__":
    main(SPECS, OUT)
