"""Sixteenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu11``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu10``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **2 prompts x 6** (and 4 x 4 split into **two mini-batches** with **micro-batches of 4**, 6 x 2, 3 x 4);
policy losses **kl_cov**, **reinforce**, **dppo_kl** and **bypass mode** (REINFORCE loss without an old-policy pass);
advantages **grpo_vectorized** and **tir_optimal_token_baseline**; loss aggregation **token-sum**; the **full**
(whole-vocabulary) and **low_var_kl+** KL-loss estimators; **ppo_epochs 2 and 4** (4 with an early stop at
``target_kl``); AdamW **betas (0.9, 0.95) with weight decay 0.1**; **lr 1e-4 .. 1e-3**; responses up to **24 / 32**
tokens; 400-600 steps; validation every 20 / 25 / 30 / 50; models built from **model seed 7** (another tokenizer sample,
init and warm-up than every earlier CPU run; ``real_trainer.bpe_model_dir``, built in code); seeds 401-418 (415-418:
specs added after earlier runs were read, each committed before it ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run; all
start slowly, late or periodically): a **remote grader timing out for a growing share of samples, the timeout
swallowed to a score of 0** (ramp); the **entropy coefficient's schedule inverted** (meant to decay, it rises 0 ->
1.0: ramp); the **lr scheduler restarted at every resume** (warm-up and cosine replayed from step 0 at 200, 300,
400: periodic); the **prompt's last token dropped** by a prompt-truncation change made at a resume (sudden, late); a
**reward clip whose bound shrinks** until most rewards saturate (ramp); a **length penalty whose sign flips** at a
resume (sudden cause, learned effect); a **CPU-memory leak proportional to the tokens generated** (the sample logger
keeps a buffer per response token: ramp); **reward-server outages** of 10 steps every 50 steps, swallowed to a
score of 0 (periodic).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu11/<name>/`` and labelled by reading it (README, sixteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer11.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer11.py NAME ...   # only these specs
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu11"


class GraderTimeouts:
    """A remote grader that times out for a growing share of samples: from step ``start`` each training call times
    out with probability ramped 0 (``start``) -> ``hi`` (``end``), kept after; the user's wrapper catches the timeout
    and returns a score of 0 (no exception reaches the trainer, so its failure count stays 0). The task's accuracy is
    returned beside it (``reward_extra/acc/mean``); validation keeps the task's reward."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.p, self.rng = start, end, hi, 0.0, random.Random(seed)

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.p = ramp(step, self.start, self.end, 0.0, self.hi)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        try:
            if self.p > 0 and self.rng.random() < self.p:
                raise TimeoutError("grader did not answer")
            score = acc
        except TimeoutError:
            score = 0.0  # swallowed: the sample is paid nothing
        return {"score": score, "acc": acc}


class EntropyCoefRamp:
    """An entropy-coefficient schedule written the wrong way round: ``actor.entropy_coeff`` 0 to ``start``, then
    ramped linearly to ``hi`` at ``end`` and kept (meant to decay from a small bonus to 0, it grows)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi = start, end, hi

    def before_step(self, st: Any, step: int) -> None:
        st.cfg.actor.entropy_coeff = ramp(step, self.start, self.end, 0.0, self.hi)


class SchedulerRestart:
    """A preemptible job whose resume rebuilds the lr scheduler from step 0: at each step in ``steps`` the actor's
    scheduler is reset to its first step (warm-up and cosine replayed from the start; weights and Adam state kept)."""

    def __init__(self, steps: tuple[int, ...]) -> None:
        self.steps = steps

    def before_step(self, st: Any, step: int) -> None:
        if step not in self.steps:
            return
        sched = st.actor_sched
        sched.last_epoch = 0
        for g, base, fn in zip(st.actor_opt.param_groups, sched.base_lrs, sched.lr_lambdas):
            g["lr"] = base * fn(0)


class PromptLastTokenDropped:
    """From step ``start`` every training prompt loses its last token (a prompt-truncation change made at a resume
    that cuts one token too many; with the corpus BPE tokenizer a prompt '07+45=' is the tokens '07', '+', '45', '=',
    so the trailing '=' goes); validation keeps the whole prompts."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        loader = st.loader
        inner = loader.next_batch

        def cut(k: int | None = None) -> list[Any]:
            return [dataclasses.replace(r, input_ids=list(r.input_ids[:-1])) for r in inner(k)]

        loader.next_batch = cut


