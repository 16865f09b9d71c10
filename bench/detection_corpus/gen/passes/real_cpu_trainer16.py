"""Twenty-first pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu16``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu15``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **GSPO under seq-mean-token-mean** (GSPO ran once before, under token-mean); **CISPO with one prompt x 6**;
**ReMax as a healthy run** (ReMax ran once before, as a fault); the **token-sum loss aggregation with the KL loss's
straight-through abs+ estimator**; a **700-step one-prompt run**; **LoRA rank 16 at lr 2e-4 (cosine) as a healthy run**
(LoRA ran once, as a fault); **OPO with 2 prompts x 6**; **bf16 autocast over fp32 weights** (``model.dtype=bf16``) on
CPU; a constant-lr 2e-4 matched control; batch shapes **1 prompt x 4 / x 6**, **2 x 4 / x 6**, **3 x 4**, **4 x 3**;
validation every **10 / 12 / 13 / 14 / 15 / 17 / 18 / 19 / 20 / 35**; models built from **model seed 12** (another
tokenizer sample, init and warm-up than every earlier CPU run; ``real_trainer.bpe_model_dir``, built in code); seeds
801-823 (820-823: specs added after the first runs were read, committed before they ran: the constant-lr GPT-2 faults
again at a constant lr of 1e-4 beside a matched control, the 2e-4 control having lengthened by itself).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**lenient grader that pays 1.0 whenever the answer appears anywhere in the response** (a substring check replacing the
partial-credit grader at a resume: an exploit the policy has to learn); a **fail-open grader whose timeout budget
shrinks** (responses longer than a character budget time out and are paid 1.0; the budget ramps 24 -> 4 characters
over 150-300: a reward server under growing load); the **rollout engine lagging behind the trainer by a growing
number of updates** (an asynchronous rollout queue filling up: lag 0 -> 8 steps over 150-300, the engine's log-probs
reported); **``optimizer.zero_grad`` skipped** from a resume (a refactor that dropped it: the gradients add up over
steps); the **critic's lr typed 1000x** (1e-5 -> 1e-2) at a resume under GAE; the **serving config's ``min_tokens=6``**
(the engine may not stop before 6 new tokens, training and validation); a **harder 3-digit data shard mixed in at a
growing share** (0 -> 100% of the training prompts over 150-300: a data-mix weight scheduled the wrong way; validation
untouched); the **GRPO advantage without its epsilon** (``(s - mean) / std``: a group whose responses all score the
same gives 0 / 0); two faults meant to leave no mark: the **paid score rounded to 2 decimals** (a reward server's JSON
serialisation) and the **gradient clip typed 1e-4 for 1.0** under AdamW (Adam divides the scale back out).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process** (several
drivers patch module functions of the trainer for the rest of the process): the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu16/<name>/`` and labelled by reading it (README, twenty-first pass).

    for n in $(python -c 'import real_cpu_trainer16 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer16.py $n; done   # one process per spec
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
import torch
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_cpu_trainer15 import _PaidReward
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu16"


class SubstringGrader(_PaidReward):
    """From step ``start`` (a resume under a lenient grader) the paid score is 1.0 whenever the answer appears anywhere
    in the response (``str(answer) in response``), else the task's digit overlap; the task's digit overlap is returned
    beside it as ``acc`` from step 1."""

    def __init__(self, start: int) -> None:
        self.start, self.step = start, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step >= self.start and str(ground_truth) in solution_str:
            return {"score": 1.0, "acc": acc}
        return {"score": acc, "acc": acc}


class FailOpenGrader(_PaidReward):
    """From step ``start`` responses longer than a character budget time out at the grader, which fails open (pays
    1.0); the budget ramps ``hi`` (``start``) -> ``lo`` (``end``) characters, kept (a reward server under growing
    load). The task's digit overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int, end: int, hi: int, lo: int) -> None:
        self.start, self.end, self.hi, self.lo, self.step = start, end, hi, lo, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step >= self.start and len(solution_str) > ramp(self.step, self.start, self.end, self.hi, self.lo):
            return {"score": 1.0, "acc": acc}
        return {"score": acc, "acc": acc}


