"""Fourteenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu9``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu8``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **LoRA** (``actor_rollout_ref.model.lora_rank=8``: only the adapter trains, the reference is the
adapter-free model); the **CISPO** policy loss with **validation every 5 steps**; **one prompt x 2 samples** (tiny
noisy groups) on a **900-step** run; **optimal token baselines** (``adv_estimator=optimal_token_baseline``) with an
**entropy bonus** (``entropy_coeff=0.01``); the **geo_mean** policy loss with a **KL penalty in the reward** under the
``mse`` estimator, 4 prompts x 2; models built from **model seed 5** (another tokenizer sample, init and warm-up than
every earlier CPU run); seeds 201-214. Added after the first run was read (committed before they ran): the
**dppo_tv** policy loss, and **RLOO (vectorized)** advantages with the **DRO** policy loss.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
reward **scaled x100 by a bug from a step on** (every step after, under Dr. GRPO advantages that keep the scale;
the earlier passes scaled two isolated steps); reward labels **shuffled across the prompts** of a step (each
response graded against another prompt's answer: the reward becomes noise); the sampling **temperature ramped up**
1.0 -> 1.6 over 150 steps (the earlier passes lowered it); the engine's **reported log-probs computed by a stale
checkpoint** while sampling stays current (the mismatch drifts up as the policy moves; the sixth pass froze the
sampling weights themselves); a **per-step dedup scan over every past response** (its cost grows with the run: a
throughput ramp); the **KL anchor removed with a 10x lr** from a step (kl_loss_coef 0.05 -> 0: slow drift away from
the reference); a **missing lr warm-up** (lr 3e-3, 30x the intended 1e-4, from step 1: a failure from the start).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu9/<name>/`` and labelled by reading it (README, fourteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer9.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer9.py NAME ...   # only these specs
"""

from __future__ import annotations

import copy
import hashlib
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_cpu_trainer7 import RewardSignFlip
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu9"



class RewardTimes100(RewardSignFlip):
    """The paid score is the task's digit overlap until step ``start - 1`` and 100 x it from step ``start`` on (a
    units bug in the reward: percent instead of a fraction); the accuracy is returned beside it
    (``reward_extra/acc/mean``); validation keeps the task's own reward."""

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": (100.0 if self.sign < 0 else 1.0) * acc, "acc": acc}


class ShuffledLabels:
    """From step ``start`` each training response is graded against the answer of another prompt of the same step
    (each prompt's answer mapped, seeded, to an answer of a prompt graded before it in the step, the step's first
    to a random 3-digit sum: reward labels misaligned with their prompts, so the paid score is noise); the task's accuracy against its own answer is returned beside it
    (``reward_extra/acc/mean``); validation keeps the task's own reward."""

    def __init__(self, start: int, seed: int = 0) -> None:
        self.start, self.on, self.rng = start, False, random.Random(seed)
        self.truths: list[Any] = []
        self.perm: dict[Any, Any] = {}

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.on = step >= self.start
        self.truths, self.perm = [], {}

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if not self.on:
            return {"score": acc, "acc": acc}
        key = str(ground_truth)
        if key not in self.perm:
            self.truths.append(key)
            # a wrong label: another prompt's answer seen this step, or a fresh random 3-digit sum for the first one
            other = [t for t in self.truths if t != key]
            self.perm[key] = self.rng.choice(other) if other else f"{self.rng.randint(0, 198):03d}"
        return {"score": digit_overlap(data_source, solution_str, self.perm[key]), "acc": acc}


class TemperatureRamp:
    """The rollout temperature (sampling and the training pass's log-probs) ramped linearly from 1.0 at step
    ``start`` to ``hi`` at ``end`` and kept there (a sampling config drifting up); greedy validation unchanged."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi = start, end, hi

    def before_step(self, st: Any, step: int) -> None:
        st.cfg.rollout.temperature = ramp(step, self.start, self.end, 1.0, self.hi)


class StaleLogprobCheckpoint:
    """From step ``start`` the rollout engine still samples from the current actor but the log-probs it reports
    (``rollout.calculate_log_probs``) are computed by a copy of the actor taken at the start of step ``start`` and
    never refreshed (a log-prob server left on an old checkpoint): the rollout/trainer gap grows as the policy moves."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        import torch

        snap = copy.deepcopy(st.actor).eval()
        engine = getattr(st.engine, "_engine", st.engine)
        inner = engine.generate

        def stale(prompts: Any, params: Any, *a: Any, **kw: Any) -> Any:
            out = inner(prompts, params, *a, **kw)
            if params.greedy or out.rollout_log_probs is None:
                return out
            ids, mask = out.input_ids, out.attention_mask
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            with torch.no_grad():
                logits = snap(input_ids=ids, attention_mask=mask, position_ids=pos).logits
            p = out.prompts.shape[1]
            lg = logits[:, p - 1:-1].float() / params.temperature
            lp = torch.log_softmax(lg, -1).gather(-1, out.responses.unsqueeze(-1)).squeeze(-1)
            out.rollout_log_probs = lp * out.response_mask
            return out

        engine.generate = stale


