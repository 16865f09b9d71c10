"""Twentieth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu15``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu14``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **rollout rejection sampling** (``algorithm.rollout_correction.rollout_rs=seq_mean_k3`` on the engine's own
log-probs); **IcePop token-level rollout IS** (weights zeroed outside ``[0.5, 2]``) **normalised to mean 1 per batch**;
**padding-free packed scoring** (``model.use_remove_padding``) under **Dr. GRPO with an explicit loss_scale_factor**;
**PPO with a critic, GAE lambda 0.95 and a 20-step critic warm-up** (``trainer.critic_warmup``: the actor frozen at
first); the **KL loss with the straight-through mse+ (k2) estimator**; **training rollouts at temperature 0.8** with
**sampled top-k validation** (top-k 5, 3 per prompt); a **600-step run with real checkpoints every 50 steps** (the
save time inside the run); batch shapes **4 prompts x 4**, **3 x 4**, **6 x 4**, **2 x 4**, **6 x 2**, **3 x 5**, **2 x
3**, **4 x 3**; validation every **9 / 11 / 14 / 16 / 18 / 20 / 22 / 36**; 300-600 steps; models built from **model
seed 11** (another tokenizer sample, init and warm-up than every earlier CPU run; ``real_trainer.bpe_model_dir``,
built in code); seeds 781-800 (800: a spec added after the first runs were read, committed before it ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
**rollout engine's weights synced every 10 steps** instead of every step (a sync interval from a serving config:
the engine samples from weights up to 9 steps old, a periodic mismatch); the **sampler's RNG re-seeded at every step**
(a seeding call left in the rollout worker's per-step setup: the same random stream each step; a fault that may
leave no mark); **AdamW's eps typed as 1.0** at a resume (for 1e-8: the update shrinks to lr x m, may leave no mark);
**one decoder layer back at its random init** at a resume (a checkpoint missing one shard, loaded non-strict); the
**critic restarted from its initial weights with a fresh optimizer** at a resume under GAE (the actor's state
restored, the critic's not); a **grader reading the wrong field** at a resume (it compares the answer with the first
operand, written as 3 digits, not with the sum: a learnable wrong target; the task's accuracy logged beside it); a
**re-generated data shard whose answers are off by one**, mixed in at a growing share (0 -> 100% of the training
prompts over 150-300, each prompt's label fixed; validation untouched); a **judge growing noisy** (Gaussian noise on
the paid score, std 0 -> 0.6 over 150-300; the task's accuracy logged beside it); the **old log-probs taken from the
reference model** at a resume (a wiring bug under a KL loss: the PPO ratio is pi / pi_ref); the **training set cut to
24 prompts** at a resume (``data.train_max_samples`` of a debug config left in: the same 24 prompts cycled); the
**reward one step late** at a resume (an asynchronous reward server returning the previous batch's scores: the paid
score's level unchanged, its pairing with the responses lost). Added later (seed 800, committed before it ran): the
layer re-init again with its init drawn explicitly (:class:`LayerRedrawn`): the first form's ``_init_weights`` was read to
be a no-op (``NOT_STORED``).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process** (several
drivers patch module functions of the trainer for the rest of the process): the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu15/<name>/`` and labelled by reading it (README, twentieth pass).

    for n in $(python -c 'import real_cpu_trainer15 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer15.py $n; done   # one process per spec
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
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu15"


class PeriodicWeightSync:
    """From step ``start`` the rollout engine samples from its own copy of the actor, refreshed only at the end of
    every ``every``-th step (a weight-sync interval from a serving config): between refreshes it is up to
    ``every - 1`` updates old; its reported log-probs come from that copy, the trainer's from the current actor."""

    def __init__(self, start: int, every: int) -> None:
        self.start, self.every, self.step, self.engine = start, every, 0, None

    def before_step(self, st: Any, step: int) -> None:
        self.step = step
        if step == self.start:
            self.engine = st.engine
            st.engine.model = copy.deepcopy(st.actor)
            st.engine.sync_weights = self.sync

    def sync(self, model: Any) -> None:
        if self.step % self.every == 0:
            self.engine.model = copy.deepcopy(model)


class SamplerReseeded:
    """From step ``start`` torch's global RNG is re-seeded with the same seed before every step's rollout (a seeding
    call left in the rollout worker's per-step setup): every step's sampling draws the same random stream."""

    def __init__(self, start: int, seed: int) -> None:
        self.start, self.seed = start, seed

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start:
            torch.manual_seed(self.seed)