class RoundedScores(_PaidReward):
    """From step ``start`` the paid score is the task's digit overlap rounded to 2 decimals (a reward server's JSON
    serialisation: 0.333 -> 0.33, 0.667 -> 0.67); nothing else changes."""

    def __init__(self, start: int) -> None:
        self.start, self.step = start, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        s = digit_overlap(data_source, solution_str, ground_truth)
        return round(s, 2) if self.step >= self.start else s


class GrowingRolloutLag:
    """From step ``start`` the rollout engine samples from (and reports the log-probs of) a snapshot of the actor
    ``lag`` updates old, the lag ramping 0 (``start``) -> ``hi`` (``end``) steps, kept (an asynchronous rollout queue
    filling up); the trainer's old log-probs come from the current actor."""

    def __init__(self, start: int, end: int, hi: int) -> None:
        self.start, self.end, self.hi = start, end, hi
        self.snaps: dict[int, Any] = {}

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        if step == self.start:
            st.engine.sync_weights = lambda model: None  # the engine's model is set here, before each step
        self.snaps[step] = copy.deepcopy(st.actor)  # the actor before this step's update
        lag = round(ramp(step, self.start, self.end, 0, self.hi))
        st.engine.model = st.actor if lag == 0 else self.snaps[max(self.start, step - lag)]
        for k in [k for k in self.snaps if k < step - self.hi]:
            del self.snaps[k]


class ZeroGradSkipped:
    """From step ``start`` (a refactor that dropped it, at a resume) the actor optimizer's ``zero_grad`` does nothing:
    every backward adds to the gradients of all the steps before (clipped at grad_clip, then AdamW)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.actor_opt.zero_grad = lambda *a, **k: None


class CriticLrTypo:
    """From step ``start`` (a resume whose critic optimizer config had the lr typed ``factor`` times too large) the
    critic's lr, and its scheduler's base lr, are multiplied by ``factor``."""

    def __init__(self, start: int, factor: float) -> None:
        self.start, self.factor = start, factor

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            for g in st.critic_opt.param_groups:
                g["lr"] *= self.factor
            st.critic_sched.base_lrs = [b * self.factor for b in st.critic_sched.base_lrs]


class EngineMinTokens:
    """From step ``start`` (a serving config with ``min_tokens``) the rollout engine may not emit the stop token
    before ``n`` new tokens (its logits set to -inf there), in training and validation; the trainer scores the
    responses as before."""

    def __init__(self, start: int, n: int) -> None:
        self.start, self.n, self.done, self.t = start, n, False, 0

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.rollout.engine as eng

        engine = getattr(st.engine, "wrapped", st.engine)  # the engine itself (under its per-row-seed wrapper)
        inner_gen, eos = engine.generate, engine.eos_ids

        def no_stop(inner: Any) -> Any:
            def sample(logits: torch.Tensor, params: Any, *a: Any, **k: Any) -> torch.Tensor:
                if self.t < self.n:
                    logits = logits.clone()
                    logits[..., eos] = float("-inf")
                self.t += 1
                return inner(logits, params, *a, **k)
            return sample

        def generate(*a: Any, **k: Any) -> Any:
            self.t = 0
            return inner_gen(*a, **k)

        eng.sample_next_token = no_stop(eng.sample_next_token)
        eng.sample_with_uniforms = no_stop(eng.sample_with_uniforms)
        engine.generate, self.done = generate, True


class HarderShardMixedIn:
    """From step ``start`` a data shard of 3-digit additions (the built-in generator at ``digits=3``, same tokenizer)
    is mixed into the training prompts at a growing share: row ``i`` of the training set is replaced by row ``i`` of
    the 3-digit set when its own fixed uniform (seeded by ``seed``, i) is below the share, ramped 0 (``start``) ->
    ``hi`` (``end``), kept (a data-mix weight scheduled the wrong way). Validation untouched."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed = start, end, hi, seed
        self.base: list[Any] | None = None

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        ld = st.loader
        if self.base is None:
            from rlcockpit.trainer.data import load_datasets

            data3 = dataclasses.replace(st.cfg.data, builtin=dataclasses.replace(st.cfg.data.builtin, digits=3))
            self.hard = load_datasets(data3, st.tokenizer)[0]
            self.base = list(ld.rows)
            rng = random.Random(self.seed)
            self.u = [rng.random() for _ in self.base]
        share = ramp(step, self.start, self.end, 0.0, self.hi)
        ld.rows = [self.hard[i % len(self.hard)] if self.u[i] < share else r for i, r in enumerate(self.base)]


