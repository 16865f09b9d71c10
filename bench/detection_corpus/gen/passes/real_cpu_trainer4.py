"""Sixth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu4``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu3``) has, made as a
held-out source (nothing was tuned on it).

Settings: 12-16 samples per prompt, responses up to 24-32 tokens, top-p / top-k sampling, PPO with a critic
(``algorithm.adv_estimator=gae``), the KL penalty in the reward (``algorithm.use_kl_in_reward``), an 800-step run.
Failure mechanisms that BUILD UP (the issue's slow failures), applied at every step by a :class:`Ramp` driver
written in the spec (committed before the run): the learning rate ramping linearly from 1x to 60x, the rollout
temperature lowered step by step from 1.0 to 0.2, a bonus for sevens whose weight ramps from 0 up; and, sudden, the
critic's learning rate x100 with its clipping off (value divergence). Each run goes through
:func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu4/<name>/`` and labelled by reading it (README, sixth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer4.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer4.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu4"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


def ramp(step: int, start: int, end: int, lo: float, hi: float) -> float:
    """``lo`` before ``start``, ``hi`` from ``end``, linear in between."""
    if step <= start:
        return lo
    if step >= end:
        return hi
    return lo + (hi - lo) * (step - start) / (end - start)


class Ramp:
    """A change that builds up: before every step ``k`` sets ``what`` to ``ramp(k, start, end, lo, hi)``.

    ``what``: ``lr`` (a factor on the actor's learning rate), ``critic_lr`` (on the critic's, its clipping off from
    ``start``), ``temperature`` (the rollout temperature, which the
    training pass's log-probs also use), ``sevens`` (the weight of a bonus per '7' added to the task's reward)."""

    def __init__(self, what: str, start: int, end: int, lo: float, hi: float) -> None:
        self.what, self.start, self.end, self.lo, self.hi = what, start, end, lo, hi
        self.prev = lo
        self.base: list[float] | None = None
        self.weight = 0.0

    def before_step(self, st: Any, step: int) -> None:
        value = ramp(step, self.start, self.end, self.lo, self.hi)
        if self.what in ("lr", "critic_lr"):
            opt, sched = (st.actor_opt, st.actor_sched) if self.what == "lr" else (st.critic_opt, st.critic_sched)
            if self.base is None:
                self.base = list(sched.base_lrs)
            sched.base_lrs = [b * value for b in self.base]
            for g in opt.param_groups:
                g["lr"] *= value / self.prev
            if self.what == "critic_lr" and step == self.start:
                st.cfg.critic.grad_clip = 1e9  # the critic's clipping off with the ramp
        elif self.what == "temperature":
            st.cfg.rollout.temperature = value
        elif self.what == "sevens":
            self.weight = value
            if step == self.start:
                st.reward.fn, st.reward.kwargs = self.reward, {}
        self.prev = value

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        """The task's partial credit plus ``weight`` x (sevens in the answer, up to three) / 3."""
        bonus = min(3, solution_str.count("7")) / 3
        return digit_overlap(data_source, solution_str, ground_truth) + self.weight * bonus


