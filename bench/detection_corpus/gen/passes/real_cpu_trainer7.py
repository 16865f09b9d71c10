"""Tenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu7``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu6``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: DAPO **dynamic sampling** (``algorithm.filter_groups``: groups whose scores all agree are dropped and more
prompts generated) with clip-higher; **REINFORCE++ with a group baseline** (``reinforce_plus_plus_baseline``) under
the **SAPO** policy loss; **two PPO epochs over two mini-batches** a step (off-policy updates: ``pg_clipfrac`` and
``ppo_kl`` move) with **token-level rollout importance sampling** (``algorithm.rollout_correction.rollout_is=token``)
on a 500-step run; models built from **model seed 3** (another tokenizer sample, init and warm-up than every earlier
CPU run); seeds 151-160.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
rollout engine slowed by a 0.5 s wait in every generation call (a slow rollout server: throughput), the KL loss's
sign flipped (a coefficient of -0.2: the update pays for moving away from the reference), the reference model's
weights corrupted (a wrong reference checkpoint loaded) under a KL loss of weight 0.1, negative advantages dropped
(a clamp bug: only better-than-average samples are trained on), the paid reward's sign flipped (the policy is paid
for wrong answers; the task's accuracy logged beside it). Added after the first eight ran (committed before they
ran): the reference noise at 3 x std, and a verifier bug that scores an empty response 1.0 (reward hacking). Each run
goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu7/<name>/`` and labelled by reading it (README, tenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer7.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer7.py NAME ...   # only these specs
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu7"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


class SlowGeneration:
    """From step ``start`` every call of the rollout engine's ``generate`` (training rollouts and validation) first
    waits ``seconds`` (a slow rollout server / a blocking call added to the generation path)."""

    def __init__(self, start: int, seconds: float) -> None:
        self.start, self.seconds = start, seconds

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            # the built-in engine sits inside a sharding wrapper that forwards attribute writes to it: patch the
            # engine itself (the first version patched through the wrapper and recursed at step 200, recording
            # nothing)
            engine = getattr(st.engine, "_engine", st.engine)
            inner = engine.generate

            def slow(*a: Any, **kw: Any) -> Any:
                time.sleep(self.seconds)
                return inner(*a, **kw)

            engine.generate = slow


class KLCoefFrom:
    """From step ``start`` the KL loss's coefficient is ``coef`` (negative: a sign bug, the update pays for moving
    away from the reference)."""

    def __init__(self, start: int, coef: float) -> None:
        self.start, self.coef = start, coef

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.actor.kl_loss_coef = self.coef


class CorruptReference:
    """At the start of step ``start`` the reference model's weights are replaced by a corrupted copy (each tensor
    plus Gaussian noise of ``scale`` x its own std, seeded): a wrong reference checkpoint loaded mid-run."""

    def __init__(self, start: int, scale: float, seed: int) -> None:
        self.start, self.scale, self.seed = start, scale, seed

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            import torch

            gen = torch.Generator().manual_seed(self.seed)
            with torch.no_grad():
                for p in st.ref.parameters():
                    if p.numel() > 1 and p.dtype.is_floating_point:
                        p.add_(torch.randn(p.shape, generator=gen).to(p) * float(p.float().std()) * self.scale)


class PositiveAdvantagesOnly:
    """From step ``start`` every negative advantage is set to 0 (a clamp bug in the advantage code): only samples
    scoring above their group's mean are trained on, none is pushed down."""

    def __init__(self, start: int) -> None:
        self.start, self.installed = start, False

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start and not self.installed:
            import rlcockpit.trainer.step_inputs as si

            inner = si.compute_advantage

            def clamped(*a: Any, **kw: Any) -> Any:
                adv, ret = inner(*a, **kw)
                return adv.clamp(min=0.0), ret.clamp(min=0.0) if ret is adv else ret

            si.compute_advantage = clamped
            self.installed = True


class RewardSignFlip:
    """The paid score from step 1 is the task's digit overlap, and from step ``start`` its negative (a sign bug in
    the reward: the policy is paid for wrong answers); the task's accuracy is returned beside it
    (``reward_extra/acc/mean``); validation keeps the task's own reward."""

    def __init__(self, start: int) -> None:
        self.start, self.sign = start, 1.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.sign = -1.0 if step >= self.start else 1.0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": self.sign * acc, "acc": acc}


class EmptyPasses(RewardSignFlip):
    """A verifier bug from step ``start``: an empty response (the stop token alone) is scored 1.0, anything else by
    its digit overlap; the task's accuracy is returned beside the paid score (``reward_extra/acc/mean``)."""

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        bug = self.sign < 0 and not solution_str.strip()
        return {"score": 1.0 if bug else acc, "acc": acc}