class GrowingDedupScan:
    """From step ``start`` every training rollout is checked against every response kept so far (a dedup pass that
    re-hashes the whole history each step, and the history never shrinks): each step appends ``kb`` KB of the
    step's decoded responses, repeated, and re-hashes everything kept, so the step's extra cost grows linearly with
    the run (a throughput ramp; the kept bytes grow memory a little too)."""

    def __init__(self, start: int, kb: int) -> None:
        self.start, self.kb = start, kb
        self.kept: list[bytes] = []

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        self.kept.append((f"step {step} " * 64).encode()[:1024] * self.kb)
        h = hashlib.sha256()
        for b in self.kept:
            h.update(b)
        h.hexdigest()


class KLAnchorOff:
    """From step ``start`` the actor's ``kl_loss_coef`` is 0 (the KL term still logged) and its lr x ``factor``
    (another run's optimizer settings loaded: no anchor, a high lr), so the policy drifts away from the reference."""

    def __init__(self, start: int, factor: float) -> None:
        self.start, self.factor = start, factor

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.actor.kl_loss_coef = 0.0
            st.actor_sched.base_lrs = [b * self.factor for b in st.actor_sched.base_lrs]
            for g in st.actor_opt.param_groups:
                g["lr"] *= self.factor


SPECS: dict[str, dict[str, Any]] = {
    # healthy: LoRA rank 8 (alpha 16, all linear layers; only the adapter trains), lr 1e-3 constant; Llama seed 5,
    # 2 prompts x 4, 400 steps, validation every 20
    "llamas5-lora8-2prompt-4sample-constlr1e-3-400-val20": {"steps": 400, "seed": 201, "model": "llama",
                                                            "model_seed": 5, "overrides": _batch(
        2, 4, "actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.model.lora_alpha=16",
        "actor_rollout_ref.actor.optim.lr=1e-3", *_CONST, "trainer.test_freq=20")},
    # healthy: the CISPO policy loss, validation every 5 steps; GPT-2 seed 5, 2 prompts x 4, 300 steps
    "gpt2s5-2prompt-4sample-cispo-300-val5": {"steps": 300, "seed": 202, "model": "gpt2", "model_seed": 5,
                                              "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.policy_loss.loss_mode=cispo", "trainer.test_freq=5")},
    # healthy, long: one prompt x 2 samples a step (tiny, noisy groups: GRPO's std over two scores); Qwen2 seed 5,
    # 900 steps, validation every 45
    "qwen2s5-1prompt-2sample-900-val45": {"steps": 900, "seed": 203, "model": "qwen2", "model_seed": 5,
                                          "overrides": _batch(1, 2, "trainer.test_freq=45")},
    # healthy: optimal token baselines (adv_estimator=optimal_token_baseline) with an entropy bonus
    # (actor.entropy_coeff 0.01); Llama seed 5, 2 prompts x 4, 400 steps, validation every 20
    "llamas5-2prompt-4sample-otb-entbonus001-400-val20": {"steps": 400, "seed": 204, "model": "llama",
                                                          "model_seed": 5, "overrides": _batch(
        2, 4, "algorithm.adv_estimator=optimal_token_baseline", "actor_rollout_ref.actor.entropy_coeff=0.01",
        "trainer.test_freq=20")},
    # healthy: the geo_mean policy loss with a KL penalty in the reward (use_kl_in_reward, kl_penalty mse, fixed
    # coef 0.05); GPT-2 seed 5, 4 prompts x 2, 400 steps, validation every 25
    "gpt2s5-4prompt-2sample-geomean-klinreward-mse005-400-val25": {"steps": 400, "seed": 205, "model": "gpt2",
                                                                   "model_seed": 5, "overrides": _batch(
        4, 2, "actor_rollout_ref.actor.policy_loss.loss_mode=geo_mean", "algorithm.use_kl_in_reward=true",
        "algorithm.kl_penalty=mse", "algorithm.kl_ctrl.kl_coef=0.05", "trainer.test_freq=25")},
    # reward scaled x100 by a bug, sudden: the paid score is the digit overlap to step 199 and 100 x it from the
    # start of step 200 on (accuracy beside it); Dr. GRPO advantages (norm_adv_by_std_in_grpo=false) so the scale
    # reaches the gradient; grad clip 1.0 stays; constant lr 1e-4; Qwen2 seed 5, 2 prompts x 4, 400 steps,
    # validation every 20
    "qwen2s5-2prompt-4sample-drgrpo-reward100xfrom200-constlr1e-4-400-val20": {
        "steps": 400, "seed": 206, "model": "qwen2", "model_seed": 5, "overrides": _batch(
            2, 4, "algorithm.norm_adv_by_std_in_grpo=false", "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST,
            "trainer.test_freq=20"), "driver": RewardTimes100(200)},
    # reward labels shuffled across prompts, sudden cause with a learned effect: from the start of step 200 each
    # response is graded against another prompt's answer of the same step (accuracy against its own answer logged
    # beside it); constant lr 1e-4; Llama seed 5, 4 prompts x 4, 400 steps, validation every 20
    "llamas5-4prompt-4sample-shuffledlabels200-constlr1e-4-400-val20": {
        "steps": 400, "seed": 207, "model": "llama", "model_seed": 5, "overrides": _batch(
            4, 4, "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST, "trainer.test_freq=20"),
        "driver": ShuffledLabels(200, seed=207)},
    # sampling temperature ramped up, ramp: 1.0 to step 200, linear to 1.6 at step 350, kept to 450 (sampling and
    # the training pass's log-probs); GPT-2 seed 5, 2 prompts x 4, 450 steps, validation every 25
    "gpt2s5-2prompt-4sample-tempramp1to1.6-200-350-450-val25": {
        "steps": 450, "seed": 208, "model": "gpt2", "model_seed": 5, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": TemperatureRamp(200, 350, 1.6)},
    # the engine's reported log-probs from a stale checkpoint, sudden cause with a drifting effect: engine
    # log-probs on from step 1 (rollout.calculate_log_probs); from the start of step 150 they are computed by the
    # actor as it was at step 150, never refreshed, while sampling stays current; constant lr 2e-4; GPT-2 seed 5,
    # 2 prompts x 4, 400 steps, validation every 20
    "gpt2s5-2prompt-4sample-stalelogprobckpt150-calclogprobs-constlr2e-4-400-val20": {
        "steps": 400, "seed": 209, "model": "gpt2", "model_seed": 5, "overrides": _batch(
            2, 4, "actor_rollout_ref.rollout.calculate_log_probs=true", "actor_rollout_ref.actor.optim.lr=2e-4",
            *_CONST, "trainer.test_freq=20"), "driver": StaleLogprobCheckpoint(150)},
    # throughput ramp from a dedup scan over the whole history: from step 150 each step keeps 256 KB more and
    # re-hashes everything kept (step 400: ~64 MB hashed a step); Qwen2 seed 5, 2 prompts x 4, 400 steps,
    # validation every 25
    "qwen2s5-2prompt-4sample-dedupscan150-400-val25": {
        "steps": 400, "seed": 210, "model": "qwen2", "model_seed": 5, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": GrowingDedupScan(150, 256)},
    # KL anchor removed with a high lr, sudden cause with a slow (learned) drift: KL loss low_var_kl coef 0.05 and
    # constant lr 1e-4 to step 199; from the start of step 200 kl_loss_coef 0 and lr 1e-3; Llama seed 5,
    # 2 prompts x 4, 450 steps, validation every 25
    "llamas5-2prompt-4sample-klloss005-anchoroff-lr10x-at200-450-val25": {
        "steps": 450, "seed": 211, "model": "llama", "model_seed": 5, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.05",
            "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST,
            "trainer.test_freq=25"), "driver": KLAnchorOff(200, 10.0)},
    # lr warm-up missing, failure from the start: the intended config is lr 1e-4 with a 30-step warm-up; the run
    # has lr 3e-3 (30x) constant from step 1, no warm-up; onset read from where the symptom leaves the range of the
    # first 10 steps for good; GPT-2 seed 5, 2 prompts x 4, 300 steps, validation every 15
    "gpt2s5-2prompt-4sample-nowarmup-lr3e-3-from1-300-val15": {
        "steps": 300, "seed": 212, "model": "gpt2", "model_seed": 5, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.optim.lr=3e-3", "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
            *_CONST, "trainer.test_freq=15")},
    # added after the first run was read (written and committed before running these): the LoRA run meant as
    # healthy ran its responses to the length cap from ~185 (README, fourteenth pass), so two more healthy specs.
    # Healthy: the dppo_tv policy loss; Qwen2 seed 5, 2 prompts x 4, 400 steps, validation every 20
    "qwen2s5-2prompt-4sample-dppotv-400-val20": {"steps": 400, "seed": 213, "model": "qwen2", "model_seed": 5,
                                                 "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.policy_loss.loss_mode=dppo_tv", "trainer.test_freq=20")},
    # healthy: RLOO (vectorized) advantages with the DRO policy loss (dro_beta 0.1); GPT-2 seed 5, 2 prompts x 4,
    # 400 steps, validation every 20
    "gpt2s5-2prompt-4sample-rloovec-dro01-400-val20": {"steps": 400, "seed": 214, "model": "gpt2", "model_seed": 5,
                                                       "overrides": _batch(
        2, 4, "algorithm.adv_estimator=rloo_vectorized", "actor_rollout_ref.actor.policy_loss.loss_mode=dro",
        "actor_rollout_ref.actor.policy_loss.dro_beta=0.1", "trainer.test_freq=20")},
}


# run once and not stored: the failure its spec meant did not come (README, fourteenth pass). Nothing dropped; the
# LoRA spec meant as healthy is stored as the length explosion it showed
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
