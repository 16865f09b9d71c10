"""Twenty-second pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu17``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu16``) has in
this shape, made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **GPG (advantage and policy loss) with one prompt x 6**; **SAPO on Qwen2**; **RLOO (vectorized) under
seq-mean-token-sum-norm**; a **550-step REINFORCE++-baseline run**; the **KL loss's full estimator with one prompt x 8**;
**weight decay 0.1 with a 20-step warm-up and min_lr_ratio 0.1**; **DPPO-TV on Qwen2 with 3 prompts x 4**; a
constant-lr 1e-4 matched control; validation every **11 / 13 / 16 / 19 / 21 / 22 / 23 / 25**; models built from
**model seed 13** (another tokenizer sample, init and warm-up than every earlier CPU run); seeds 901-918.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**grader cache keyed by the answer alone** (a reward server caching ``answer -> score``: every later response to a
prompt whose answer was seen is paid the cached score); **grader workers crashing at a growing share** (a crashed
worker's response is paid 0; the share ramps 0 -> 80% over 120-270); the **data loader stuck on one batch** (the same
prompts every step from a resume); **Adam's beta1 typed 0.999** at a resume; a **partial weight sync** (the rollout
engine's copy of the last transformer block is no longer updated from a resume; the engine's log-probs reported); the
**response cap cut 8 -> 2 tokens** at a resume (training and validation); an **lr warm-up typed 50x** (the lr ramps
1x -> 50x over 120-270, kept); two faults meant to leave no mark: the **RNG streams reseeded at a resume** and
**Adam's eps typed 1e-6 for 1e-8** at a resume; added after the first runs were read (committed before it ran,
seed 918): a **host-memory leak of 12 MiB a step** from a resume (a debug callback keeping every step's logits).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process**: the event
file is stored under ``bench/detection_corpus/real/rlcockpit_trainer_cpu17/<name>/`` and labelled by reading it
(README, twenty-second pass).

    for n in $(python -c 'import real_cpu_trainer17 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer17.py $n; done   # one process per spec
"""

from __future__ import annotations

import copy
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

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu17"


class AnswerKeyedCache(_PaidReward):
    """From step ``start`` (a reward server that caches ``answer -> score``) the first response scored for an answer
    sets that answer's paid score, and every later response to a prompt with that answer is paid it; the task's digit
    overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int) -> None:
        self.start, self.step, self.cache = start, 0, {}

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step < self.start:
            return {"score": acc, "acc": acc}
        return {"score": self.cache.setdefault(str(ground_truth), acc), "acc": acc}


class CrashingGraderWorkers(_PaidReward):
    """From step ``start`` a growing share of the grader's workers crash and a crashed worker's response is paid 0;
    each response lands on a crashed worker with probability ramping 0 (``start``) -> ``hi`` (``end``), kept (its own
    seeded draw); the task's digit overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.step, self.rng = start, end, hi, 0, random.Random(seed)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step >= self.start and self.rng.random() < ramp(self.step, self.start, self.end, 0.0, self.hi):
            return {"score": 0.0, "acc": acc}
        return {"score": acc, "acc": acc}


class StuckLoader:
    """From step ``start`` (a resume whose sampler lost its epoch position and no longer advances) the loader serves
    the batch it served at ``start`` at every later step: the same prompts, in the same order."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            ld = st.loader
            fixed = ld.next_batch()
            ld.next_batch = lambda k=None: list(fixed)


class AdamParamTypo:
    """From step ``start`` (a resume whose optimizer config had a typo) the actor optimizer's ``key`` is ``value``."""

    def __init__(self, start: int, key: str, value: Any) -> None:
        self.start, self.key, self.value = start, key, value

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            for g in st.actor_opt.param_groups:
                g[self.key] = self.value


class PartialWeightSync:
    """From step ``start`` the rollout engine's weight sync skips the parameters whose name contains ``skip`` (a
    sync that lost one layer's keys): the engine samples from (and reports the log-probs of) the current actor with
    those parameters kept at their values at ``start``."""

    def __init__(self, start: int, skip: str) -> None:
        self.start, self.skip = start, skip

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        if step == self.start:
            st.engine.sync_weights = lambda model: None
            self.frozen = {k: v.detach().clone() for k, v in st.actor.named_parameters() if self.skip in k}
            assert self.frozen, self.skip
        m = copy.deepcopy(st.actor)
        with torch.no_grad():
            for k, p in m.named_parameters():
                if k in self.frozen:
                    p.copy_(self.frozen[k])
        st.engine.model = m


class ResponseCapCut:
    """From step ``start`` (a resume whose config had ``max_response_length`` typed) the response cap is ``n`` tokens
    (training and validation)."""

    def __init__(self, start: int, n: int) -> None:
        self.start, self.n = start, n

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.data.max_response_length = self.n


