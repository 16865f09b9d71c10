"""Seventeenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu12``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu11``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **5 prompts x 3** and **2 prompts x 8**; responses up to **12 / 20** tokens; **constant lr 2e-4**, **lr 3e-4
cosine to a floor of 0.1**; the **KL penalty in the reward with an adaptive controller** on the GRPO task; **grad clip
0.5**; validation every **15**; 300-350 steps; models built from **model seed 8** (another tokenizer sample, init and
warm-up than every earlier CPU run; ``real_trainer.bpe_model_dir``, built in code); seeds 501-520 (511-516 and 517-520: specs added
after earlier runs were read, each committed before it ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run; all
start slowly or late): a **reward scaled by a factor that grows with the step** (a reward normaliser whose running
scale drifts: ramp, under Dr. GRPO advantages that keep the scale); an **answer-format checker made stricter at a
resume** (sudden cause); the **adaptive KL controller's error written upside down** (target / current instead of
current / target: the coefficient runs away, ramp); **duplicated prompts in the batch, a growing share** (a data
pipeline that re-serves the batch's first prompt: ramp); the **dataset served in sorted order** after a resume (a
re-read dataset sorted by answer, shuffling off: easy -> hard by accident, sudden cause with a drifting effect); added later: a **grader made stricter** (partial credit dropped: exact
answers only, sudden cause) **dropout switched on during rollouts** (sampling in train mode, sudden), a **strict grader rolled out to a
growing share of samples** (ramp) and a **reward scale drifting down** (ramp).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu12/<name>/`` and labelled by reading it (README, seventeenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer12.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer12.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu12"


class RewardScaleDrift:
    """The paid score is the task's digit overlap times a factor ramped 1 (step ``start``) -> ``hi`` (step ``end``),
    kept after (a reward normaliser whose running scale drifts the wrong way); the accuracy is returned beside it;
    validation keeps the task's reward."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.factor = start, end, hi, 1.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.factor = ramp(step, self.start, self.end, 1.0, self.hi)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": acc * self.factor, "acc": acc}


class StricterFormat:
    """To step ``start`` the paid score is the task's digit overlap; from it a format checker made stricter at a
    resume pays it only when the stripped answer is digits only and exactly as long as the expected answer (else 0);
    the accuracy is returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int) -> None:
        self.start, self.strict = start, False

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.strict = step >= self.start

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        got = solution_str.strip()
        ok = got.isdigit() and len(got) == len(str(ground_truth))
        return {"score": acc if (ok or not self.strict) else 0.0, "acc": acc}


class KLControllerInverted:
    """From step ``start`` the adaptive KL controller's update uses ``target / current - 1`` as its error instead of
    ``current / target - 1`` (a refactor that writes the ratio upside down): a KL under the target now raises the
    coefficient, the raised penalty pushes the KL further under it, and the coefficient runs away (each update still
    clipped to 20% per horizon)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start or getattr(st.kl_ctrl, "_inverted", False):
            return
        ctrl = st.kl_ctrl

        def update(current_kl: float, n_steps: int) -> None:
            error = min(max(ctrl.target / max(float(current_kl), 1e-8) - 1.0, -0.2), 0.2)
            ctrl.value *= 1.0 + error * n_steps / ctrl.horizon

        ctrl.update = update
        ctrl._inverted = True


class DuplicatedPrompts:
    """From step ``start`` a growing share of each training batch's prompts is replaced by a copy of the batch's first
    prompt (a data pipeline that re-serves one row): the share ramped 0 (``start``) -> ``hi`` (``end``), kept;
    validation untouched."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.share, self.wrapped = start, end, hi, 0.0, False

    def before_step(self, st: Any, step: int) -> None:
        self.share = ramp(step, self.start, self.end, 0.0, self.hi)
        if self.wrapped or step < self.start:
            return
        loader = st.loader
        inner = loader.next_batch

        def dup(k: int | None = None) -> list[Any]:
            rows = inner(k)
            m = int(round(self.share * len(rows)))
            return [rows[0]] * max(1, m) + rows[max(1, m):] if m > 0 else rows

        loader.next_batch = dup
        self.wrapped = True


class SortedDataset:
    """At the start of step ``start`` (a resume that re-reads the dataset) the training rows come back sorted by their
    answer (numeric, ascending) and the loader's shuffling is off: from there the batches walk from small answers to
    large ones in order (an easy -> hard curriculum nobody meant); validation untouched."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        loader = st.loader

        def key(r: Any) -> tuple[int, str]:
            gt = str(r.ground_truth)
            return (int(gt), gt) if gt.isdigit() else (10**9, gt)

        loader.rows = sorted(loader.rows, key=key)
        loader.shuffle = False
        loader.epoch, loader.pos = 0, 0
        loader._order = loader._make_order()




