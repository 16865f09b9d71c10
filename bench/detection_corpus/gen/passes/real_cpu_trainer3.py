"""Fifth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu3``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu``, ``rlcockpit_trainer_cpu2``) has, made as a
held-out source (nothing was tuned on it).

Settings: other base models (a random-init Qwen2 with the corpus BPE tokenizer, 128 wide and 3 layers; GPT-2 and
Llama built from model seed 1 instead of 0, i.e. another tokenizer sample and init; the built-in tiny Qwen2 with its
character tokenizer at half its default size, scored by the preset's exact-match reward), 1, 2 and 3 prompts per
step with 2-8 samples, validation every 4/7/10/15/25 steps (on all 200 test prompts of the built-in task:
``data.val_max_samples`` applies to ``data.val_files`` only, so the value the specs pass has no effect), runs of
500-700 steps. Failure mechanisms, switched on
at the start of the step written in the spec (committed before the run) by the corpus driver
(:class:`real_trainer.Fault`): rewards x300 on two steps under Dr. GRPO advantages (no std normalisation), gradient
clipping off with the learning rate x30, the stop token lost, the rollout temperature cut to 0.25 on Llama, a
biased reward paying for sevens at lr 3e-4. Each run goes through :func:`real_cpu_trainer.run` (health off,
TensorBoard sink); the event file is stored under ``bench/detection_corpus/real/rlcockpit_trainer_cpu3/<name>/`` and
labelled by reading it (README, fifth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer3.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer3.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_trainer import likes_sevens

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu3"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


SPECS: dict[str, dict[str, Any]] = {
    # healthy: the BPE Qwen2, 1 prompt x 6, 600 steps, validation every 7 steps
    "qwen2-1prompt-600-val7": {"steps": 600, "seed": 51, "model": "qwen2", "overrides": _batch(
        1, 6, "trainer.test_freq=7", "data.val_max_samples=32")},
    # healthy: GPT-2 from model seed 1, 3 prompts x 2 samples, 500 steps, validation every 4 steps
    "gpt2s1-3prompt-2sample-500-val4": {"steps": 500, "seed": 52, "model": "gpt2", "model_seed": 1,
                                        "overrides": _batch(3, 2, "trainer.test_freq=4", "data.val_max_samples=16")},
    # healthy: the built-in tiny Qwen2 (char tokenizer, 128 wide, 2 layers) with the preset's exact-match reward,
    # 2 prompts x 4, 700 steps, validation every 25
    "tiny-2prompt-700-val25": {"steps": 700, "seed": 53, "model": "tiny", "overrides": _batch(
        2, 4, "actor_rollout_ref.model.tiny.hidden_size=128", "actor_rollout_ref.model.tiny.num_layers=2",
        "actor_rollout_ref.model.tiny.intermediate_size=256", "trainer.test_freq=25", "data.val_max_samples=64")},
    # gradient spike: rewards x300 on steps 220 and 226 (a scale bug in one reward shard); Dr. GRPO advantages
    # (no std normalisation) keep the scale; Llama from model seed 1, 2 prompts x 4, validation every 10
    "llamas1-2prompt-drgrpo-rewardx300-400-val10": {"steps": 400, "seed": 54, "model": "llama", "model_seed": 1,
                                                    "overrides": _batch(2, 4, "algorithm.norm_adv_by_std_in_grpo=false",
                                                                        "trainer.test_freq=10",
                                                                        "data.val_max_samples=32"),
                                                    "fault": {"kind": "reward_scale", "step": 220,
                                                              "params": {"steps": [220, 226], "factor": 300.0}}},
    # gradient clipping off (actor.grad_clip 1e9) and learning rate x30 from step 250; GPT-2 from model seed 1,
    # 1 prompt x 8, validation every 10
    "gpt2s1-1prompt-noclip-lr30-400-val10": {"steps": 400, "seed": 55, "model": "gpt2", "model_seed": 1,
                                             "overrides": _batch(1, 8, "trainer.test_freq=10",
                                                                 "data.val_max_samples=32"),
                                             "fault": {"kind": "lr_jump", "step": 250,
                                                       "params": {"factor": 30, "set": {"actor.grad_clip": 1e9}}}},
    # the stop token lost from step 260 (responses run to 16 tokens); the BPE Qwen2, 2 prompts x 3, validation
    # every 10
    "qwen2-2prompt-eos-lost-400-val10": {"steps": 400, "seed": 56, "model": "qwen2", "overrides": _batch(
        2, 3, "data.max_response_length=16", "trainer.test_freq=10", "data.val_max_samples=32"),
        "fault": {"kind": "eos_off", "step": 260, "params": {}}},
    # rollout temperature 1.0 -> 0.25 from step 300 (sampling and the training pass's log-probs); Llama from model
    # seed 1, 1 prompt x 8, validation every 15
    "llamas1-1prompt-temp025-450-val15": {"steps": 450, "seed": 57, "model": "llama", "model_seed": 1,
                                          "overrides": _batch(1, 8, "trainer.test_freq=15", "data.val_max_samples=32"),
                                          "fault": {"kind": "lr_jump", "step": 300,
                                                    "params": {"set": {"rollout.temperature": 0.25}}}},
    # reward hacking: from step 200 the training reward is likes_sevens (validation keeps the task's score);
    # lr 3e-4 all run; the BPE Qwen2, 2 prompts x 4, validation every 10
    "qwen2-2prompt-sevens-lr3e-4-450-val10": {"steps": 450, "seed": 58, "model": "qwen2", "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10", "data.val_max_samples=32"),
        "fault": {"kind": "reward_switch", "step": 200, "params": {"fn": likes_sevens}}},
    # added after the runs above (written before running it): gradient clipping off with the learning rate x1000
    # from step 200 (x30 above made a collapse, not a diverging loss); Llama from model seed 1, 2 prompts x 4
    "llamas1-2prompt-noclip-lr1000-300-val10": {"steps": 300, "seed": 60, "model": "llama", "model_seed": 1,
                                                "overrides": _batch(2, 4, "trainer.test_freq=10",
                                                                    "data.val_max_samples=32"),
                                                "fault": {"kind": "lr_jump", "step": 200,
                                                          "params": {"factor": 1000,
                                                                     "set": {"actor.grad_clip": 1e9}}}},
}


if __name__ == "__main__":
    main(SPECS, OUT)