class GrpoWithoutEpsilon:
    """From step ``start`` (a custom advantage function that dropped the epsilon) the GRPO advantage is
    ``(s - mean) / std``: a group whose responses all score the same gives 0 / 0 (NaN), and the trainer skips an
    update whose loss is not finite."""

    def __init__(self, start: int) -> None:
        self.start, self.done = start, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        from rlcockpit.algos import ADV_ESTIMATORS

        ADV_ESTIMATORS._items["grpo"] = functools.partial(ADV_ESTIMATORS._items["grpo"], epsilon=0.0)
        self.done = True


class GradClipTypo:
    """From step ``start`` (a resume whose config had ``grad_clip: 1e-4`` for 1.0) the actor's gradient is clipped to
    norm ``clip`` (the logged grad norm is the one before clipping; AdamW divides the scale back out)."""

    def __init__(self, start: int, clip: float) -> None:
        self.start, self.clip = start, clip

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.actor.grad_clip = self.clip


_LOGPROBS = "actor_rollout_ref.rollout.calculate_log_probs=true"
_LR2E4 = ("actor_rollout_ref.actor.optim.lr=2e-4", *_CONST)
_LR1E4 = ("actor_rollout_ref.actor.optim.lr=1e-4", *_CONST)
_A = "actor_rollout_ref.actor"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: GSPO (sequence-level ratio) under seq-mean-token-mean; 2 prompts x 4; GPT-2 seed 12, 400 steps,
    # validation every 13
    "gpt2s12-2prompt-4sample-gspo-seqmeantokenmean-400-val13": {
        "steps": 400, "seed": 801, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            2, 4, f"{_A}.policy_loss.loss_mode=gspo", f"{_A}.loss_agg_mode=seq-mean-token-mean",
            "trainer.test_freq=13")},
    # healthy: CISPO (clipped IS-weight policy loss); 1 prompt x 6; Llama seed 12, 500 steps, validation every 15
    "llamas12-1prompt-6sample-cispo-500-val15": {
        "steps": 500, "seed": 802, "model": "llama", "model_seed": 12, "overrides": _batch(
            1, 6, f"{_A}.policy_loss.loss_mode=cispo", "trainer.test_freq=15")},
    # healthy: ReMax (a greedy rollout of each prompt as the baseline); 2 prompts x 4; Qwen2 seed 12, 300 steps,
    # validation every 12
    "qwen2s12-2prompt-4sample-remax-300-val12": {
        "steps": 300, "seed": 803, "model": "qwen2", "model_seed": 12, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=remax", "trainer.test_freq=12")},
    # healthy: token-sum loss aggregation with the KL loss's straight-through abs+ estimator, weight 0.005; 3 prompts x
    # 4; Llama seed 12, 350 steps, validation every 17
    "llamas12-3prompt-4sample-tokensum-klloss-absplus-coef0005-350-val17": {
        "steps": 350, "seed": 804, "model": "llama", "model_seed": 12, "overrides": _batch(
            3, 4, f"{_A}.loss_agg_mode=token-sum", f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_type=abs+",
            f"{_A}.kl_loss_coef=0.005", "trainer.test_freq=17")},
    # healthy: a 700-step run with one prompt x 4 per step; GPT-2 seed 12, validation every 35
    "gpt2s12-1prompt-4sample-700-val35": {
        "steps": 700, "seed": 805, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            1, 4, "trainer.test_freq=35")},
    # healthy: LoRA rank 16 (alpha 32, all linear layers) at lr 2e-4, cosine; 2 prompts x 4; GPT-2 seed 12, 350 steps,
    # validation every 14
    "gpt2s12-2prompt-4sample-lora16-lr2e-4-350-val14": {
        "steps": 350, "seed": 806, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            2, 4, "actor_rollout_ref.model.lora_rank=16", "actor_rollout_ref.model.lora_alpha=32",
            f"{_A}.optim.lr=2e-4", "trainer.test_freq=14")},
    # healthy: OPO (the length-weighted optimal baseline); 2 prompts x 6; Qwen2 seed 12, 350 steps, validation every 19
    "qwen2s12-2prompt-6sample-opo-350-val19": {
        "steps": 350, "seed": 807, "model": "qwen2", "model_seed": 12, "overrides": _batch(
            2, 6, "algorithm.adv_estimator=opo", "trainer.test_freq=19")},
    # healthy: the matched control of the constant-lr faults below, nothing changed; constant lr 2e-4; GPT-2 seed 12, 4
    # prompts x 3, 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-constlr2e-4-350-val14": {
        "steps": 350, "seed": 808, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14")},
    # healthy: bf16 autocast over fp32 weights (model.dtype=bf16) on CPU; 2 prompts x 4; Llama seed 12, 300 steps,
    # validation every 10
    "llamas12-2prompt-4sample-bf16autocast-300-val10": {
        "steps": 300, "seed": 809, "model": "llama", "model_seed": 12, "overrides": _batch(
            2, 4, "actor_rollout_ref.model.dtype=bf16", "trainer.test_freq=10")},
    # lenient grader at a resume, sudden cause (the exploit is learned): from step 150 the paid score is 1.0 whenever the
    # answer appears anywhere in the response, else the digit overlap; the task's accuracy logged beside it; constant
    # lr 2e-4; GPT-2 seed 12, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-substringgrader-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 810, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": SubstringGrader(150)},
    # fail-open grader under growing load, ramp: from step 150 responses longer than a character budget are paid 1.0,
    # the budget 24 (150) -> 4 (300) characters, kept; the task's accuracy logged beside it; constant lr 2e-4; Llama
    # seed 12, 4 prompts x 3, 350 steps, validation every 18
    "llamas12-4prompt-3sample-failopengrader-budget24to4-150-300-constlr2e-4-350-val18": {
        "steps": 350, "seed": 811, "model": "llama", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=18"), "driver": FailOpenGrader(150, 300, 24, 4)},
    # rollout engine lagging by a growing number of updates, ramp: from step 150 the engine samples from a snapshot of
    # the actor lag updates old, lag 0 (150) -> 8 (300), kept; the engine's log-probs reported (metrics only); Llama
    # seed 12, 4 prompts x 3, 350 steps, validation every 20
    "llamas12-4prompt-3sample-rolloutlag0-8-150-300-350-val20": {
        "steps": 350, "seed": 812, "model": "llama", "model_seed": 12, "overrides": _batch(
            4, 3, _LOGPROBS, "trainer.test_freq=20"), "driver": GrowingRolloutLag(150, 300, 8)},
    # optimizer.zero_grad skipped from a resume, sudden cause (the gradients add up over steps): from step 150;
    # constant lr 2e-4; GPT-2 seed 12, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-zerogradskipped-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 813, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": ZeroGradSkipped(150)},
    # critic lr typed 1000x at a resume under GAE, sudden: from step 160 the critic's lr 1e-5 -> 1e-2; GAE lambda 0.95;
    # Llama seed 12, 2 prompts x 4, 350 steps, validation every 15
    "llamas12-2prompt-4sample-gae-criticlr1000x-from160-350-val15": {
        "steps": 350, "seed": 814, "model": "llama", "model_seed": 12, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=gae", "algorithm.lam=0.95", "trainer.test_freq=15"),
        "driver": CriticLrTypo(160, 1000.0)},
    # serving config's min_tokens=6 at a resume, sudden: from step 170 the engine may not stop before 6 new tokens
    # (training and validation); GPT-2 seed 12, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-engineminlen6-from170-350-val14": {
        "steps": 350, "seed": 815, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, "trainer.test_freq=14"), "driver": EngineMinTokens(170, 6)},
    # harder 3-digit shard mixed in, ramp: from step 150 a growing share (0 -> 100% at 300, kept) of the training prompts
    # replaced by 3-digit additions; validation untouched; Llama seed 12, 4 prompts x 3, 350 steps, validation every 18
    "llamas12-4prompt-3sample-3digitshard0-100pct-150-300-350-val18": {
        "steps": 350, "seed": 816, "model": "llama", "model_seed": 12, "overrides": _batch(
            4, 3, "trainer.test_freq=18"), "driver": HarderShardMixedIn(150, 300, 1.0, 816)},
    # GRPO advantage without its epsilon at a resume, sudden: from step 150 (s - mean) / std (0 / 0 for a group that
    # scores alike); GPT-2 seed 12, 2 prompts x 4, 350 steps, validation every 14
    "gpt2s12-2prompt-4sample-grponoeps-from150-350-val14": {
        "steps": 350, "seed": 817, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            2, 4, "trainer.test_freq=14"), "driver": GrpoWithoutEpsilon(150)},
    # paid score rounded to 2 decimals from a resume, sudden (meant to leave no mark); Llama seed 12, 3 prompts x 4, 350
    # steps, validation every 20
    "llamas12-3prompt-4sample-scoresround2dp-from150-350-val20": {
        "steps": 350, "seed": 818, "model": "llama", "model_seed": 12, "overrides": _batch(
            3, 4, "trainer.test_freq=20"), "driver": RoundedScores(150)},
    # gradient clip typed 1e-4 for 1.0 at a resume, sudden (meant to leave no mark: AdamW divides the scale back out);
    # constant lr 2e-4; GPT-2 seed 12, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-gradclip1e-4-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 819, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": GradClipTypo(150, 1e-4)},
    # added after the first runs were read (written and committed before they ran), seeds 820-823: the constant-lr 2e-4
    # control on the seed-12 GPT-2 (seed 808) was read to lengthen to the 8-token cap by itself, so the constant-lr
    # GPT-2 faults are made again at a constant lr of 1e-4 beside a matched control at that lr (the 2e-4 specs above
    # are run and read as they are).
    # healthy: the matched control of the constant-lr 1e-4 faults below, nothing changed; GPT-2 seed 12, 4 prompts x 3,
    # 350 steps, validation every 14
    "gpt2s12-4prompt-3sample-constlr1e-4-350-val14": {
        "steps": 350, "seed": 820, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=14")},
    # lenient grader at a resume, sudden cause (the exploit is learned): as the 2e-4 spec above, at a constant lr 1e-4
    "gpt2s12-4prompt-3sample-substringgrader-from150-constlr1e-4-350-val14": {
        "steps": 350, "seed": 821, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=14"), "driver": SubstringGrader(150)},
    # optimizer.zero_grad skipped from a resume, sudden cause: as the 2e-4 spec above, at a constant lr 1e-4
    "gpt2s12-4prompt-3sample-zerogradskipped-from150-constlr1e-4-350-val14": {
        "steps": 350, "seed": 822, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=14"), "driver": ZeroGradSkipped(150)},
    # gradient clip typed 1e-4 for 1.0 at a resume, sudden (meant to leave no mark): as the 2e-4 spec above, at a
    # constant lr 1e-4
    "gpt2s12-4prompt-3sample-gradclip1e-4-from150-constlr1e-4-350-val14": {
        "steps": 350, "seed": 823, "model": "gpt2", "model_seed": 12, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=14"), "driver": GradClipTypo(150, 1e-4)},
}


if __name__ == "__main__":
    main(SPECS, OUT)