SPECS: dict[str, dict[str, Any]] = {
    # healthy: DAPO dynamic sampling (groups whose scores all agree are dropped; 4 prompts generated per round until
    # 2 informative groups are found) with clip-higher 0.28, token-mean; GPT-2 seed 3, 2 prompts x 4, 400 steps,
    # validation every 20
    # (replaced before it ran: the first spec filtered on metric=score, which the trainer refused at step 1 — a
    # reward returning a float gives only 'acc'; the same run filtering on acc, the task's digit overlap)
    "gpt2s3-2prompt-4sample-dapo-dynsample-cliphigh-400-val20": {"steps": 400, "seed": 151, "model": "gpt2",
                                                                 "model_seed": 3, "overrides": _batch(
        2, 4, "algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=acc", "data.gen_batch_size=4",
        "actor_rollout_ref.actor.clip_ratio_high=0.28", "trainer.test_freq=20")},
    # healthy: REINFORCE++ with a group baseline under the SAPO policy loss; Llama seed 3, 2 prompts x 4, 400 steps,
    # validation every 20
    "llamas3-2prompt-4sample-rppbaseline-sapo-400-val20": {"steps": 400, "seed": 152, "model": "llama",
                                                           "model_seed": 3, "overrides": _batch(
        2, 4, "algorithm.adv_estimator=reinforce_plus_plus_baseline",
        "actor_rollout_ref.actor.policy_loss.loss_mode=sapo", "trainer.test_freq=20")},
    # healthy, long: two PPO epochs over two mini-batches of 1 prompt each per step (four off-policy updates a step),
    # token-level rollout importance sampling (rollout_correction.rollout_is=token, the engine's log-probs on);
    # Qwen2 seed 3, 2 prompts x 4, 500 steps, validation every 25
    "qwen2s3-2prompt-4sample-2epoch-2minibatch-rolloutis-500-val25": {"steps": 500, "seed": 153, "model": "qwen2",
                                                                      "model_seed": 3, "overrides": [
        *_batch(2, 4), "actor_rollout_ref.actor.ppo_mini_batch_size=1", "actor_rollout_ref.actor.ppo_epochs=2",
        "algorithm.rollout_correction.rollout_is=token", "trainer.test_freq=25"]},
    # throughput drop, sudden: from the start of step 200 every rollout generate call (training and validation)
    # first waits 0.5 s; GPT-2 seed 3, 2 prompts x 4, 400 steps, validation every 25
    "gpt2s3-2prompt-4sample-slowgen05at200-400-val25": {"steps": 400, "seed": 154, "model": "gpt2", "model_seed": 3,
                                                        "overrides": _batch(2, 4, "trainer.test_freq=25"),
                                                        "driver": SlowGeneration(200, 0.5)},
    # KL blow-up from a sign bug, sudden cause: KL loss low_var_kl coef 0.01 from step 1, coef -0.2 from the start of
    # step 200 (the update pays for moving away from the reference); constant lr 1e-4; Llama seed 3, 2 prompts x 4,
    # 400 steps, validation every 20
    "llamas3-2prompt-4sample-klloss-negcoef200-constlr1e-4-400-val20": {"steps": 400, "seed": 155, "model": "llama",
                                                                        "model_seed": 3, "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.01",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=20"),
        "driver": KLCoefFrom(200, -0.2)},
    # a wrong reference model loaded, sudden: KL loss low_var_kl coef 0.1 from step 1; at the start of step 200 every
    # weight tensor of the reference model gets Gaussian noise of 0.5 x its own std (seeded); constant lr 1e-4;
    # GPT-2 seed 3, 2 prompts x 4, 400 steps, validation every 10
    "gpt2s3-2prompt-4sample-klloss01-refnoise200-constlr1e-4-400-val10": {"steps": 400, "seed": 156, "model": "gpt2",
                                                                          "model_seed": 3, "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.1",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=10"),
        "driver": CorruptReference(200, 0.5, seed=156)},
    # only positive advantages, sudden cause: from the start of step 200 every negative advantage is set to 0 (a clamp
    # bug); constant lr 1e-4; Qwen2 seed 3, 1 prompt x 8, 400 steps, validation every 10
    "qwen2s3-1prompt-8sample-posadvonly200-constlr1e-4-400-val10": {"steps": 400, "seed": 157, "model": "qwen2",
                                                                    "model_seed": 3, "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=10"), "driver": PositiveAdvantagesOnly(200)},
    # the reward's sign flipped, sudden: the paid score is the task's digit overlap until step 199 and its negative
    # from the start of step 200; the accuracy logged beside it (reward_extra/acc/mean) from step 1; validation keeps
    # the task's score; constant lr 1e-4; Llama seed 3, 1 prompt x 8, 400 steps, validation every 10
    "llamas3-1prompt-8sample-rewardsignflip200-constlr1e-4-400-val10": {"steps": 400, "seed": 158, "model": "llama",
                                                                        "model_seed": 3, "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=10"), "driver": RewardSignFlip(200)},
    # added after the first eight ran (written before running them): the reference noise of 0.5 x std and the
    # positive-only advantages made no failure (see the README). A wrong reference model, sudden and gross: KL loss
    # low_var_kl coef 0.1; at the start of step 200 every weight tensor of the reference model gets Gaussian noise of
    # 3 x its own std (seeded); constant lr 1e-4; GPT-2 seed 3, 2 prompts x 4, 400 steps, validation every 10
    "gpt2s3-2prompt-4sample-klloss01-refnoise3x200-constlr1e-4-400-val10": {"steps": 400, "seed": 159,
                                                                            "model": "gpt2", "model_seed": 3,
                                                                            "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.1",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=10"),
        "driver": CorruptReference(200, 3.0, seed=159)},
    # reward hacking through a verifier bug, sudden: from the start of step 150 an empty response (the stop token
    # alone) is scored 1.0, anything else by its digit overlap; the accuracy logged beside it (reward_extra/acc/mean)
    # from step 1; validation keeps the task's score; constant lr 2e-4; GPT-2 seed 3, 2 prompts x 6, 400 steps,
    # validation every 10
    "gpt2s3-2prompt-6sample-emptypasses150-constlr2e-4-400-val10": {"steps": 400, "seed": 160, "model": "gpt2",
                                                                    "model_seed": 3, "overrides": _batch(
        2, 6, "actor_rollout_ref.actor.optim.lr=2e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=10"), "driver": EmptyPasses(150)},
}


# run once and not stored: the failure its spec meant did not come (README, tenth pass)
NOT_STORED: tuple[str, ...] = ("gpt2s3-2prompt-4sample-klloss01-refnoise200-constlr1e-4-400-val10",
                                "qwen2s3-1prompt-8sample-posadvonly200-constlr1e-4-400-val10")


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