class AdamEpsTypo:
    """From step ``start`` (a resume whose optimizer config had ``eps: 1.0`` for 1e-8) AdamW's eps is ``eps``."""

    def __init__(self, start: int, eps: float) -> None:
        self.start, self.eps = start, eps

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            for g in st.actor_opt.param_groups:
                g["eps"] = self.eps


def _decoder_layers(model: Any) -> Any:
    base = getattr(model, "transformer", None) or getattr(model, "model", None)
    return base.h if hasattr(base, "h") else base.layers


class LayerReinitialised:
    """At step ``start`` (a resume from a checkpoint missing one shard, loaded non-strict) decoder layer ``layer`` of
    the actor is back at its random init (the model's own ``_init_weights``); the optimizer's state is kept; the
    rollout engine gets the weights at its next sync (at once: the engine holds the actor itself)."""

    def __init__(self, start: int, layer: int, seed: int) -> None:
        self.start, self.layer, self.seed = start, layer, seed

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            torch.manual_seed(self.seed)
            with torch.no_grad():
                _decoder_layers(st.actor)[self.layer].apply(st.actor._init_weights)


class LayerRedrawn:
    """At step ``start`` (a resume from a checkpoint missing one shard, loaded non-strict) decoder layer ``layer`` of
    the actor is back at a random init drawn explicitly (``torch.manual_seed(seed)``): every linear weight normal with
    the config's ``initializer_range`` std, biases 0, norm weights 1; the optimizer's state is kept (added after the
    first form, :class:`LayerReinitialised`, was read to be a no-op: transformers' ``_init_weights`` skips parameters
    it has already marked initialised)."""

    def __init__(self, start: int, layer: int, seed: int) -> None:
        self.start, self.layer, self.seed = start, layer, seed

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        torch.manual_seed(self.seed)
        std = float(getattr(st.actor.config, "initializer_range", 0.02))
        with torch.no_grad():
            for name, p in _decoder_layers(st.actor)[self.layer].named_parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, std)
                elif "bias" in name:
                    p.zero_()
                else:
                    p.fill_(1.0)


class CriticRestarted:
    """The critic's weights are kept as they were before the first update; at step ``start`` (a resume that restored
    the actor but not the critic) the critic is set back to them and its optimizer state cleared."""

    def __init__(self, start: int) -> None:
        self.start, self.init = start, None

    def before_step(self, st: Any, step: int) -> None:
        if self.init is None:
            self.init = copy.deepcopy(st.critic.state_dict())
        if step == self.start:
            st.critic.load_state_dict(self.init)
            st.critic_opt.state.clear()


class _PaidReward:
    """Base: from its first step the training reward is :meth:`reward` (validation keeps the task's)."""

    def before_step(self, st: Any, step: int) -> None:
        self.step = step
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        return digit_overlap(data_source, solution_str, ground_truth)


class WrongFieldGrader(_PaidReward):
    """From step ``start`` (a resume under a grader config whose answer field points at the wrong column) the paid
    score is the digit overlap with the first operand written as 3 digits (``f"{a:03d}"``) instead of the sum; the
    task's digit overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int) -> None:
        self.start, self.step = start, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step < self.start:
            return {"score": acc, "acc": acc}
        return {"score": digit_overlap(data_source, solution_str, f"{int(extra_info['a']):03d}"), "acc": acc}


class OffByOneShard(_PaidReward):
    """From step ``start`` a re-generated data shard whose answers are the sum + 1 is mixed in: each training prompt
    (a, b) belongs to it when its own fixed uniform (seeded by ``seed``, a, b) is below the share, ramped 0
    (``start``) -> ``hi`` (``end``), kept; its paid score is the digit overlap with that wrong answer. Validation is
    untouched; nothing else is logged."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.step = start, end, hi, seed, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        share = ramp(self.step, self.start, self.end, 0.0, self.hi)
        a, b = int(extra_info["a"]), int(extra_info["b"])
        if share > 0 and random.Random(self.seed * 1_000_003 + a * 1000 + b).random() < share:
            ground_truth = f"{int(ground_truth) + 1:0{len(str(ground_truth))}d}"
        return digit_overlap(data_source, solution_str, ground_truth)


