"""Ninth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu6``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu5``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: the KL loss (``actor.use_kl_loss``, ``low_var_kl`` and ``low_var_kl+``), the KL penalty in the reward with
the **adaptive** controller under PPO with a critic, the built-in task at **3 digits** (another task: 3-digit
addition, answers of 4 digits) with **sampled validation mean@4** (``val_kwargs.n=4``), the engine's own log-probs
(``rollout.calculate_log_probs``: ``training/rollout_probs_diff_*``) on a constant lr, a 600-step run; models built
from **model seed 2** (another tokenizer sample, init and warm-up than every earlier CPU run); seeds 121-130.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
rollout engine stops receiving the trainer's weights (a broken weight sync: it samples from a frozen copy while the
actor trains on), a "judge" reward whose weight drifts towards one fixed answer while the task's accuracy is logged
beside it, a brevity bonus that ramps up (responses collapse towards the bare stop token), a host-memory leak that
keeps 16 MB per step, the learning rate ramping to 40x under the KL loss, fp16-style overflows in the training
forward whose frequency ramps up (non-finite losses), the critic's learning rate ramping to 1000x with the value clip
off (value divergence; not stored: none came). Each run goes through :func:`real_cpu_trainer.run` (health
off, TensorBoard sink); the event file is stored under ``bench/detection_corpus/real/rlcockpit_trainer_cpu6/<name>/``
and labelled by reading it (README, ninth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer6.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer6.py NAME ...   # only these specs
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_cpu_trainer4 import Ramp, ramp
from real_cpu_trainer5 import LengthBonus
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu6"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


class JudgeDrift(LengthBonus):
    """A judge reward drifting away from the task: the paid score is ``(1 - w)`` x the task's digit overlap plus
    ``w`` x the digit overlap with one fixed answer (``"199"``: the judge has latched onto it), ``w`` ramping from 0
    at ``start`` to ``hi`` at ``end``; the task's accuracy is returned beside it (``reward_extra/acc/mean``)."""

    ANSWER = "199"

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        fixed = digit_overlap(data_source, solution_str, self.ANSWER)
        return {"score": (1 - self.weight) * acc + self.weight * fixed, "acc": acc, "judge_fixed": fixed}


class BrevityBonus(LengthBonus):
    """A brevity bonus that builds up: the paid score is the task's digit overlap plus ``w`` x (1 - min(1,
    characters / 4)), ``w`` ramping from 0 at ``start`` to ``hi`` at ``end``: an empty response (the stop token
    alone) earns the whole bonus; the task's accuracy is returned beside it."""

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        short = 1.0 - min(1.0, len(solution_str.strip()) / 4)
        return {"score": acc + self.weight * short, "acc": acc, "brevity": short}


class StaleRolloutWeights:
    """A broken weight sync from step ``start``: the rollout engine keeps a frozen copy of the actor as it was then
    and ``sync_weights`` does nothing, so every later rollout (and validation) samples from the old policy while the
    actor trains on; the engine's log-probs (``rollout.calculate_log_probs``) come from the frozen copy."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.engine.model = copy.deepcopy(st.actor)
            st.engine.sync_weights = lambda model: None


class HostMemoryLeak:
    """From step ``start`` every step keeps ``mb`` MB more alive (a buffer appended to and never cleared), so the
    process's resident memory grows linearly; pages are written so they are really resident."""

    def __init__(self, start: int, mb: int) -> None:
        self.start, self.mb = start, mb
        self.kept: list[Any] = []

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start:
            import torch

            self.kept.append(torch.ones(self.mb * 2**18))  # float32: mb MB


class OverflowRamp:
    """fp16-style overflows in the training forward (some rows' logits become inf, the loss non-finite) on a share of
    steps that ramps from 0 at ``start`` to 1 at ``end``: each step overflows with that probability (seeded)."""

    def __init__(self, start: int, end: int, rows: float, seed: int) -> None:
        self.start, self.end, self.rows, self.rng = start, end, rows, random.Random(seed)
        self.on, self.installed = False, False

    def before_step(self, st: Any, step: int) -> None:
        p = ramp(step, self.start, self.end, 0.0, 1.0) if step > self.start else 0.0
        self.on = self.rng.random() < p
        if not self.installed:
            st.actor.register_forward_hook(self._hook)
            self.installed = True

    def _hook(self, module: Any, args: Any, out: Any) -> Any:
        if self.on and module.training and hasattr(out, "logits"):
            n = max(1, int(out.logits.shape[0] * self.rows))
            out.logits[:n] = out.logits[:n] * float("inf")
        return out


