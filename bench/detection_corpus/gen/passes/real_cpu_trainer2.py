"""Second pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu2``): settings and failure
mechanisms the first pass (``real_cpu_trainer.py``, source ``rlcockpit_trainer_cpu``) lacks.

Settings: other algorithms (RLOO, REINFORCE++, GRPO with ``loss_agg_mode=seq-mean-token-mean`` and DAPO's
clip-higher), the corpus's random-init Llama besides GPT-2, validation every 5/10/20 steps on a 32-64 prompt
subset, 1-2 prompts per step. Failure mechanisms, switched on at the start of their step by the corpus driver
(:class:`real_trainer.Fault`): the rollout temperature cut from 1.0 to 0.2, the training reward swapped for one that
pays for length (validation keeps scoring the task), a learning-rate jump on Llama under REINFORCE++. Each run goes
through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu2/<name>/`` and labelled by reading it (README, fourth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer2.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer2.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_trainer import likes_nines, longer_is_better

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu2"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


SPECS: dict[str, dict[str, Any]] = {
    # healthy: RLOO, 2 prompts x 4 samples, 600 steps, validation on 64 prompts every 10 steps
    "gpt2-2prompt-rloo-600-val10": {"steps": 600, "seed": 41, "model": "gpt2", "overrides": _batch(
        2, 4, "algorithm.adv_estimator=rloo", "trainer.test_freq=10", "data.val_max_samples=64")},
    # healthy: GRPO with seq-mean-token-mean and clip-higher 0.28 on Llama, 1 prompt x 6, validation every 5 (32)
    "llama-1prompt-seqmean-cliphigh-300-val5": {"steps": 300, "seed": 42, "model": "llama", "overrides": _batch(
        1, 6, "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
        "actor_rollout_ref.actor.clip_ratio_high=0.28", "trainer.test_freq=5", "data.val_max_samples=32")},
    # rollout temperature 1.0 -> 0.2 from step 250 (sampling and the training pass's log-probs both use it)
    "gpt2-2prompt-temp02-400-val20": {"steps": 400, "seed": 43, "model": "gpt2", "overrides": _batch(
        2, 4, "trainer.test_freq=20", "data.val_max_samples=64"),
        "fault": {"kind": "lr_jump", "step": 250, "params": {"set": {"rollout.temperature": 0.2}}}},
    # the training reward pays for length from step 200 (validation keeps the task's score); up to 16 tokens.
    # Run once and not stored: never learned (length stayed 3), the score just fell to ~0 with zero variance (README)
    "gpt2-1prompt-lenreward-500-val25": {"steps": 500, "seed": 44, "model": "gpt2", "overrides": _batch(
        1, 8, "data.max_response_length=16", "trainer.test_freq=25", "data.val_max_samples=64"),
        "fault": {"kind": "reward_switch", "step": 200, "params": {"fn": longer_is_better}}},
    # REINFORCE++ on Llama, 2 prompts x 4, validation every 10; learning rate x100 from step 150
    "llama-2prompt-rpp-lr100-300-val10": {"steps": 300, "seed": 45, "model": "llama", "overrides": _batch(
        2, 4, "algorithm.adv_estimator=reinforce_plus_plus", "trainer.test_freq=10", "data.val_max_samples=64"),
        "fault": {"kind": "lr_jump", "step": 150, "params": {"factor": 100}}},
    # reward hacking: from step 200 a biased reward pays for nines (likes_nines; validation keeps the task's score);
    # learning rate 3e-4 for the whole run; 1 prompt x 8, validation every 10
    "gpt2-1prompt-nines-lr3e-4-450-val10": {"steps": 450, "seed": 46, "model": "gpt2", "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10", "data.val_max_samples=64"),
        "fault": {"kind": "reward_switch", "step": 200, "params": {"fn": likes_nines}}},
    # healthy control of the run above: the same settings and seed, lr 3e-4, no reward switch
    "gpt2-1prompt-lr3e-4-450-val10": {"steps": 450, "seed": 46, "model": "gpt2", "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10", "data.val_max_samples=64")},
}


if __name__ == "__main__":
    main(SPECS, OUT)