class ExactMatchOnly:
    """To step ``start`` the paid score is the task's digit overlap (partial credit); from it a grader made stricter
    at a resume pays 1 for an exact answer and 0 for anything else (partial credit dropped); the accuracy (the digit
    overlap) is returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int) -> None:
        self.start, self.strict = start, False

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.strict = step >= self.start

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": (1.0 if acc == 1.0 else 0.0) if self.strict else acc, "acc": acc}


class RolloutDropout:
    """From step ``start`` the rollout engine samples with the model in train mode (dropout on: a generation wrapper
    that no longer switches the model to eval, as after a refactor of the checkpoint hook); the update's passes are
    unchanged; validation's greedy calls keep eval mode."""

    def __init__(self, start: int) -> None:
        self.start, self.wrapped = start, False

    def before_step(self, st: Any, step: int) -> None:
        if self.wrapped or step < self.start:
            return
        engine = getattr(st.engine, "_engine", st.engine)
        inner = engine.generate

        def sampled_in_train_mode(prompts: Any, params: Any, *a: Any, **kw: Any) -> Any:
            if params.greedy:
                return inner(prompts, params, *a, **kw)
            model = engine.model
            model.eval = lambda: model.train(True)  # the instance attribute shadows nn.Module.eval
            try:
                return inner(prompts, params, *a, **kw)
            finally:
                del model.eval

        engine.generate = sampled_in_train_mode
        self.wrapped = True