class ShrinkingRewardClip:
    """The paid score is the task's digit overlap clipped at a bound ramped 1.0 (step ``start``) -> ``lo`` (step
    ``end``), kept after (a reward clip meant for outliers whose bound follows a running quantile that shrinks: more
    and more rewards saturate at it); the accuracy is returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int, end: int, lo: float) -> None:
        self.start, self.end, self.lo, self.bound = start, end, lo, 1.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.bound = ramp(step, self.start, self.end, 1.0, self.lo)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": min(acc, self.bound), "acc": acc}


class LengthPenaltySignFlip:
    """The paid score is the task's digit overlap minus ``coef`` per character past 3; from step ``start`` the
    penalty's sign flips (a resume's config writes the coefficient negated: each extra character pays ``coef``); the
    accuracy is returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int, coef: float) -> None:
        self.start, self.coef, self.sign = start, coef, -1.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.sign = 1.0 if step >= self.start else -1.0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        extra = max(0, len(solution_str.strip()) - 3)
        return {"score": acc + self.sign * self.coef * extra, "acc": acc}


class PerTokenLeak:
    """From step ``start`` every training generation (the engine's sampled calls) keeps ``kb`` KB of written bytes
    per generated response token in a list never cleared (a sample logger that keeps a buffer per token): memory
    grows with the tokens generated; validation's greedy calls untouched."""

    def __init__(self, start: int, kb: int) -> None:
        self.start, self.kb, self.kept = start, kb, []

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        engine = getattr(st.engine, "_engine", st.engine)
        inner = engine.generate

        def leaky(prompts: Any, params: Any, *a: Any, **kw: Any) -> Any:
            out = inner(prompts, params, *a, **kw)
            if not params.greedy:
                tokens = int(out.response_mask.sum())
                self.kept.append(bytearray(b"t" * (tokens * (self.kb << 10))))
            return out

        engine.generate = leaky


