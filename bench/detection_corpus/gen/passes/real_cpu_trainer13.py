"""Eighteenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu13``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu12``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **GDPO** advantages (``algorithm.adv_estimator=gdpo``: with **one reward component** ``acc``, group-normalised
then whitened over the batch, and with **two reward components** ``acc`` / ``fmt`` weighted 1 / 0.5); a **narrow clip 0.1
with dual-clip 2.0 over 3 PPO epochs**; batch shapes **4 prompts x 3**, **3 prompts x 6**, **7 prompts x 2**, **2
prompts x 5**, **6 prompts x 3**; responses up to **10 / 14 / 28** tokens; **no shuffling** with **no validation
before training**; **sampled validation** (temperature 0.6, 3 per prompt); validation every **12 / 18 / 40**; 300-350
steps; models built from **model seed 9** (another tokenizer sample, init and warm-up than every earlier CPU run;
``real_trainer.bpe_model_dir``, built in code); seeds 541-560 (557-560: specs added after earlier runs were read,
each committed before it ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**grader that starts raising** for a growing share of samples (counted by the trainer, which stops the run when the
failure rate passes ``reward.max_failure_rate``) and for a fixed 30% with the tolerance raised to 0.5 (the run goes
on); a **BOS token prepended to every prompt** at a resume (a tokenizer config change, training and validation); a
**prompt template changed** at a resume (spaces around '+' and '=': characters the tokenizer never saw); the
**advantages' sign flipped for the second half of the batch** (one data-parallel shard computing the sign wrong); the
**advantages permuted across rows** (a row-order bug after re-sorting the batch); the **generation length cap
shrinking** 14 -> 1 (training and validation); a **KL-loss coefficient schedule gone wrong** (0.001 -> 10); **empty
prompts** for a growing share of the batch (a BOS-only prompt: a formatter that drops the user message); a **reward
memoised by question** (a cache keyed by the question, not the response: every response to a seen question gets the
first response's score); added later (seeds 557-560, committed before they ran): the **advantages' sign flipped for a
growing share of rows** (0 -> 100%), the permuted advantages and the empty prompts at a constant lr 2e-4, and their
matched healthy control.
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu13/<name>/`` and labelled by reading it (README, eighteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer13.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer13.py NAME ...   # only these specs
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
import torch
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_trainer import digit_overlap

from rlcockpit.algos import ADV_ESTIMATORS
from rlcockpit.algos.advantages import compute_grpo_outcome_advantage

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu13"


class RewardComponents:
    """The reward function returns the task's digit overlap as ``score`` and ``acc`` and a format check ``fmt`` (1.0
    when the stripped answer is digits only and non-empty) beside it, for GDPO's reward components (a healthy
    setting); validation keeps the task's reward."""

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}

    @staticmethod
    def reward(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        got = solution_str.strip()
        return {"score": acc, "acc": acc, "fmt": 1.0 if got.isdigit() else 0.0}


class RaisingGrader:
    """From step ``start`` the grader raises (``TimeoutError``, a remote grader's time-out) for each training sample
    with probability ramped 0 (``start``) -> ``hi`` (``end``), kept; the trainer counts each as a failure, scores it
    0 and stops the run when its failure rate passes ``reward.max_failure_rate``; the others are paid the digit
    overlap (returned as ``acc`` too); validation keeps the task's reward."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.p, self.rng = start, end, hi, 0.0, random.Random(seed)

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.p = ramp(step, self.start, self.end, 0.0, self.hi) if self.end > self.start else \
            (self.hi if step >= self.start else 0.0)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        if self.p > 0 and self.rng.random() < self.p:
            raise TimeoutError("grader did not answer within 10 s")
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": acc, "acc": acc}


def _bos_ids(st: Any, row: Any) -> Any:
    bos = st.tokenizer.eos_token_id  # the corpus models' BOS is their EOS
    return dataclasses.replace(row, input_ids=[bos, *row.input_ids])


class BosPrepended:
    """At the start of step ``start`` (a resume under a tokenizer config with ``add_bos_token`` on) every training
    and validation prompt gets the BOS token (the corpus models' EOS id) in front of its tokens."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        st.loader.rows = [_bos_ids(st, r) for r in st.loader.rows]
        st.val_rows[:] = [_bos_ids(st, r) for r in st.val_rows]


def _spaced(st: Any, row: Any) -> Any:
    text = row.text.replace("+", " + ").replace("=", " =")
    return dataclasses.replace(row, text=text, input_ids=list(st.tokenizer(text, add_special_tokens=False)["input_ids"]))


class TemplateSpaces:
    """At the start of step ``start`` (a resume with a changed prompt template) every training and validation prompt
    is rendered with spaces around '+' and before '=' ("12 + 34 =" for "12+34="), re-tokenized: the corpus tokenizer
    never saw a space (it becomes its unknown token)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        st.loader.rows = [_spaced(st, r) for r in st.loader.rows]
        st.val_rows[:] = [_spaced(st, r) for r in st.val_rows]


_ADV_DRIVER: dict[str, Any] = {}


def _grpo_then(name: str) -> None:
    """Register ``name``: GRPO advantages, then the active driver's ``corrupt`` applied to the (bs, T) tensors."""
    if name in ADV_ESTIMATORS:
        return

    @ADV_ESTIMATORS.register(name)
    def estimator(*, token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None,
                  norm_adv_by_std_in_grpo: bool = True, epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
        adv, ret = compute_grpo_outcome_advantage(
            token_level_rewards=token_level_rewards, response_mask=response_mask, index=index,
            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, epsilon=epsilon)
        adv = _ADV_DRIVER[name].corrupt(adv)
        return adv, adv.clone()


class AdvantageSignFlipHalf:
    """From step ``start`` the GRPO advantages of the batch's second half of rows (its last prompts' groups: the
    rows one of two data-parallel shards holds) are negated (that shard computes the sign wrong); the first half is
    untouched."""

    name = "corpus_grpo_signflip_half"

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            _grpo_then(self.name)
            _ADV_DRIVER[self.name] = self
            st.cfg.algorithm.adv_estimator = self.name

    @staticmethod
    def corrupt(adv: torch.Tensor) -> torch.Tensor:
        out = adv.clone()
        out[adv.shape[0] // 2:] *= -1.0
        return out


class AdvantagesPermuted:
    """From step ``start`` the GRPO advantages are handed to the update with their rows permuted at random (seeded):
    each response is trained with another response's advantage (a row-order bug after re-sorting the batch by
    length)."""

    name = "corpus_grpo_permuted"

    def __init__(self, start: int, seed: int) -> None:
        self.start, self.gen = start, torch.Generator().manual_seed(seed)

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            _grpo_then(self.name)
            _ADV_DRIVER[self.name] = self
            st.cfg.algorithm.adv_estimator = self.name

    def corrupt(self, adv: torch.Tensor) -> torch.Tensor:
        perm = torch.randperm(adv.shape[0], generator=self.gen)
        return adv[perm].clone()


class ResponseCapShrinks:
    """From step ``start`` the generation length cap (``data.max_response_length``, read by sampling and
    validation) is ramped down ``hi`` (``start``) -> ``lo`` (``end``), rounded, kept (a serving config whose
    max_tokens is cut step by step)."""

    def __init__(self, start: int, end: int, hi: int, lo: int) -> None:
        self.start, self.end, self.hi, self.lo = start, end, hi, lo

    def before_step(self, st: Any, step: int) -> None:
        st.cfg.data.max_response_length = int(round(ramp(step, self.start, self.end, self.hi, self.lo)))


class KLLossCoefRamp:
    """From step ``start`` the KL-loss coefficient (``actor.kl_loss_coef``, read by every update) follows a schedule
    gone wrong: ramped ``lo`` (``start``) -> ``hi`` (``end``) geometrically, kept."""

    def __init__(self, start: int, end: int, lo: float, hi: float) -> None:
        self.start, self.end, self.lo, self.hi = start, end, lo, hi

    def before_step(self, st: Any, step: int) -> None:
        frac = ramp(step, self.start, self.end, 0.0, 1.0)
        st.cfg.actor.kl_loss_coef = self.lo * (self.hi / self.lo) ** frac


class EmptyPrompts:
    """From step ``start`` a share of each training batch's prompts, ramped 0 (``start``) -> ``hi`` (``end``), kept,
    is served empty (its tokens replaced by the BOS token alone: a formatter that drops the user message); the
    ground truth stays; validation untouched."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.share = start, end, hi, 0.0
        self.rng, self.wrapped = random.Random(seed), False

    def before_step(self, st: Any, step: int) -> None:
        self.share = ramp(step, self.start, self.end, 0.0, self.hi)
        if self.wrapped or step < self.start:
            return
        loader, bos = st.loader, st.tokenizer.eos_token_id
        inner = loader.next_batch

        def some_empty(k: int | None = None) -> list[Any]:
            return [dataclasses.replace(r, input_ids=[bos], text="") if self.rng.random() < self.share else r
                    for r in inner(k)]

        loader.next_batch = some_empty
        self.wrapped = True


class RewardMemoisedByQuestion:
    """From step ``start`` the grader caches its score by question (the row's operands), not by response: the first
    response graded for a question from then on sets the score every later response to it gets (this step's
    other samples and any later step's); the true digit overlap is returned as ``acc`` beside it; validation keeps
    the task's reward."""

    def __init__(self, start: int) -> None:
        self.start, self.on, self.cache = start, False, {}

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.on = step >= self.start

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if not self.on:
            return {"score": acc, "acc": acc}
        key = (data_source, str(ground_truth), tuple(sorted((extra_info or {}).items())))
        return {"score": self.cache.setdefault(key, acc), "acc": acc}


class AdvantageSignFlipShare:
    """From step ``start`` each row's GRPO advantage is negated with probability ramped 0 (``start``) -> ``hi``
    (``end``), kept (seeded draws per row: a sign bug spreading over more and more of the batch, as shards are
    migrated one by one to a version with the bug)."""

    name = "corpus_grpo_signflip_share"

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.p = start, end, hi, 0.0
        self.gen = torch.Generator().manual_seed(seed)

    def before_step(self, st: Any, step: int) -> None:
        self.p = ramp(step, self.start, self.end, 0.0, self.hi)
        if step == self.start:
            _grpo_then(self.name)
            _ADV_DRIVER[self.name] = self
            st.cfg.algorithm.adv_estimator = self.name

    def corrupt(self, adv: torch.Tensor) -> torch.Tensor:
        flip = torch.rand(adv.shape[0], generator=self.gen) < self.p
        sign = 1.0 - 2.0 * flip.to(adv.dtype)
        return adv * sign.unsqueeze(-1)


SPECS: dict[str, dict[str, Any]] = {
    # healthy: GDPO over one reward component, acc (the digit overlap: group-normalised, then whitened over the
    # batch); 4 prompts x 3; responses up to 10 tokens; GPT-2 seed 9, 300 steps, validation every 12
    "gpt2s9-4prompt-3sample-gdpo-acc-resp10-300-val12": {
        "steps": 300, "seed": 541, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "algorithm.adv_estimator=gdpo", "algorithm.gdpo_reward_keys=[acc]", "data.max_response_length=10",
            "trainer.test_freq=12"), "driver": RewardComponents()},
    # healthy: narrow clip 0.1 (low and high) with dual-clip 2.0 over 3 PPO epochs a step; 3 prompts x 6; responses up
    # to 14 tokens; Llama seed 9, 300 steps, validation every 18
    "llamas9-3prompt-6sample-clip01-dualclip2-3epochs-resp14-300-val18": {
        "steps": 300, "seed": 542, "model": "llama", "model_seed": 9, "overrides": _batch(
            3, 6, "actor_rollout_ref.actor.clip_ratio_low=0.1", "actor_rollout_ref.actor.clip_ratio_high=0.1",
            "actor_rollout_ref.actor.clip_ratio_c=2.0", "actor_rollout_ref.actor.ppo_epochs=3",
            "data.max_response_length=14", "trainer.test_freq=18")},
    # healthy: 7 prompts x 2; responses up to 28 tokens; default cosine lr; Qwen2 seed 9, 300 steps, validation every 40
    "qwen2s9-7prompt-2sample-resp28-300-val40": {
        "steps": 300, "seed": 543, "model": "qwen2", "model_seed": 9, "overrides": _batch(
            7, 2, "data.max_response_length=28", "trainer.test_freq=40")},
    # healthy: 2 prompts x 5; no shuffling (data.shuffle false), no validation before training; constant lr 1e-4;
    # GPT-2 seed 9, 300 steps, validation every 12
    "gpt2s9-2prompt-5sample-noshuffle-novalbefore-constlr1e-4-300-val12": {
        "steps": 300, "seed": 544, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            2, 5, "data.shuffle=false", "trainer.val_before_train=false", "actor_rollout_ref.actor.optim.lr=1e-4",
            *_CONST, "trainer.test_freq=12")},
    # healthy: GDPO over two reward components, acc (digit overlap) weight 1 and fmt (digits-only answer) weight 0.5;
    # 4 prompts x 3; Llama seed 9, 300 steps, validation every 12
    "llamas9-4prompt-3sample-gdpo-acc-fmt-300-val12": {
        "steps": 300, "seed": 545, "model": "llama", "model_seed": 9, "overrides": _batch(
            4, 3, "algorithm.adv_estimator=gdpo", "algorithm.gdpo_reward_keys=[acc,fmt]",
            "algorithm.gdpo_reward_weights=[1.0,0.5]", "trainer.test_freq=12"), "driver": RewardComponents()},
    # healthy: 6 prompts x 3; sampled validation (temperature 0.6, 3 per prompt: mean@3); responses up to 10 tokens;
    # Qwen2 seed 9, 300 steps, validation every 40
    "qwen2s9-6prompt-3sample-valsample-t06-n3-resp10-300-val40": {
        "steps": 300, "seed": 546, "model": "qwen2", "model_seed": 9, "overrides": _batch(
            6, 3, "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
            "actor_rollout_ref.rollout.val_kwargs.temperature=0.6", "actor_rollout_ref.rollout.val_kwargs.n=3",
            "data.max_response_length=10", "trainer.test_freq=40")},
    # grader raising for a growing share, ramp, ends in a stop: from step 150 each training sample's grading raises a
    # time-out with probability 0 (150) -> 100% (260), kept; the trainer scores it 0, counts it, and stops the run when
    # the failure rate passes reward.max_failure_rate (default 0.2); GPT-2 seed 9, 4 prompts x 3, 350 steps,
    # validation every 12
    "gpt2s9-4prompt-3sample-graderraises0-100pct-150-260-350-val12": {
        "steps": 350, "seed": 547, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": RaisingGrader(150, 260, 1.0, seed=547)},
    # BOS prepended to every prompt at a resume, sudden: from the start of step 150 every training and validation
    # prompt starts with the BOS (= EOS) token; Llama seed 9, 3 prompts x 6, 350 steps, validation every 18
    "llamas9-3prompt-6sample-bosprepended-from150-350-val18": {
        "steps": 350, "seed": 548, "model": "llama", "model_seed": 9, "overrides": _batch(
            3, 6, "trainer.test_freq=18"), "driver": BosPrepended(150)},
    # advantages' sign flipped for the batch's second half, sudden: from step 150 the last 2 of 4 prompts' groups are
    # trained with negated GRPO advantages; GPT-2 seed 9, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s9-4prompt-3sample-advsignflip-half-from150-350-val12": {
        "steps": 350, "seed": 549, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": AdvantageSignFlipHalf(150)},
    # generation length cap shrinking, ramp: data.max_response_length 14 (step 150) -> 1 (step 300), kept (training and
    # validation); GPT-2 seed 9, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s9-4prompt-3sample-respcap14to1-150-300-350-val12": {
        "steps": 350, "seed": 550, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "data.max_response_length=14", "trainer.test_freq=12"), "driver": ResponseCapShrinks(150, 300, 14, 1)},
    # KL-loss coefficient schedule gone wrong, ramp: KL loss (low_var_kl) at 0.001 to step 150, then ramped
    # geometrically 0.001 -> 10 (step 300), kept; Llama seed 9, 4 prompts x 3, 350 steps, validation every 12
    "llamas9-4prompt-3sample-klloss-coef0001to10-150-300-350-val12": {
        "steps": 350, "seed": 551, "model": "llama", "model_seed": 9, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
            "actor_rollout_ref.actor.kl_loss_coef=0.001", "trainer.test_freq=12"),
        "driver": KLLossCoefRamp(150, 300, 0.001, 10.0)},
    # empty prompts, ramp: from step 150 a share of each batch's prompts ramped 0 -> 60% (step 300, kept) served as
    # the BOS token alone; Qwen2 seed 9, 6 prompts x 3, 350 steps, validation every 40
    "qwen2s9-6prompt-3sample-emptyprompts0-60pct-150-300-350-val40": {
        "steps": 350, "seed": 552, "model": "qwen2", "model_seed": 9, "overrides": _batch(
            6, 3, "trainer.test_freq=40"), "driver": EmptyPrompts(150, 300, 0.6, seed=552)},
    # advantages permuted across rows, sudden: from step 150 each response is trained with another (random) row's
    # GRPO advantage; GPT-2 seed 9, 2 prompts x 5, 350 steps, validation every 12
    "gpt2s9-2prompt-5sample-advpermuted-from150-350-val12": {
        "steps": 350, "seed": 553, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            2, 5, "trainer.test_freq=12"), "driver": AdvantagesPermuted(150, seed=553)},
    # reward memoised by question, sudden: from step 180 the first score graded for a question is paid to every later
    # response to it; Llama seed 9, 4 prompts x 3, 350 steps, validation every 12
    "llamas9-4prompt-3sample-rewardmemo-from180-350-val12": {
        "steps": 350, "seed": 554, "model": "llama", "model_seed": 9, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": RewardMemoisedByQuestion(180)},
    # grader raising for a fixed share, sudden, tolerated: from step 200 each training sample's grading raises with
    # probability 30%; reward.max_failure_rate raised to 0.5 so the run goes on; Llama seed 9, 3 prompts x 6, 350
    # steps, validation every 18
    "llamas9-3prompt-6sample-graderraises30pct-from200-maxfail05-350-val18": {
        "steps": 350, "seed": 555, "model": "llama", "model_seed": 9, "overrides": _batch(
            3, 6, "reward.max_failure_rate=0.5", "trainer.test_freq=18"),
        "driver": RaisingGrader(200, 200, 0.3, seed=555)},
    # prompt template changed at a resume, sudden: from the start of step 150 every training and validation prompt is
    # rendered "12 + 34 =" (spaces the tokenizer never saw); GPT-2 seed 9, 4 prompts x 3, 350 steps, validation every
    # 12
    "gpt2s9-4prompt-3sample-templatespaces-from150-350-val12": {
        "steps": 350, "seed": 556, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": TemplateSpaces(150)},
    # added after the runs above were read (written and committed before they ran): under the default lr (5e-5,
    # cosine to 0) the BOS token, the half-batch sign flip and the shrinking cap moved little in the training series;
    # these four run at a constant lr 2e-4 (the last one the matched healthy control), seeds 557-560.
    # advantages' sign flipped for a growing share of rows, ramp: from step 150 each row's GRPO advantage negated with
    # probability 0 (150) -> 100% (300), kept; constant lr 2e-4; GPT-2 seed 9, 4 prompts x 3, 350 steps, validation
    # every 12
    "gpt2s9-4prompt-3sample-advsignflip0-100pct-150-300-constlr2e-4-350-val12": {
        "steps": 350, "seed": 557, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12"),
        "driver": AdvantageSignFlipShare(150, 300, 1.0, seed=557)},
    # advantages permuted across rows at a constant lr, sudden: from step 150 each response is trained with another
    # (random) row's GRPO advantage; constant lr 2e-4; GPT-2 seed 9, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s9-4prompt-3sample-advpermuted-from150-constlr2e-4-350-val12": {
        "steps": 350, "seed": 558, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12"),
        "driver": AdvantagesPermuted(150, seed=558)},
    # empty prompts at a constant lr, ramp: from step 150 a share of each batch's prompts ramped 0 -> 60% (step 300,
    # kept) served as the BOS token alone; constant lr 2e-4; GPT-2 seed 9, 4 prompts x 3, 350 steps, validation every
    # 12
    "gpt2s9-4prompt-3sample-emptyprompts0-60pct-150-300-constlr2e-4-350-val12": {
        "steps": 350, "seed": 559, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12"),
        "driver": EmptyPrompts(150, 300, 0.6, seed=559)},
    # healthy: the matched control of the three above, nothing changed; constant lr 2e-4; GPT-2 seed 9, 4 prompts x 3,
    # 350 steps, validation every 12
    "gpt2s9-4prompt-3sample-constlr2e-4-350-val12": {
        "steps": 350, "seed": 560, "model": "gpt2", "model_seed": 9, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12")},
}


# run once and not stored (README, eighteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