class LrWarmupTypo:
    """From step ``start`` the actor's lr is multiplied by a factor ramping 1 (``start``) -> ``hi`` (``end``), kept (a
    warm-up whose target lr was typed ``hi`` times too large)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi = start, end, hi

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        if step == self.start:
            self.base = list(st.actor_sched.base_lrs)
        f = ramp(step, self.start, self.end, 1.0, self.hi)
        st.actor_sched.base_lrs = [b * f for b in self.base]
        for g, b in zip(st.actor_opt.param_groups, self.base):  # the specs run at a constant lr
            g["lr"] = b * f


class HostLeak:
    """From step ``start`` (a debug callback added at a resume that keeps a host copy of every step's full-vocabulary
    logits) ``mb`` MiB of host memory are allocated, written and kept at every step."""

    def __init__(self, start: int, mb: int) -> None:
        self.start, self.mb, self.kept = start, mb, []

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start:
            self.kept.append(torch.ones(self.mb * 2**18))  # mb MiB of float32, every page written


class Reseed:
    """At step ``start`` (a resumed process that seeds its RNG streams afresh) torch's and Python's RNGs are reseeded
    with ``seed``; nothing else changes."""

    def __init__(self, start: int, seed: int) -> None:
        self.start, self.seed = start, seed

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            torch.manual_seed(self.seed)
            random.seed(self.seed)


_LOGPROBS = "actor_rollout_ref.rollout.calculate_log_probs=true"
_LR1E4 = ("actor_rollout_ref.actor.optim.lr=1e-4", *_CONST)
_A = "actor_rollout_ref.actor"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: GPG (advantage and policy loss); 1 prompt x 6; GPT-2 seed 13, 300 steps, validation every 11
    "gpt2s13-1prompt-6sample-gpg-300-val11": {
        "steps": 300, "seed": 901, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            1, 6, "algorithm.adv_estimator=gpg", f"{_A}.policy_loss.loss_mode=gpg", "trainer.test_freq=11")},
    # healthy: SAPO policy loss; 2 prompts x 4; Qwen2 seed 13, 300 steps, validation every 16
    "qwen2s13-2prompt-4sample-sapo-300-val16": {
        "steps": 300, "seed": 902, "model": "qwen2", "model_seed": 13, "overrides": _batch(
            2, 4, f"{_A}.policy_loss.loss_mode=sapo", "trainer.test_freq=16")},
    # healthy: RLOO (vectorized) under seq-mean-token-sum-norm; 2 prompts x 4; Llama seed 13, 300 steps, validation
    # every 21
    "llamas13-2prompt-4sample-rloovec-seqmeantokensumnorm-300-val21": {
        "steps": 300, "seed": 903, "model": "llama", "model_seed": 13, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=rloo_vectorized", f"{_A}.loss_agg_mode=seq-mean-token-sum-norm",
            "trainer.test_freq=21")},
    # healthy: a 550-step REINFORCE++-baseline run; 2 prompts x 4; GPT-2 seed 13, validation every 25
    "gpt2s13-2prompt-4sample-rppbaseline-550-val25": {
        "steps": 550, "seed": 904, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=reinforce_plus_plus_baseline", "trainer.test_freq=25")},
    # healthy: the KL loss's full estimator, weight 0.01; 1 prompt x 8; Llama seed 13, 300 steps, validation every 13
    "llamas13-1prompt-8sample-klloss-full-coef001-300-val13": {
        "steps": 300, "seed": 905, "model": "llama", "model_seed": 13, "overrides": _batch(
            1, 8, f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_type=full", f"{_A}.kl_loss_coef=0.01",
            "trainer.test_freq=13")},
    # healthy: weight decay 0.1, a 20-step warm-up, min_lr_ratio 0.1 (cosine); 3 prompts x 4; GPT-2 seed 13, 300
    # steps, validation every 19
    "gpt2s13-3prompt-4sample-wd01-warmup20-minlr01-300-val19": {
        "steps": 300, "seed": 906, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            3, 4, f"{_A}.optim.weight_decay=0.1", f"{_A}.optim.lr_warmup_steps=20", f"{_A}.optim.min_lr_ratio=0.1",
            "trainer.test_freq=19")},
    # healthy: DPPO-TV policy loss; 3 prompts x 4; Qwen2 seed 13, 300 steps, validation every 23
    "qwen2s13-3prompt-4sample-dppotv-300-val23": {
        "steps": 300, "seed": 907, "model": "qwen2", "model_seed": 13, "overrides": _batch(
            3, 4, f"{_A}.policy_loss.loss_mode=dppo_tv", "trainer.test_freq=23")},
    # healthy: the matched control of the constant-lr 1e-4 GPT-2 faults below, nothing changed; 4 prompts x 3, 300
    # steps, validation every 16
    "gpt2s13-4prompt-3sample-constlr1e-4-300-val16": {
        "steps": 300, "seed": 908, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16")},
    # grader cache keyed by the answer alone, sudden cause (fills over steps): from step 150 the first response scored
    # for an answer sets its paid score for every later response with that answer; the task's accuracy logged beside
    # it; Llama seed 13, 4 prompts x 3, 300 steps, validation every 22
    "llamas13-4prompt-3sample-answerkeyedcache-from150-300-val22": {
        "steps": 300, "seed": 909, "model": "llama", "model_seed": 13, "overrides": _batch(
            4, 3, "trainer.test_freq=22"), "driver": AnswerKeyedCache(150)},
    # grader workers crashing at a growing share, ramp: from step 120 each response is paid 0 with probability 0 (120)
    # -> 0.8 (270), kept; the task's accuracy logged beside it; Llama seed 13, 3 prompts x 4, 300 steps, validation
    # every 22
    "llamas13-3prompt-4sample-graderworkerscrash0-80pct-120-270-300-val22": {
        "steps": 300, "seed": 910, "model": "llama", "model_seed": 13, "overrides": _batch(
            3, 4, "trainer.test_freq=22"), "driver": CrashingGraderWorkers(120, 270, 0.8, 910)},
    # data loader stuck on one batch from a resume, sudden cause (learned): from step 150 the same 4 prompts every
    # step; constant lr 1e-4; GPT-2 seed 13, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s13-4prompt-3sample-stuckloader-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 911, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": StuckLoader(150)},
    # Adam's beta1 typed 0.999 (for 0.9) at a resume, sudden cause: from step 150; constant lr 1e-4; GPT-2 seed 13, 4
    # prompts x 3, 300 steps, validation every 16
    "gpt2s13-4prompt-3sample-adambeta1-0999-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 912, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": AdamParamTypo(150, "betas", (0.999, 0.999))},
    # partial weight sync, sudden cause (grows as the actor moves): from step 150 the engine's copy of the last
    # transformer block (layers.1 / h.1) stays at its step-150 weights; the engine's log-probs reported; Llama seed 13,
    # 4 prompts x 3, 300 steps, validation every 22
    "llamas13-4prompt-3sample-partialsync-lastblock-from150-300-val22": {
        "steps": 300, "seed": 913, "model": "llama", "model_seed": 13, "overrides": _batch(
            4, 3, _LOGPROBS, "trainer.test_freq=22"), "driver": PartialWeightSync(150, "layers.1.")},
    # response cap cut 8 -> 2 tokens at a resume, sudden: from step 160 (training and validation); Llama seed 13, 4
    # prompts x 3, 300 steps, validation every 22
    "llamas13-4prompt-3sample-responsecap2-from160-300-val22": {
        "steps": 300, "seed": 914, "model": "llama", "model_seed": 13, "overrides": _batch(
            4, 3, "trainer.test_freq=22"), "driver": ResponseCapCut(160, 2)},
    # lr warm-up typed 50x, ramp: from step 120 the lr is multiplied by 1 (120) -> 50 (270), kept (1e-4 -> 5e-3);
    # constant lr 1e-4; GPT-2 seed 13, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s13-4prompt-3sample-lrwarmup50x-120-270-constlr1e-4-300-val16": {
        "steps": 300, "seed": 915, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": LrWarmupTypo(120, 270, 50.0)},
    # RNG streams reseeded at a resume, sudden (meant to leave no mark): at step 150 torch and Python reseeded with 7;
    # constant lr 1e-4; GPT-2 seed 13, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s13-4prompt-3sample-reseed-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 916, "model": "gpt2", "model_seed": 13, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": Reseed(150, 7)},
    # Adam's eps typed 1e-6 for 1e-8 at a resume, sudden (meant to leave no mark): from step 150; Qwen2 seed 13, 2
    # prompts x 4, 300 steps, validation every 16
    "qwen2s13-2prompt-4sample-adameps1e-6-from150-300-val16": {
        "steps": 300, "seed": 917, "model": "qwen2", "model_seed": 13, "overrides": _batch(
            2, 4, "trainer.test_freq=16"), "driver": AdamParamTypo(150, "eps", 1e-6)},
    # added after the first runs were read (written and committed before it ran), seed 918: the batch had no memory
    # fault; the host's used memory (perf/cpu_memory_used_gb, the whole machine's) is logged at every step.
    # host-memory leak from a resume, ramp: from step 150 a debug callback keeps 12 MiB of host memory per step (1.8 GiB
    # by step 300); Llama seed 13, 4 prompts x 3, 300 steps, validation every 22
    "llamas13-4prompt-3sample-hostleak12mib-from150-300-val22": {
        "steps": 300, "seed": 918, "model": "llama", "model_seed": 13, "overrides": _batch(
            4, 3, "trainer.test_freq=22"), "driver": HostLeak(150, 12)},
}


if __name__ == "__main__":
    main(SPECS, OUT)