class NoisyJudge(_PaidReward):
    """From step ``start`` the paid score is the task's digit overlap plus Gaussian noise whose std ramps 0
    (``start``) -> ``hi`` (``end``), kept (a judge whose sampling grew noisy); the task's digit overlap is returned
    beside it as ``acc`` from step 1."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.rng, self.step = start, end, hi, random.Random(seed), 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        sd = ramp(self.step, self.start, self.end, 0.0, self.hi)
        return {"score": acc + (self.rng.gauss(0.0, sd) if sd > 0 else 0.0), "acc": acc}


class OldLogProbsFromReference:
    """From step ``start`` (a wiring bug at a resume) the update's old log-probs are the reference model's: the PPO
    ratio is pi / pi_ref, clipped at 1 +- 0.2 once the policy has moved from the reference (a KL loss keeps the
    reference scored)."""

    def __init__(self, start: int) -> None:
        self.start, self.done = start, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.step_inputs as si

        inner = si.policy_passes

        def wired(st_: Any, batch: Any, *a: Any, **k: Any) -> None:
            inner(st_, batch, *a, **k)
            batch["old_log_probs"] = batch["ref_log_prob"].clone()

        si.policy_passes = wired
        self.done = True


class TrainSetCut:
    """From step ``start`` (a resume with a debug config's ``data.train_max_samples`` left in) the training prompts
    are the loader's first ``n`` rows, cycled in shuffled epochs."""

    def __init__(self, start: int, n: int) -> None:
        self.start, self.n = start, n

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            ld = st.loader
            ld.rows = list(ld.rows[:self.n])
            ld.epoch, ld.pos = 0, 0
            ld._order = ld._make_order()


class _LateReward:
    """A reward manager that scores the batch and hands back the previous call's scores and extras (same size)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.prev = inner, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, rows: list[Any], responses: list[str]) -> tuple[list[float], list[Any]]:
        now = self.inner(rows, responses)
        out = now if self.prev is None or len(self.prev[0]) != len(now[0]) else self.prev
        self.prev = now
        return out


class RewardOneStepLate:
    """From step ``start`` (an asynchronous reward server at a resume) each step is paid the previous step's scores,
    in the order of the previous batch: the scores' level is the task's, their pairing with the responses lost;
    validation keeps its own reward."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start - 1 and not isinstance(st.reward, _LateReward):
            st.reward = _LateReward(st.reward)  # primed by step start - 1 (paid its own scores), late from start


_LOGPROBS = "actor_rollout_ref.rollout.calculate_log_probs=true"
_LR2E4 = ("actor_rollout_ref.actor.optim.lr=2e-4", *_CONST)
_RC = "algorithm.rollout_correction"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: rollout rejection sampling on the engine's own log-probs (seq_mean_k3, upper bound 0.01); 4 prompts x 4;
    # GPT-2 seed 11, 350 steps, validation every 16
    "gpt2s11-4prompt-4sample-rolloutrs-seqmeank3-350-val16": {
        "steps": 350, "seed": 781, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 4, _LOGPROBS, f"{_RC}.rollout_rs=seq_mean_k3", f"{_RC}.rollout_rs_threshold=0.01",
            "trainer.test_freq=16")},
    # healthy: IcePop token-level rollout IS (weights zeroed outside [0.5, 2]) normalised to mean 1 per batch; 3 prompts
    # x 4; Llama seed 11, 350 steps, validation every 22
    "llamas11-3prompt-4sample-icepop-isbatchnorm-350-val22": {
        "steps": 350, "seed": 782, "model": "llama", "model_seed": 11, "overrides": _batch(
            3, 4, _LOGPROBS, f"{_RC}.rollout_is=token", f"{_RC}.rollout_is_threshold='0.5_2.0'",
            f"{_RC}.rollout_is_batch_normalize=true", "trainer.test_freq=22")},
    # healthy: padding-free packed scoring under Dr. GRPO (seq-mean-token-sum-norm, no std normalisation) with
    # loss_scale_factor 8; 6 prompts x 4; Qwen2 seed 11, 300 steps, validation every 16
    "qwen2s11-6prompt-4sample-rmpad-drgrpo-lsf8-300-val16": {
        "steps": 300, "seed": 783, "model": "qwen2", "model_seed": 11, "overrides": _batch(
            6, 4, "actor_rollout_ref.model.use_remove_padding=true", "algorithm.norm_adv_by_std_in_grpo=false",
            "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm", "actor_rollout_ref.actor.loss_scale_factor=8",
            "trainer.test_freq=16")},
    # healthy: PPO with a critic (GAE, lambda 0.95) and a 20-step critic warm-up (the actor frozen for steps 1-20); 2
    # prompts x 4; Llama seed 11, 350 steps, validation every 9
    "llamas11-2prompt-4sample-gae-lam095-criticwarmup20-350-val9": {
        "steps": 350, "seed": 784, "model": "llama", "model_seed": 11, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=gae", "algorithm.lam=0.95", "trainer.critic_warmup=20",
            "trainer.test_freq=9")},
    # healthy: the KL loss with the straight-through mse+ (k2) estimator, weight 0.01; 6 prompts x 2; GPT-2 seed 11, 350
    # steps, validation every 11
    "gpt2s11-6prompt-2sample-klloss-mseplus-coef001-350-val11": {
        "steps": 350, "seed": 785, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            6, 2, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=mse+",
            "actor_rollout_ref.actor.kl_loss_coef=0.01", "trainer.test_freq=11")},
    # healthy: training rollouts at temperature 0.8 (the trainer scoring at 0.8 too); sampled validation with top-k 5
    # (temperature 1.0, 3 per prompt: mean@3); 3 prompts x 5; Qwen2 seed 11, 300 steps, validation every 20
    "qwen2s11-3prompt-5sample-temp08-valtopk5-n3-300-val20": {
        "steps": 300, "seed": 786, "model": "qwen2", "model_seed": 11, "overrides": _batch(
            3, 5, "actor_rollout_ref.rollout.temperature=0.8", "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
            "actor_rollout_ref.rollout.val_kwargs.temperature=1.0", "actor_rollout_ref.rollout.val_kwargs.top_k=5",
            "actor_rollout_ref.rollout.val_kwargs.n=3", "trainer.test_freq=20")},
    # healthy: a 600-step run with real checkpoints every 50 steps (the newest 2 kept; the save inside the run's time);
    # 2 prompts x 3; GPT-2 seed 11, validation every 36
    "gpt2s11-2prompt-3sample-ckpt50-600-val36": {
        "steps": 600, "seed": 787, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            2, 3, "trainer.save_freq=50", "trainer.max_actor_ckpt_to_keep=2", "trainer.test_freq=36")},
    # healthy: the matched control of the constant-lr faults below, nothing changed; constant lr 2e-4; GPT-2 seed 11, 4
    # prompts x 3, 350 steps, validation every 14
    "gpt2s11-4prompt-3sample-constlr2e-4-350-val14": {
        "steps": 350, "seed": 788, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14")},
    # rollout weights synced every 10 steps from a resume, periodic: from step 150 the engine samples from (and reports
    # the log-probs of) its own copy of the actor, refreshed at the end of every 10th step; the engine's log-probs
    # reported (metrics only); Llama seed 11, 4 prompts x 3, 350 steps, validation every 20
    "llamas11-4prompt-3sample-weightsyncevery10-from150-350-val20": {
        "steps": 350, "seed": 789, "model": "llama", "model_seed": 11, "overrides": _batch(
            4, 3, _LOGPROBS, "trainer.test_freq=20"), "driver": PeriodicWeightSync(150, 10)},
    # sampler RNG re-seeded at every step from a resume, sudden (may leave no mark): from step 150 torch.manual_seed(789)
    # before every step's rollout; GPT-2 seed 11, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s11-4prompt-3sample-samplerreseeded-from150-350-val14": {
        "steps": 350, "seed": 790, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, "trainer.test_freq=14"), "driver": SamplerReseeded(150, 789)},
    # AdamW eps typed as 1.0 at a resume, sudden (may leave no mark): from step 160 eps 1.0; constant lr 2e-4; GPT-2 seed
    # 11, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s11-4prompt-3sample-adameps1-from160-constlr2e-4-350-val14": {
        "steps": 350, "seed": 791, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": AdamEpsTypo(160, 1.0)},
    # one decoder layer back at its random init at a resume, sudden: at step 170 the actor's last decoder layer is
    # re-initialised (optimizer state kept); Llama seed 11, 3 prompts x 4, 350 steps, validation every 20
    "llamas11-3prompt-4sample-lastlayerreinit-from170-350-val20": {
        "steps": 350, "seed": 792, "model": "llama", "model_seed": 11, "overrides": _batch(
            3, 4, "trainer.test_freq=20"), "driver": LayerReinitialised(170, -1, 792)},
    # critic restarted at a resume under GAE, sudden: at step 180 the critic set back to its weights before the first
    # update, its optimizer state cleared; GAE lambda 0.95, no critic warm-up; Llama seed 11, 2 prompts x 4, 350 steps,
    # validation every 9
    "llamas11-2prompt-4sample-gae-criticrestart-from180-350-val9": {
        "steps": 350, "seed": 793, "model": "llama", "model_seed": 11, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=gae", "algorithm.lam=0.95", "trainer.test_freq=9"),
        "driver": CriticRestarted(180)},
    # grader reading the wrong field at a resume, sudden cause (the effect is learned): from step 150 the paid score is
    # the digit overlap with the first operand as 3 digits; the task's accuracy logged beside it
    # (reward_extra/acc/mean); constant lr 2e-4; GPT-2 seed 11, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s11-4prompt-3sample-wrongfieldgrader-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 794, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": WrongFieldGrader(150)},
    # off-by-one data shard mixed in, ramp: from step 150 a growing share (0 -> 100% at 300, kept) of training prompts
    # paid against the sum + 1 (each prompt's label fixed); validation untouched; Llama seed 11, 4 prompts x 3, 350
    # steps, validation every 18
    "llamas11-4prompt-3sample-offbyoneshard0-100pct-150-300-350-val18": {
        "steps": 350, "seed": 795, "model": "llama", "model_seed": 11, "overrides": _batch(
            4, 3, "trainer.test_freq=18"), "driver": OffByOneShard(150, 300, 1.0, 795)},
    # judge growing noisy, ramp: from step 150 Gaussian noise on the paid score, std 0 (150) -> 0.6 (300), kept; the
    # task's accuracy logged beside it; GPT-2 seed 11, 4 prompts x 4, 350 steps, validation every 16
    "gpt2s11-4prompt-4sample-noisyjudge-sd0-06-150-300-350-val16": {
        "steps": 350, "seed": 796, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 4, "trainer.test_freq=16"), "driver": NoisyJudge(150, 300, 0.6, 796)},
    # old log-probs taken from the reference at a resume, sudden cause: from step 150 the PPO ratio is pi / pi_ref (a
    # KL loss, weight 0.001, keeps the reference scored); constant lr 2e-4; GPT-2 seed 11, 4 prompts x 3, 350 steps,
    # validation every 14
    "gpt2s11-4prompt-3sample-klloss-oldlogpfromref-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 797, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, *_LR2E4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.001",
            "trainer.test_freq=14"), "driver": OldLogProbsFromReference(150)},
    # training set cut to 24 prompts at a resume, sudden cause (the effect is learned): from step 150 the same 24
    # prompts cycled; constant lr 2e-4; GPT-2 seed 11, 4 prompts x 3, 350 steps, validation every 14
    "gpt2s11-4prompt-3sample-trainset24-from150-constlr2e-4-350-val14": {
        "steps": 350, "seed": 798, "model": "gpt2", "model_seed": 11, "overrides": _batch(
            4, 3, *_LR2E4, "trainer.test_freq=14"), "driver": TrainSetCut(150, 24)},
    # reward one step late at a resume, sudden: from step 150 each step paid the previous step's scores (the pairing
    # with the responses lost, the level the same); validation untouched; Llama seed 11, 3 prompts x 4, 350 steps,
    # validation every 20
    "llamas11-3prompt-4sample-rewardonesteplate-from150-350-val20": {
        "steps": 350, "seed": 799, "model": "llama", "model_seed": 11, "overrides": _batch(
            3, 4, "trainer.test_freq=20"), "driver": RewardOneStepLate(150)},
    # added after the first runs were read (written and committed before it ran), seed 800: the layer re-init again,
    # with the init drawn explicitly (LayerRedrawn), the first form having been a no-op (NOT_STORED below).
    # one decoder layer back at a random init at a resume, sudden: at step 170 every linear weight of the actor's last
    # decoder layer redrawn normal(0, initializer_range), norms 1 (optimizer state kept); Llama seed 11, 3 prompts x 4,
    # 350 steps, validation every 20
    "llamas11-3prompt-4sample-lastlayerredrawn-from170-350-val20": {
        "steps": 350, "seed": 800, "model": "llama", "model_seed": 11, "overrides": _batch(
            3, 4, "trainer.test_freq=20"), "driver": LayerRedrawn(170, -1, 800)},
}


# run once and not stored (README, twentieth pass): the layer re-init's first form left the weights as they were
# (transformers' _init_weights skips parameters it has marked initialised; checked after the run on the seed-11
# Llama: every parameter of the last layer bit-identical after .apply(_init_weights)), so that run is the unchanged
# training under a name that says otherwise
NOT_STORED: tuple[str, ...] = ("llamas11-3prompt-4sample-lastlayerreinit-from170-350-val20",)


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