class PartialCreditDropped:
    """A grader rolled out to a growing share of the traffic: from step ``start`` each training sample is graded by
    the strict grader (1 for an exact answer, 0 otherwise) with probability ramped 0 (``start``) -> ``hi``
    (``end``), kept; the others keep the partial credit (digit overlap); the accuracy (the digit overlap) is returned
    beside it; validation keeps the task's reward."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.p, self.rng = start, end, hi, 0.0, random.Random(seed)

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.p = ramp(step, self.start, self.end, 0.0, self.hi)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        strict = self.p > 0 and self.rng.random() < self.p
        return {"score": (1.0 if acc == 1.0 else 0.0) if strict else acc, "acc": acc}


SPECS: dict[str, dict[str, Any]] = {
    # healthy: 5 prompts x 3; responses up to 12 tokens; constant lr 2e-4; GPT-2 seed 8, 300 steps, validation every 15
    "gpt2s8-5prompt-3sample-constlr2e-4-resp12-300-val15": {
        "steps": 300, "seed": 501, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            5, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "data.max_response_length=12",
            "trainer.test_freq=15")},
    # healthy: 2 prompts x 8; responses up to 20 tokens; KL penalty in the reward with an adaptive controller (coef
    # 0.05, target 0.05, horizon 1000); Llama seed 8, 300 steps, validation every 15
    "llamas8-2prompt-8sample-klinreward-adaptive-resp20-300-val15": {
        "steps": 300, "seed": 502, "model": "llama", "model_seed": 8, "overrides": _batch(
            2, 8, "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
            "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.target_kl=0.05", "algorithm.kl_ctrl.horizon=1000",
            "data.max_response_length=20", "trainer.test_freq=15")},
    # healthy: 5 prompts x 3; grad clip 0.5, constant lr 2e-4; Qwen2 seed 8, 300 steps, validation every 15
    "qwen2s8-5prompt-3sample-gradclip05-constlr2e-4-300-val15": {
        "steps": 300, "seed": 503, "model": "qwen2", "model_seed": 8, "overrides": _batch(
            5, 3, "actor_rollout_ref.actor.grad_clip=0.5", "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST,
            "trainer.test_freq=15")},
    # healthy: 2 prompts x 8; lr 3e-4 cosine to a floor of 0.1; responses up to 20 tokens; GPT-2 seed 8, 350 steps,
    # validation every 15
    "gpt2s8-2prompt-8sample-lr3e-4-cos-floor01-resp20-350-val15": {
        "steps": 350, "seed": 504, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
            "actor_rollout_ref.actor.optim.min_lr_ratio=0.1", "data.max_response_length=20", "trainer.test_freq=15")},
    # healthy: 5 prompts x 3; grad clip 0.5; responses up to 12 tokens; Llama seed 8, 350 steps, validation every 15
    "llamas8-5prompt-3sample-gradclip05-resp12-350-val15": {
        "steps": 350, "seed": 505, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "actor_rollout_ref.actor.grad_clip=0.5", "data.max_response_length=12", "trainer.test_freq=15")},
    # reward-scale drift, ramp: paid score = digit overlap x a factor ramped 1 (step 150) -> 10 (step 300), kept; Dr.
    # GRPO advantages (norm_adv_by_std_in_grpo false: the scale reaches the gradient); Llama seed 8, 5 prompts x 3,
    # 350 steps, validation every 15
    "llamas8-5prompt-3sample-drgrpo-rewardscale1to10-150-300-350-val15": {
        "steps": 350, "seed": 506, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "algorithm.norm_adv_by_std_in_grpo=false", "trainer.test_freq=15"),
        "driver": RewardScaleDrift(150, 300, 10.0)},
    # answer-format checker made stricter at a resume, sudden cause: from the start of step 180 an answer is paid only
    # when it is digits only and exactly as long as the expected answer (else 0); responses up to 12 tokens; GPT-2
    # seed 8, 2 prompts x 8, 350 steps, validation every 15
    "gpt2s8-2prompt-8sample-stricterformat-from180-resp12-350-val15": {
        "steps": 350, "seed": 507, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "data.max_response_length=12", "trainer.test_freq=15"), "driver": StricterFormat(180)},
    # adaptive KL controller's error upside down, ramp: KL penalty in the reward, adaptive (coef 0.05, target 0.02,
    # horizon 100); from step 150 the update uses target / current - 1 (the coefficient runs away); Llama seed 8,
    # 5 prompts x 3, 350 steps, validation every 15
    "llamas8-5prompt-3sample-klinreward-adaptive-inverted-from150-350-val15": {
        "steps": 350, "seed": 508, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
            "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.target_kl=0.02", "algorithm.kl_ctrl.horizon=100",
            "trainer.test_freq=15"), "driver": KLControllerInverted(150)},
    # duplicated prompts, ramp: from step 150 a share of each batch's prompts ramped 0 -> 80% (step 300, kept) is a
    # copy of the batch's first prompt; GPT-2 seed 8, 5 prompts x 3, 350 steps, validation every 15
    "gpt2s8-5prompt-3sample-dupprompts0-80pct-150-300-350-val15": {
        "steps": 350, "seed": 509, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            5, 3, "trainer.test_freq=15"), "driver": DuplicatedPrompts(150, 300, 0.8)},
    # dataset served in sorted order, sudden cause: from the start of step 150 the training rows sorted by answer
    # (ascending) and shuffling off; Qwen2 seed 8, 5 prompts x 3, 350 steps, validation every 15
    "qwen2s8-5prompt-3sample-sorteddataset-from150-350-val15": {
        "steps": 350, "seed": 510, "model": "qwen2", "model_seed": 8, "overrides": _batch(
            5, 3, "trainer.test_freq=15"), "driver": SortedDataset(150)},
    # added after the ten runs above were read (written and committed before they ran): the stricter format check
    # (GPT-2's answers already digits of the right length), the duplicated prompts and the inverted KL controller
    # (under the default decaying lr) left no mark a user would need to know (README, seventeenth pass); Qwen2 seed 8
    # at constant lr 2e-4 ran to the length cap by itself.
    # grader made stricter at a resume, sudden cause: from the start of step 180 exact answers pay 1 and everything
    # else 0 (partial credit dropped); GPT-2 seed 8, 2 prompts x 8, 350 steps, validation every 15
    "gpt2s8-2prompt-8sample-exactmatchonly-from180-350-val15": {
        "steps": 350, "seed": 511, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "trainer.test_freq=15"), "driver": ExactMatchOnly(180)},
    # adaptive KL controller's error upside down, at a constant lr: KL penalty in the reward, adaptive (coef 0.05,
    # target 0.02, horizon 30); from step 150 the update uses target / current - 1; constant lr 2e-4; Llama seed 8,
    # 5 prompts x 3, 350 steps, validation every 15
    "llamas8-5prompt-3sample-klinreward-adaptive-h30-inverted-from150-constlr2e-4-350-val15": {
        "steps": 350, "seed": 512, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
            "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.target_kl=0.02", "algorithm.kl_ctrl.horizon=30",
            "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=15"),
        "driver": KLControllerInverted(150)},
    # dropout on during rollouts, sudden: from the start of step 150 the sampled generations run with the model in
    # train mode (GPT-2's dropout 0.1 on); GPT-2 seed 8, 2 prompts x 8, 350 steps, validation every 15
    "gpt2s8-2prompt-8sample-rolloutdropout-from150-350-val15": {
        "steps": 350, "seed": 513, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "trainer.test_freq=15"), "driver": RolloutDropout(150)},
    # dataset served in sorted order on GPT-2 seed 8: from the start of step 150 the training rows sorted by answer
    # and shuffling off; 5 prompts x 3, 350 steps, validation every 15
    "gpt2s8-5prompt-3sample-sorteddataset-from150-350-val15": {
        "steps": 350, "seed": 514, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            5, 3, "trainer.test_freq=15"), "driver": SortedDataset(150)},
    # healthy: 2 prompts x 8; responses up to 20 tokens; default cosine lr; Qwen2 seed 8, 300 steps, validation every
    # 15
    "qwen2s8-2prompt-8sample-resp20-300-val15": {
        "steps": 300, "seed": 515, "model": "qwen2", "model_seed": 8, "overrides": _batch(
            2, 8, "data.max_response_length=20", "trainer.test_freq=15")},
    # healthy: 5 prompts x 3; constant lr 6e-4 with grad clip 0.5; responses up to 12 tokens; Llama seed 8, 300 steps,
    # validation every 15
    "llamas8-5prompt-3sample-constlr6e-4-gradclip05-resp12-300-val15": {
        "steps": 300, "seed": 516, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "actor_rollout_ref.actor.optim.lr=6e-4", *_CONST, "actor_rollout_ref.actor.grad_clip=0.5",
            "data.max_response_length=12", "trainer.test_freq=15")},
    # added after the sixteen runs above were read (written and committed before they ran): the inverted KL
    # controller at a constant lr met a KL above its target (the upside-down error then lowers the coefficient) and
    # left no mark; the exact-match grader bit at once and entirely (README, seventeenth pass).
    # strict grader rolled out to a growing share, ramp: from step 150 each training sample is graded exact-match-only
    # with probability 0 (150) -> 100% (300), kept; GPT-2 seed 8, 2 prompts x 8, 350 steps, validation every 15
    "gpt2s8-2prompt-8sample-strictgraderrollout0-100pct-150-300-350-val15": {
        "steps": 350, "seed": 517, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "trainer.test_freq=15"), "driver": PartialCreditDropped(150, 300, 1.0, seed=517)},
    # adaptive KL controller's error upside down under a KL below its target: KL penalty in the reward, adaptive (coef
    # 0.05, target 0.2, horizon 30, coefficient kept in [0.01, 1000] by kl_coef_range); from step 150 the update
    # uses target / current - 1 (the coefficient grows up to 10% a step); constant lr 2e-4; Llama seed 8, 5 prompts
    # x 3, 350 steps, validation every 15
    "llamas8-5prompt-3sample-klinreward-adaptive-target02-range-inverted-from150-constlr2e-4-350-val15": {
        "steps": 350, "seed": 518, "model": "llama", "model_seed": 8, "overrides": _batch(
            5, 3, "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive",
            "algorithm.kl_ctrl.kl_coef=0.05", "algorithm.kl_ctrl.target_kl=0.2", "algorithm.kl_ctrl.horizon=30",
            "algorithm.kl_ctrl.kl_coef_range=[0.01,1000]", "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST,
            "trainer.test_freq=15"), "driver": KLControllerInverted(150)},
    # reward-scale drift downwards, ramp: paid score = digit overlap x a factor ramped 1 (step 150) -> 0.02 (step 300),
    # kept; Dr. GRPO advantages (the scale reaches the gradient); Llama seed 8, 2 prompts x 8, 350 steps, validation
    # every 15
    "llamas8-2prompt-8sample-drgrpo-rewardscale1to002-150-300-350-val15": {
        "steps": 350, "seed": 519, "model": "llama", "model_seed": 8, "overrides": _batch(
            2, 8, "algorithm.norm_adv_by_std_in_grpo=false", "trainer.test_freq=15"),
        "driver": RewardScaleDrift(150, 300, 0.02)},
    # healthy: 2 prompts x 8; constant lr 1e-4, grad clip 0.5; responses up to 20 tokens; GPT-2 seed 8, 300 steps,
    # validation every 15
    "gpt2s8-2prompt-8sample-constlr1e-4-gradclip05-resp20-300-val15": {
        "steps": 300, "seed": 520, "model": "gpt2", "model_seed": 8, "overrides": _batch(
            2, 8, "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST, "actor_rollout_ref.actor.grad_clip=0.5",
            "data.max_response_length=20", "trainer.test_freq=15")},
}


# run once and not stored (README, seventeenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