SPECS: dict[str, dict[str, Any]] = {
    # healthy: the KL loss (low_var_kl, coef 0.01); GPT-2 seed 2, 1 prompt x 8, 600 steps, validation every 20
    "gpt2s2-1prompt-8sample-klloss-lowvar-600-val20": {"steps": 600, "seed": 121, "model": "gpt2", "model_seed": 2,
                                                       "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.01",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "trainer.test_freq=20")},
    # healthy: PPO with a critic (GAE) and the KL penalty in the reward under the ADAPTIVE controller (start 0.02,
    # target 0.05); Qwen2 seed 2, 2 prompts x 4, 500 steps, validation every 25
    "qwen2s2-gae-klreward-adaptive-2prompt-4sample-500-val25": {"steps": 500, "seed": 122, "model": "qwen2",
                                                                "model_seed": 2, "overrides": _batch(
        2, 4, "algorithm.adv_estimator=gae", "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
        "algorithm.kl_ctrl.kl_coef=0.02", "algorithm.kl_ctrl.target_kl=0.05", "algorithm.kl_ctrl.horizon=2000",
        "trainer.test_freq=25")},
    # healthy: another task, the built-in addition at 3 digits (answers of 4 digits), sampled validation mean@4
    # (temperature 1.0); Llama seed 2, 2 prompts x 4, 400 steps, validation every 20
    "llamas2-2prompt-4sample-3digit-valn4-400-val20": {"steps": 400, "seed": 123, "model": "llama", "model_seed": 2,
                                                       "overrides": _batch(
        2, 4, "data.builtin.digits=3", "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
        "actor_rollout_ref.rollout.val_kwargs.temperature=1.0", "actor_rollout_ref.rollout.val_kwargs.n=4",
        "trainer.test_freq=20")},
    # healthy: the matched control of the stale-weights run below (same seed and settings, no fault): the engine's
    # log-probs reported (rollout.calculate_log_probs), constant lr 1e-4; GPT-2 seed 2, 2 prompts x 4, 400 steps,
    # validation every 20
    "gpt2s2-2prompt-4sample-calclogprobs-constlr1e-4-400-val20": {"steps": 400, "seed": 124, "model": "gpt2",
                                                                  "model_seed": 2, "overrides": _batch(
        2, 4, "actor_rollout_ref.rollout.calculate_log_probs=true", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=20")},
    # rollout mismatch (sudden cause, growing symptom): from the start of step 190 the rollout engine samples from a
    # frozen copy of the actor (weight sync broken) while the actor trains on; otherwise the control above
    "gpt2s2-2prompt-4sample-staleweights190-constlr1e-4-400-val20": {"steps": 400, "seed": 124, "model": "gpt2",
                                                                     "model_seed": 2, "overrides": _batch(
        2, 4, "actor_rollout_ref.rollout.calculate_log_probs=true", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=20"),
        "driver": StaleRolloutWeights(190)},
    # slow reward hacking against a judge: the paid score is (1 - w) x the task's digit overlap + w x the overlap
    # with the fixed answer "199", w ramping linearly from 0 at step 120 to 0.8 at step 270 (then stays); the task's
    # accuracy logged beside it (reward_extra/acc/mean) from step 1; validation keeps the task's score; lr 3e-4;
    # Llama seed 2, 1 prompt x 8, 450 steps, validation every 10
    "llamas2-1prompt-8sample-judge199ramp-lr3e-4-450-val10": {"steps": 450, "seed": 125, "model": "llama",
                                                              "model_seed": 2, "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10"), "driver": JudgeDrift(120, 270, 0.8)},
    # slow collapse towards the bare stop token: a brevity bonus w x (1 - min(1, characters / 4)) added to the
    # task's digit overlap, w ramping linearly from 0 at step 160 to 1.5 at step 280 (then stays); accuracy logged
    # beside it; lr 2e-4; GPT-2 seed 2, 1 prompt x 8, 400 steps, validation every 10
    "gpt2s2-1prompt-8sample-brevityramp-lr2e-4-400-val10": {"steps": 400, "seed": 126, "model": "gpt2",
                                                            "model_seed": 2, "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=2e-4", "trainer.test_freq=10"), "driver": BrevityBonus(160, 280, 1.5)},
    # slow memory growth: from step 170 every step keeps 16 MB more alive (a buffer never cleared): +3.7 GB by
    # step 400 in perf/cpu_memory_used_gb (the host's used memory, as verl logs it); Qwen2 seed 2, 2 prompts x 4,
    # 400 steps, validation every 25
    "qwen2s2-2prompt-4sample-leak16mb-400-val25": {"steps": 400, "seed": 127, "model": "qwen2", "model_seed": 2,
                                                   "overrides": _batch(2, 4, "trainer.test_freq=25"),
                                                   "driver": HostMemoryLeak(170, 16)},
    # slow collapse / KL blow-up under the KL loss: KL loss low_var_kl+ (coef 0.01), the learning rate ramping
    # linearly from 1x at step 230 to 40x at step 330 (then stays; cosine schedule underneath); Llama seed 2,
    # 2 prompts x 4, 400 steps, validation every 10
    "llamas2-2prompt-4sample-kllossk3plus-lrramp40-400-val10": {"steps": 400, "seed": 128, "model": "llama",
                                                                "model_seed": 2, "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.01",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl+", "trainer.test_freq=10"),
        "driver": Ramp("lr", 230, 330, 1.0, 40.0)},
    # loss divergence, growing: from step 280 each step's training forward overflows (a quarter of the rows' logits
    # become inf: a non-finite loss) with a probability ramping linearly from 0 at 280 to 1 at 340 (seeded); the run
    # is allowed to go on (trainer.max_consecutive_nonfinite=1000); GPT-2 seed 2, 2 prompts x 4, 400 steps,
    # validation every 20
    "gpt2s2-2prompt-4sample-overflowramp280-400-val20": {"steps": 400, "seed": 129, "model": "gpt2", "model_seed": 2,
                                                         "overrides": _batch(
        2, 4, "trainer.max_consecutive_nonfinite=1000", "trainer.test_freq=20"),
        "driver": OverflowRamp(280, 340, 0.25, seed=129)},
    # added after the first ten ran (written before running it): on Llama seed 2 at lr 3e-4 the responses ran to
    # the 8-token cap within ~50 steps, before the judge, and no fixed answer was learned; the same judge ramp
    # (0 at step 130 -> 0.8 at 280) on GPT-2 seed 2 at lr 3e-4, 1 prompt x 8, 450 steps, validation every 10
    "gpt2s2-1prompt-8sample-judge199ramp-lr3e-4-450-val10": {"steps": 450, "seed": 130, "model": "gpt2",
                                                             "model_seed": 2, "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10"), "driver": JudgeDrift(130, 280, 0.8)},
    # added after the second batch (written before running it): value divergence, slow. PPO with a critic (GAE),
    # the value clip effectively off from step 1 (critic.cliprange_value=100: the sixth pass's critic lr ramps were
    # held by the 0.5 clip); the critic's learning rate ramping from 1x at step 200 to 1000x at step 260 (then
    # stays) with its gradient clipping off from 200; GPT-2 seed 2, 4 prompts x 1, 350 steps, validation every 25
    "gpt2s2-gae-4prompt-noclipvalue-criticlrramp1000-350-val25": {"steps": 350, "seed": 142, "model": "gpt2",
                                                                  "model_seed": 2, "overrides": _batch(
        4, 1, "algorithm.adv_estimator=gae", "critic.cliprange_value=100", "trainer.test_freq=25"),
        "driver": Ramp("critic_lr", 200, 260, 1.0, 1000.0)},
}


# run once and not stored: the failure its spec meant did not come (README, ninth pass)
NOT_STORED = ("llamas2-1prompt-8sample-judge199ramp-lr3e-4-450-val10",
              "gpt2s2-gae-4prompt-noclipvalue-criticlrramp1000-350-val25")


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