class RewardOutages:
    """A reward server down for ``length`` steps every ``every`` steps from step ``start``: during an outage every
    training call fails and the user's wrapper swallows the error and pays 0 (no exception reaches the trainer); the
    task's accuracy is returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int, every: int, length: int) -> None:
        self.start, self.every, self.length, self.down = start, every, length, False

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.down = step >= self.start and (step - self.start) % self.every < self.length

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        try:
            if self.down:
                raise ConnectionError("reward server unreachable")
            score = acc
        except ConnectionError:
            score = 0.0  # swallowed
        return {"score": score, "acc": acc}


SPECS: dict[str, dict[str, Any]] = {
    # healthy: 2 prompts x 6; kl_cov policy loss, token-sum loss aggregation; responses up to 32 tokens; GPT-2 seed 7,
    # 500 steps, validation every 25
    "gpt2s7-2prompt-6sample-klcov-tokensum-resp32-500-val25": {
        "steps": 500, "seed": 401, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.policy_loss.loss_mode=kl_cov",
            "actor_rollout_ref.actor.loss_agg_mode=token-sum", "data.max_response_length=32", "trainer.test_freq=25")},
    # healthy: 4 prompts x 4 split into two mini-batches (ppo_mini_batch_size 2: two optimizer steps a step) of two
    # micro-batches each (ppo_micro_batch_size_per_gpu 4: gradient accumulation), ppo_epochs 2; grpo_vectorized
    # advantages; Llama seed 7, 500 steps, validation every 20
    "llamas7-4prompt-4sample-grpovec-minibatch2-micro4-ppoepochs2-500-val20": {
        "steps": 500, "seed": 402, "model": "llama", "model_seed": 7, "overrides": [
            "data.train_batch_size=4", "actor_rollout_ref.rollout.n=4", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "actor_rollout_ref.actor.ppo_epochs=2",
            "algorithm.adv_estimator=grpo_vectorized", "trainer.test_freq=20"]},
    # healthy: 2 prompts x 6; REINFORCE policy loss with a KL loss under the full (whole-vocabulary) estimator, coef
    # 0.02; Qwen2 seed 7, 600 steps, validation every 30
    "qwen2s7-2prompt-6sample-reinforceloss-klfull002-600-val30": {
        "steps": 600, "seed": 403, "model": "qwen2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.policy_loss.loss_mode=reinforce", "actor_rollout_ref.actor.use_kl_loss=true",
            "actor_rollout_ref.actor.kl_loss_type=full", "actor_rollout_ref.actor.kl_loss_coef=0.02",
            "trainer.test_freq=30")},
    # healthy: 2 prompts x 6; dppo_kl policy loss, ppo_epochs 4 stopped early when the measured KL passes 0.02
    # (target_kl); GPT-2 seed 7, 400 steps, validation every 20
    "gpt2s7-2prompt-6sample-dppokl-ppoepochs4-targetkl002-400-val20": {
        "steps": 400, "seed": 404, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.policy_loss.loss_mode=dppo_kl", "actor_rollout_ref.actor.ppo_epochs=4",
            "actor_rollout_ref.actor.target_kl=0.02", "trainer.test_freq=20")},
    # healthy: 2 prompts x 6; rollout correction in bypass mode with the REINFORCE loss (no old-policy pass: the
    # rollout's log-probs are the old ones); Llama seed 7, 500 steps, validation every 25
    "llamas7-2prompt-6sample-bypass-reinforce-500-val25": {
        "steps": 500, "seed": 405, "model": "llama", "model_seed": 7, "overrides": _batch(
            2, 6, "algorithm.rollout_correction.bypass_mode=true", "algorithm.rollout_correction.loss_type=reinforce",
            "trainer.test_freq=25")},
    # healthy: 3 prompts x 4; TIR optimal token baselines; AdamW betas (0.9, 0.95), weight decay 0.1, constant lr
    # 1e-4; Qwen2 seed 7, 500 steps, validation every 50
    "qwen2s7-3prompt-4sample-tirotb-betas095-wd01-constlr1e-4-500-val50": {
        "steps": 500, "seed": 406, "model": "qwen2", "model_seed": 7, "overrides": _batch(
            3, 4, "algorithm.adv_estimator=tir_optimal_token_baseline", "actor_rollout_ref.actor.optim.betas=[0.9,0.95]",
            "actor_rollout_ref.actor.optim.weight_decay=0.1", "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST,
            "trainer.test_freq=50")},
    # healthy (meant): 6 prompts x 2; lr 1e-3 with a 40-step warm-up and cosine to 0; KL loss low_var_kl+ coef 0.05;
    # GPT-2 seed 7, 400 steps, validation every 20
    "gpt2s7-6prompt-2sample-lr1e-3-warmup40-cos-lowvarklplus005-400-val20": {
        "steps": 400, "seed": 407, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            6, 2, "actor_rollout_ref.actor.optim.lr=1e-3", "actor_rollout_ref.actor.optim.lr_warmup_steps=40",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "actor_rollout_ref.actor.use_kl_loss=true",
            "actor_rollout_ref.actor.kl_loss_type=low_var_kl+", "actor_rollout_ref.actor.kl_loss_coef=0.05",
            "trainer.test_freq=20")},
    # grader timeouts swallowed to 0, ramp: share of training samples timing out 0 (step 150) -> 70% (step 350),
    # kept; GPT-2 seed 7, 2 prompts x 6, 450 steps, validation every 25
    "gpt2s7-2prompt-6sample-gradertimeout0-70pct-150-350-450-val25": {
        "steps": 450, "seed": 408, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": GraderTimeouts(150, 350, 0.7, seed=408)},
    # entropy-coefficient schedule inverted, ramp: entropy_coeff 0 to step 200, then 0 -> 1.0 linearly over 200-350,
    # kept; Llama seed 7, 2 prompts x 6, 450 steps, validation every 25
    "llamas7-2prompt-6sample-entcoeframp0-1-200-350-450-val25": {
        "steps": 450, "seed": 409, "model": "llama", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": EntropyCoefRamp(200, 350, 1.0)},
    # lr scheduler restarted at every resume, periodic: lr 4e-4 with a 25-step warm-up and cosine to 0 over 500
    # steps; at the start of steps 200, 300 and 400 the scheduler is reset to its step 0 (warm-up and the peak
    # replayed); Qwen2 seed 7, 2 prompts x 6, 500 steps, validation every 25
    "qwen2s7-2prompt-6sample-lr4e-4-warmup25-cos-schedrestart200-300-400-500-val25": {
        "steps": 500, "seed": 410, "model": "qwen2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.optim.lr=4e-4", "actor_rollout_ref.actor.optim.lr_warmup_steps=25",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "trainer.test_freq=25"),
        "driver": SchedulerRestart((200, 300, 400))},
    # prompt's last token dropped, sudden and late: from the start of step 220 every training prompt loses its last
    # token; GPT-2 seed 7, 2 prompts x 6, 450 steps, validation every 25 (validation prompts whole)
    "gpt2s7-2prompt-6sample-promptlasttokendropped-from220-450-val25": {
        "steps": 450, "seed": 411, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": PromptLastTokenDropped(220)},
    # reward clip whose bound shrinks, ramp: paid score = min(digit overlap, bound), bound 1.0 (step 150) -> 0.3 (step
    # 300), kept; Qwen2 seed 7, 2 prompts x 6, 450 steps, validation every 25
    "qwen2s7-2prompt-6sample-rewardclip1to03-150-300-450-val25": {
        "steps": 450, "seed": 412, "model": "qwen2", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": ShrinkingRewardClip(150, 300, 0.3)},
    # length penalty's sign flipped at a resume, sudden cause with a learned effect: paid score = digit overlap - 0.05
    # x characters past 3 to step 199, + 0.05 x them from the start of step 200; responses up to 24 tokens; GPT-2 seed
    # 7, 2 prompts x 6, 450 steps, validation every 25
    "gpt2s7-2prompt-6sample-lenpenaltysignflip005-at200-resp24-450-val25": {
        "steps": 450, "seed": 413, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "data.max_response_length=24", "trainer.test_freq=25"), "driver": LengthPenaltySignFlip(200, 0.05)},
    # CPU-memory leak proportional to the tokens generated, ramp: from step 150 each training generation keeps 64 KB
    # per response token; responses up to 32 tokens; Llama seed 7, 2 prompts x 6, 450 steps, validation every 25
    "llamas7-2prompt-6sample-pertokenleak64kb-from150-resp32-450-val25": {
        "steps": 450, "seed": 414, "model": "llama", "model_seed": 7, "overrides": _batch(
            2, 6, "data.max_response_length=32", "trainer.test_freq=25"), "driver": PerTokenLeak(150, 64)},
    # added after eleven runs were read (written and committed before it ran): Qwen2 seed 7 at lr 4e-4 ran its
    # responses to the length cap by itself during the warm-up, before the first restart (README, sixteenth pass), so
    # the scheduler restarts again on the GPT-2 seed-7 model, which stays at length 3 at the default lr. lr scheduler
    # restarted at every resume, periodic: lr 3e-4 with a 25-step warm-up and cosine to 0 over 500 steps; at the start
    # of steps 200, 300 and 400 the scheduler is reset to its step 0; GPT-2 seed 7, 2 prompts x 6, 500 steps,
    # validation every 25
    "gpt2s7-2prompt-6sample-lr3e-4-warmup25-cos-schedrestart200-300-400-500-val25": {
        "steps": 500, "seed": 415, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.optim.lr=3e-4", "actor_rollout_ref.actor.optim.lr_warmup_steps=25",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "trainer.test_freq=25"),
        "driver": SchedulerRestart((200, 300, 400))},
    # added after thirteen runs were read (written and committed before they ran): the length-penalty flip (0.05 per
    # character, the default cosine lr) and the shrinking clip on Qwen2 (scores mostly under the bound) left no mark a
    # user would need to know (README, sixteenth pass), so three more failure specs.
    # length penalty's sign flipped at a resume, stronger: paid score = digit overlap - 0.2 x characters past 3 to
    # step 199, + 0.2 x them from the start of step 200; constant lr 1e-4; responses up to 24 tokens; GPT-2 seed 7,
    # 2 prompts x 6, 450 steps, validation every 25
    "gpt2s7-2prompt-6sample-lenpenaltysignflip02-at200-constlr1e-4-resp24-450-val25": {
        "steps": 450, "seed": 416, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST, "data.max_response_length=24",
            "trainer.test_freq=25"), "driver": LengthPenaltySignFlip(200, 0.2)},
    # reward server outages, periodic and sudden: from step 150, every 50 steps, 10 steps in which every training
    # sample is paid 0 (the error swallowed); Llama seed 7, 2 prompts x 6, 450 steps, validation every 25
    "llamas7-2prompt-6sample-rewardoutage10every50-from150-450-val25": {
        "steps": 450, "seed": 417, "model": "llama", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": RewardOutages(150, 50, 10)},
    # reward clip whose bound shrinks, on GPT-2 seed 7 (most of its answers score 1/3 or 2/3): paid score =
    # min(digit overlap, bound), bound 1.0 (step 150) -> 0.3 (step 300), kept; 2 prompts x 6, 450 steps, validation
    # every 25
    "gpt2s7-2prompt-6sample-rewardclip1to03-150-300-450-val25": {
        "steps": 450, "seed": 418, "model": "gpt2", "model_seed": 7, "overrides": _batch(
            2, 6, "trainer.test_freq=25"), "driver": ShrinkingRewardClip(150, 300, 0.3)},
}


# run once and not stored (README, sixteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