SPECS: dict[str, dict[str, Any]] = {
    # healthy: GPT-2, 1 prompt x 16 samples, responses up to 24 tokens, top-p 0.9, 300 steps, validation every 20
    "gpt2-1prompt-16sample-topp09-len24-300-val20": {"steps": 300, "seed": 71, "model": "gpt2", "overrides": _batch(
        1, 16, "data.max_response_length=24", "actor_rollout_ref.rollout.top_p=0.9", "trainer.test_freq=20")},
    # healthy: PPO with a critic (GAE, the critic is a value head on the actor's weights), Llama, 4 prompts x 1,
    # 400 steps, validation every 25
    "llama-gae-4prompt-400-val25": {"steps": 400, "seed": 72, "model": "llama", "overrides": _batch(
        4, 1, "algorithm.adv_estimator=gae", "trainer.test_freq=25")},
    # healthy: the KL penalty in the reward (no KL loss), Qwen2, 1 prompt x 4, top-k 20, responses up to 32 tokens,
    # 800 steps, validation every 50
    "qwen2-klreward-1prompt-topk20-len32-800-val50": {"steps": 800, "seed": 73, "model": "qwen2", "overrides": _batch(
        1, 4, "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.kl_coef=0.02",
        "actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.rollout.top_k=20",
        "data.max_response_length=32", "trainer.test_freq=50")},
    # slow: the learning rate ramps linearly from 1x at step 200 to 60x at step 350 (then stays); GPT-2 seed 1,
    # 1 prompt x 12, validation every 10
    "gpt2s1-1prompt-12sample-lrramp60-450-val10": {"steps": 450, "seed": 74, "model": "gpt2", "model_seed": 1,
                                                   "overrides": _batch(1, 12, "trainer.test_freq=10"),
                                                   "driver": Ramp("lr", 200, 350, 1.0, 60.0)},
    # slow: the rollout temperature lowered step by step from 1.0 at step 200 to 0.2 at step 350; Llama seed 1,
    # 2 prompts x 6, validation every 15
    "llamas1-2prompt-tempramp02-450-val15": {"steps": 450, "seed": 75, "model": "llama", "model_seed": 1,
                                             "overrides": _batch(2, 6, "trainer.test_freq=15"),
                                             "driver": Ramp("temperature", 200, 350, 1.0, 0.2)},
    # slow: from step 150 a bonus per '7' (up to three) joins the task's reward, its weight ramping from 0 to 1.5
    # at step 300; lr 3e-4; Qwen2, 1 prompt x 12, validation every 10 (validation keeps the task's score)
    "qwen2-1prompt-12sample-sevensramp-lr3e-4-450-val10": {"steps": 450, "seed": 76, "model": "qwen2",
                                                           "overrides": _batch(
                                                               1, 12, "actor_rollout_ref.actor.optim.lr=3e-4",
                                                               "trainer.test_freq=10"),
                                                           "driver": Ramp("sevens", 150, 300, 0.0, 1.5)},
    # PPO with a critic: the critic's learning rate x100 and its gradient clipping off from step 250 (value
    # divergence); GPT-2, 4 prompts x 1, validation every 25
    "gpt2-gae-4prompt-criticlr100-400-val25": {"steps": 400, "seed": 77, "model": "gpt2", "overrides": _batch(
        4, 1, "algorithm.adv_estimator=gae", "trainer.test_freq=25"),
        "fault": {"kind": "lr_jump", "step": 250, "params": {"critic_factor": 100, "set": {"critic.grad_clip": 1e9}}}},
    # added after the runs above (written before running it): the critic lr x100 made no value divergence, so the
    # critic's learning rate ramps from 1x at step 200 to 3000x at step 300 with its clipping off from 200 (a slow
    # value divergence); GPT-2, 4 prompts x 1, validation every 25
    "gpt2-gae-4prompt-criticlrramp3000-350-val25": {"steps": 350, "seed": 78, "model": "gpt2", "overrides": _batch(
        4, 1, "algorithm.adv_estimator=gae", "trainer.test_freq=25"), "driver": Ramp("critic_lr", 200, 300, 1.0, 3000.0)},
    # added after the runs above (written before running it): at lr 3e-4 the sevens run's responses went to the cap
    # within 31 steps, before the bonus; the same at lr 1e-4 (seed 79)
    "qwen2-1prompt-12sample-sevensramp-lr1e-4-450-val10": {"steps": 450, "seed": 79, "model": "qwen2",
                                                           "overrides": _batch(
                                                               1, 12, "actor_rollout_ref.actor.optim.lr=1e-4",
                                                               "trainer.test_freq=10"),
                                                           "driver": Ramp("sevens", 150, 300, 0.0, 1.5)},
    # added after the runs above (written before running it), healthy: classic PPO, a critic (GAE) and the KL penalty
    # in the reward, top-p 0.95; Llama seed 1, 2 prompts x 2, 500 steps, validation every 10
    "llamas1-gae-klreward-2prompt-2sample-topp095-500-val10": {"steps": 500, "seed": 80, "model": "llama",
                                                               "model_seed": 1, "overrides": _batch(
        2, 2, "algorithm.adv_estimator=gae", "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.kl_coef=0.05",
        "actor_rollout_ref.rollout.top_p=0.95", "trainer.test_freq=10")},
}


# run once and not stored: no nameable failure came (README, sixth pass, "Looked at and not added")
NOT_STORED = ("gpt2-gae-4prompt-criticlr100-400-val25", "gpt2-gae-4prompt-criticlrramp3000-350-val25",
              "qwen2-1prompt-12sample-sevensramp-lr1e-4-450-val10")

if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
