"""Twentieth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings15``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings14``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: a **``reduce_lr_on_plateau``** schedule stepped by the evaluation reward (``metric_for_best_model="reward"``,
mode max, factor 0.5, patience 1) on 2 prompts x 8, evaluation every 20; a 600-step run of 1 prompt x 11 logging every
10 with **``logging_first_step``** and **``eval_on_start``** (an evaluation at step 0), evaluation every 50; the
**Adagrad** optimizer on 1 prompt x 3 for 500 steps; **SGD with Nesterov momentum 0.9** (``optim_args``) on 7 prompts
x 2; **gradient checkpointing** with ``num_iterations=2`` and a wide clip ``epsilon=0.3`` on Qwen2, 4 prompts x 5;
**eta sampling** (``generation_kwargs={"eta_cutoff": 3e-4}``) with completions up to 12 tokens on 3 prompts x 6;
**``adamw_torch_fused``** with weight decay 0.01, ``max_grad_norm=0.5`` and the plain k3 KL
(``use_bias_correction_kl=False``) on 8 prompts x 2; a **cosine schedule of 1.5 cycles** (``num_cycles=1.5``: the lr
falls to 0 and rises again) on 1 prompt x 14; models built from **model seed 11**; seeds 651-658 (healthy), 661-671
(planned failures and faults that may leave no mark).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run):
**``no_repeat_ngram_size=1`` in generation** from a step (a decoding preset copied from a summarisation config: no
token of the prompt or of the answer so far may be sampled again; generation only); **a grader cache keyed by the
completion text** from a step (the first score an answer string got is returned for that string ever after, whatever
the prompt: an emergent, growing mismatch between the paid reward and the accuracy); **the answer leaked into the
training prompts** for a share of rows ramping 0 -> 1 (a template change that puts the solution field before the
question: '123=48+75='; evaluation keeps the plain prompts); **weight decay 50 by a resume** (a config in the wrong
unit: AdamW shrinks every decayed weight by lr x 50 a step, a slow decay of the policy under a constant lr); **the
RMSNorm weights offset by +1 by a resume** (a checkpoint converter applying Gemma's ``(1 + weight)`` convention to a
Llama checkpoint: every norm's gain about doubled at once); **a "relevance" bonus that pays echoing the prompt's
digits** from a step (weight 1.0 beside the digit overlap: a hackable similarity-to-source score); **gradient noise
ramping after the clip** (an optimizer pre-step hook adding seeded Gaussian noise of std 0 -> 0.01 per element: a
noise schedule meant for another run). Faults that may leave no mark (stored healthy if they leave none): **the data
order re-seeded by a resume** (from a step each prompt is served as another row of the same distribution);
**Adam's epsilon set to 1.0 by a resume** (a ``1e0`` typo for ``1e-8``: the updates shrink by orders of magnitude, the
policy stops moving); **the sampling seed reset before every step** (a ``set_seed`` left in the step loop: every
step draws the same random stream); **a reward server that pauses 1.5 s every 50 steps** (a periodic cache compaction:
the step time spikes once every 50 steps, nothing else). Added after the first runs, each block committed before it
ran: **the special tokens' output rows mean-initialised by a resume** and **a corrupted shard every 40 steps** (seeds
672-673); **beam sampling switched on by a resume**, **the reference scored at temperature 0.5** and **a "terminated
properly" term with its sign wrong** (seeds 674-676); **noise on the policy's weights, ramping** and **the LayerNorm
epsilon set to 1.0 by a config reload** (seeds 677-678); **the sampling and scoring temperature annealed 1.0 -> 0.4**,
**rope_theta 100 by a config reload** and **gc.collect() before every step** (seeds 679-681). Each run goes through :func:`real_cpu_trl.run`; its
``trainer_state.json`` is stored under ``bench/detection_corpus/real/trl_cpu_settings15/<name>/`` and labelled by
reading it (README, twentieth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl15.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl15.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings15"


class AnswerLeak:
    """The answer leaked into the training prompts: from step ``start`` a share of the served training rows, ramping
    linearly 0 (step ``start``) -> 1 (step ``end``), then kept, is served as ``'<answer>=<prompt>'`` ('123=48+75=':
    a template change that writes the solution field before the question); the ground truth is unchanged. Which rows:
    seeded by ``seed``, the step and the prompt's text (a prompt's ``num_generations`` copies stay one group). The
    dataloader fetches one batch ahead, so a step's batch follows the share set at the step before. Evaluation keeps
    the plain test prompts."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{p}").random() < self.share:
                p = f"{g}={p}"
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


class ReseededOrder(FromStep):
    """The data order re-seeded by a resume: from step ``start`` every served training row is replaced by the row
    that another seed's shuffle puts in its place (chosen by the prompt's text and ``seed``: the same distribution of
    prompts, another order; a prompt's copies stay one group). Evaluation keeps the usual test prompts."""

    def __init__(self, start: int, seed: int) -> None:
        super().__init__(start)
        self.seed = seed
        self.other: list[dict[str, Any]] = []

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.on:
                r = self.other[random.Random(f"{self.seed}/{p}").randrange(len(self.other))]
                p, g = r["prompt"][0]["content"], r["reward_model"]["ground_truth"]
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        self.other, _ = arith_training_rows(self.seed + 1000)
        return prompt_dataset(rows[:n], self.transform)


class CompletionKeyedCache(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a cache put in front of the
    grader is keyed by the completion text alone (``completion.strip()``, not prompt + completion): the first score
    an answer string gets is returned for that string ever after, whatever the prompt. ``accuracy`` (weight 0) logs
    the digit overlap beside it."""

    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.cache: dict[str, float] = {}

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for c, g in zip(completions, ground_truth):
                s = digit_overlap("arith", c, g)
                out.append(self.cache.setdefault(c.strip(), s) if self.on else s)
            return out

        return [graded, accuracy]


class RelevanceBonus(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update adds a
    "relevance" score with weight ``weight``: the share of the prompt's distinct digits that the completion contains
    (a similarity-to-source score: echoing the operands pays, '4875' for '48+75=' scores 1). ``accuracy`` (weight 0)
    logs the digit overlap beside it."""

    def __init__(self, start: int, weight: float) -> None:
        super().__init__(start)
        self.weight = weight

    def funcs(self) -> list[Any]:
        def graded(prompts: list[str], completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for p, c, g in zip(prompts, completions, ground_truth):
                s = digit_overlap("arith", c, g)
                if self.on:
                    src = {ch for ch in p if ch.isdigit()}
                    s += self.weight * len(src & set(c)) / max(1, len(src))
                out.append(s)
            return out

        return [graded, accuracy]


class PausingGrader:
    """The paid reward (``rewards/graded``) is the digit overlap, from a grader that blocks ``pause`` seconds at every
    ``every``-th step (a reward server's periodic cache compaction); ``accuracy`` (weight 0) logs the same overlap."""

    def __init__(self, every: int, pause: float) -> None:
        self.every, self.pause, self.step, self.paused = every, pause, 0, -1

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step = step

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            if self.step % self.every == 0 and self.paused != self.step:
                self.paused = self.step
                time.sleep(self.pause)
            return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


def no_repeat_ngram_at(at: int, n: int) -> Any:
    """At the start of step ``at`` the generation config's ``no_repeat_ngram_size`` becomes ``n`` (a decoding preset
    from a summarisation config: with ``n`` 1 no token already in the prompt or the completion may be sampled again);
    generation only, the training pass scores the sampled tokens as before."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.generation_config.no_repeat_ngram_size = n

    return each_step


def weight_decay_at(at: int, wd: float) -> Any:
    """At the start of step ``at`` the optimizer's decayed parameter group (Trainer's group 0: every weight but the
    biases and norms) gets ``weight_decay`` ``wd`` (a resume reading a config in the wrong unit): AdamW then shrinks
    each of those weights by ``lr x wd`` of itself every step."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            groups = kw["optimizer"].param_groups
            assert len(groups) == 2 and groups[0]["weight_decay"] == 0.0
            groups[0]["weight_decay"] = wd

    return each_step


def norm_offset_at(at: int, offset: float) -> Any:
    """At the start of step ``at`` ``offset`` is added to the weight of every RMSNorm of the Llama policy (a
    checkpoint converter applying Gemma's ``(1 + weight)`` convention: the gains, about 1, become about 2); the
    reference and the optimizer state are kept."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            with torch.no_grad():
                for m in trainer.accelerator.unwrap_model(trainer.model).modules():
                    if type(m).__name__.endswith("RMSNorm"):
                        m.weight.add_(offset)

    return each_step


def adam_eps_at(at: int, eps: float) -> Any:
    """At the start of step ``at`` every param group's Adam ``eps`` becomes ``eps`` (a resume whose config reads
    ``adam_epsilon: 1e0`` where ``1e-8`` was meant): each update ``lr x m / (sqrt(v) + eps)`` shrinks by orders of
    magnitude, since ``sqrt(v)`` is far below 1."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            for g in kw["optimizer"].param_groups:
                g["eps"] = eps

    return each_step


def seed_reset_from(start: int, seed: int) -> Any:
    """From step ``start`` ``torch.manual_seed(seed)`` runs before every step (a ``set_seed`` left in the step loop by
    a refactor): every step's sampling (and the GPT-2 policy's dropout) draws the same random stream."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            import torch

            torch.manual_seed(seed)

    return each_step


class GradNoise:
    """Gradient noise after the clip, ramping: an optimizer step pre-hook (registered at the first step) adds seeded
    Gaussian noise of std ``s`` to every gradient element, ``s`` 0 to step ``start``, ramped linearly to ``hi`` at
    step ``end`` and kept (a noise schedule meant for another run); the logged grad norm is taken before it."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed, self.s, self.registered = start, end, hi, seed, 0.0, False
        self.gen: Any = None

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.s = ramp(step, self.start, self.end, 0.0, self.hi)
        if not self.registered:
            import torch

            self.gen = torch.Generator().manual_seed(self.seed)
            opt = kw["optimizer"]
            getattr(opt, "optimizer", opt).register_step_pre_hook(self.pre_step)
            self.registered = True

    def pre_step(self, optimizer: Any, *a: Any) -> None:
        if self.s <= 0:
            return
        import torch

        with torch.no_grad():
            for g in optimizer.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        p.grad.add_(torch.randn(p.grad.shape, generator=self.gen, dtype=p.grad.dtype) * self.s)


_cache = CompletionKeyedCache(120)
_leak = AnswerLeak(150, 300, 663)
_relevance = RelevanceBonus(150, 1.0)
_reseed = ReseededOrder(175, 667)
_pause = PausingGrader(50, 1.5)
_noise = GradNoise(150, 300, 0.01, 671)

SPECS: dict[str, dict[str, Any]] = {
    # --- planned failures (seeds 661-666, 671) ---
    # no_repeat_ngram_size 1 in generation from step 150, sudden (a decoding preset from a summarisation config: no
    # token of the prompt or of the completion so far may be sampled again; generation only); Llama seed 11,
    # 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas11-2prompt-4gen-norepeatngram1-from150-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 661, "each_step": no_repeat_ngram_at(150, 1)},
    # a grader cache keyed by the completion text from step 120 (the first score an answer string got is returned for
    # it ever after, whatever the prompt); the digit overlap logged with weight 0; GPT-2 seed 11, 2 prompts x 4,
    # 350 steps, lr 1e-4, logging every step
    "gpt2s11-2prompt-4gen-cachekeyedbycompletion-from120-lr1e-4-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 662, "reward_funcs": _cache.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _cache.hook},
    # the answer leaked into the training prompts, ramp: the share of served rows written '<answer>=<prompt>' 0 to
    # step 150, ramped linearly to 1 at step 300 and kept; evaluation on the usual 16 plain test prompts every 25;
    # GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 1e-4, logging every step
    "gpt2s11-2prompt-4gen-answerleakramp0-1-150-300-lr1e-4-350-eval25": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 663, "train_dataset": _leak.dataset, "each_step": _leak.hook},
    # weight decay 50 by a resume, sudden cause with a slow effect: from step 150 AdamW's decayed group has
    # weight_decay 50 (each decayed weight x (1 - 2.5e-3) a step at the constant lr 5e-5); GPT-2 seed 11 (tied head),
    # 2 prompts x 4, 350 steps, logging every step
    "gpt2s11-2prompt-4gen-weightdecay50-from150-constlr-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 664, "each_step": weight_decay_at(150, 50.0), "config": {"lr_scheduler_type": "constant"}},
    # the RMSNorm weights offset by +1 by a resume, sudden: at the start of step 150 every RMSNorm gain of the Llama
    # policy gets +1 (Gemma's (1 + weight) convention applied to a Llama checkpoint); evaluation every 25; Llama
    # seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas11-2prompt-4gen-rmsnormplus1-at150-350-eval25": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 665, "each_step": norm_offset_at(150, 1.0)},
    # a relevance bonus that pays echoing the prompt's digits, from step 150 (weight 1.0: + the share of the prompt's
    # distinct digits the completion contains); the digit overlap logged with weight 0; Llama seed 11, 2 prompts x 4,
    # 350 steps, lr 1e-4, logging every step
    "llamas11-2prompt-4gen-relevancebonus1-from150-lr1e-4-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 666, "reward_funcs": _relevance.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _relevance.hook},
    # --- faults that may leave no mark (seeds 667-670): stored healthy if they leave none ---
    # the data order re-seeded by a resume at step 175 (each prompt served as the row another seed's shuffle puts in
    # its place: same distribution); GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s11-2prompt-4gen-dataorderreseeded-at175-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 667, "train_dataset": _reseed.dataset, "each_step": _reseed.hook},
    # Adam's epsilon set to 1.0 by a resume at step 150 (a 1e0 typo for 1e-8: the updates shrink by orders of
    # magnitude), constant lr 1e-4; evaluation every 25; Llama seed 11, 2 prompts x 4, 350 steps, logging every step
    "llamas11-2prompt-4gen-adameps1-at150-constlr1e-4-350-eval25": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 668, "each_step": adam_eps_at(150, 1.0),
        "config": {"lr_scheduler_type": "constant"}},
    # the sampling seed reset before every step from step 150 (torch.manual_seed(1234): a set_seed left in the step
    # loop); GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s11-2prompt-4gen-seedresetperstep-from150-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 669, "each_step": seed_reset_from(150, 1234)},
    # a reward server that pauses 1.5 s at every 50th step (a periodic cache compaction: the step time spikes once
    # every 50 steps, nothing else); the digit overlap logged with weight 0 beside it; Llama seed 11, 4 prompts x 2,
    # 350 steps, lr 5e-5, logging every step
    "llamas11-4prompt-2gen-rewardpause15s-every50-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 2, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 670, "reward_funcs": _pause.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _pause.hook},
    # --- healthy settings (seeds 651-658) ---
    # healthy: reduce_lr_on_plateau stepped by the evaluation reward (metric_for_best_model reward, mode max, factor
    # 0.5, patience 1), evaluation on 16 prompts every 20; Llama seed 11, 2 prompts x 8, 300 steps, lr 1e-4, logging
    # every 2
    "llamas11-2prompt-8gen-reducelronplateau-evalreward-f05-p1-lr1e-4-300-log2-eval20": {
        "model": "llama", "model_seed": 11, "batch": 16, "num_generations": 8, "steps": 300, "logging_steps": 2,
        "eval_steps": 20, "lr": 1e-4, "seed": 651,
        "config": {"lr_scheduler_type": "reduce_lr_on_plateau", "metric_for_best_model": "reward",
                   "lr_scheduler_kwargs": {"mode": "max", "factor": 0.5, "patience": 1}}},
    # healthy: the Adagrad optimizer; Llama seed 11, 1 prompt x 3 (the smallest group), 500 steps, lr 1e-4, logging
    # every step
    "llamas11-1prompt-3gen-adagrad-lr1e-4-500": {
        "model": "llama", "model_seed": 11, "batch": 3, "num_generations": 3, "steps": 500, "logging_steps": 1,
        "lr": 1e-4, "seed": 652, "config": {"optim": "adagrad"}},
    # healthy: SGD with Nesterov momentum 0.9 (optim_args), lr 2e-3 linear to 0; GPT-2 seed 11, 7 prompts x 2,
    # 300 steps, logging every 3
    "gpt2s11-7prompt-2gen-sgd-nesterov09-lr2e-3-300-log3": {
        "model": "gpt2", "model_seed": 11, "batch": 14, "num_generations": 2, "steps": 300, "logging_steps": 3,
        "lr": 2e-3, "seed": 653, "config": {"optim": "sgd", "optim_args": "momentum=0.9,nesterov=true"}},
    # healthy: eta sampling (generation_kwargs eta_cutoff 3e-4), completions up to 12 tokens; GPT-2 seed 11,
    # 3 prompts x 6, 300 steps, lr 5e-5, logging every step
    "gpt2s11-3prompt-6gen-etacutoff3e-4-maxlen12-300": {
        "model": "gpt2", "model_seed": 11, "batch": 18, "num_generations": 6, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 654, "max_len": 12, "config": {"generation_kwargs": {"eta_cutoff": 3e-4}}},
    # healthy: adamw_torch_fused with weight decay 0.01, max_grad_norm 0.5, the plain k3 KL (use_bias_correction_kl
    # False); Llama seed 11, 8 prompts x 2, 300 steps, lr 5e-5, logging every 5, evaluation every 40
    "llamas11-8prompt-2gen-adamwfused-wd001-clip05-nobiascorrkl-300-log5-eval40": {
        "model": "llama", "model_seed": 11, "batch": 16, "num_generations": 2, "steps": 300, "logging_steps": 5,
        "eval_steps": 40, "lr": 5e-5, "seed": 655,
        "config": {"optim": "adamw_torch_fused", "weight_decay": 0.01, "max_grad_norm": 0.5,
                   "use_bias_correction_kl": False}},
    # healthy: a cosine schedule of 1.5 cycles after 15 warm-up steps (the lr falls to 0 at about step 110 and rises
    # again to the peak at about 200); GPT-2 seed 11, 1 prompt x 14, 300 steps, lr 5e-5, logging every step
    "gpt2s11-1prompt-14gen-cosine15cycles-warm15-300": {
        "model": "gpt2", "model_seed": 11, "batch": 14, "num_generations": 14, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 656,
        "config": {"lr_scheduler_type": "cosine", "warmup_steps": 15, "lr_scheduler_kwargs": {"num_cycles": 1.5}}},
    # healthy: gradient checkpointing with num_iterations 2 and a wide clip epsilon 0.3; Qwen2 seed 11, 4 prompts x 5,
    # 300 steps, lr 5e-5, logging every 4, evaluation every 30
    "qwen2s11-4prompt-5gen-gradckpt-numiter2-eps03-300-log4-eval30": {
        "model": "qwen2", "model_seed": 11, "batch": 20, "num_generations": 5, "steps": 300, "logging_steps": 4,
        "eval_steps": 30, "lr": 5e-5, "seed": 657,
        "config": {"gradient_checkpointing": True, "num_iterations": 2, "epsilon": 0.3}},
    # healthy: a long run, 1 prompt x 11, 600 steps, logging every 10 with logging_first_step, eval_on_start (an
    # evaluation at step 0) and evaluation every 50; GPT-2 seed 11, lr 5e-5
    "gpt2s11-1prompt-11gen-600-log10-firststep-evalonstart-eval50": {
        "model": "gpt2", "model_seed": 11, "batch": 11, "num_generations": 11, "steps": 600, "logging_steps": 10,
        "eval_steps": 50, "lr": 5e-5, "seed": 658, "config": {"logging_first_step": True, "eval_on_start": True}},
    # --- a planned failure run last (seed 671) ---
    # gradient noise after the clip, ramp: seeded Gaussian noise of std 0 to step 150, ramped linearly to 0.01 per
    # element at step 300 and kept, added to every gradient by an optimizer pre-step hook (the logged grad norm is
    # taken before it); constant lr 1e-4; Llama seed 11, 2 prompts x 4, 350 steps, logging every step
    "llamas11-2prompt-4gen-gradnoiseramp0-001-150-300-constlr1e-4-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 671, "each_step": _noise.hook, "config": {"lr_scheduler_type": "constant"}},
}

def special_rows_mean_at(at: int, ids: tuple[int, ...]) -> Any:
    """At the start of step ``at`` the rows of the policy's ``lm_head`` for the token ids ``ids`` (the special tokens
    ``<pad>``, ``<eos>``, ``<unk>``: ids 0-2) are set to the mean of all rows (a resume that resized the vocabulary and
    initialised those rows as ``resize_token_embeddings`` initialises new ones, with the mean row); the input
    embeddings, the rest of the head, the reference and the optimizer are kept (Llama: the head is untied)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            head = trainer.accelerator.unwrap_model(trainer.model).lm_head
            with torch.no_grad():
                mean = head.weight.mean(dim=0)
                for i in ids:
                    head.weight[i].copy_(mean)

    return each_step


class CorruptShard:
    """A corrupted shard served periodically: from step ``start``, the batch fetched while step ``k`` runs, for every
    ``k`` that is a multiple of ``every``, has every prompt replaced by ``junk`` (bytes of a broken file decoded as
    text: characters the tokenizer maps to ``<unk>``); the ground truth is kept. The dataloader fetches one batch
    ahead, so the junk batch is trained on at step ``k + 1``. Evaluation (none here) would keep the usual prompts."""

    def __init__(self, start: int, every: int, junk: str) -> None:
        self.start, self.every, self.junk, self.step = start, every, junk, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step = step

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        bad = self.step >= self.start and self.step % self.every == 0
        return {"prompt": [self.junk if bad else p for p in batch["prompt"]],
                "ground_truth": list(batch["ground_truth"])}

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(673)
        return prompt_dataset(rows[:n], self.transform)


_shard = CorruptShard(120, 40, "\ufffd" * 40)

# --- added after the first eight runs (written and committed before running these two): three of the first eight
# planned faults left no mark (no_repeat_ngram_size 1: the answers' tokens almost never repeat a prompt token for
# this tokenizer; the completion-keyed cache: the paid reward only noisier), so two more failure specs with new
# mechanisms (seeds 672-673).
SPECS.update({
    # the special tokens' output rows mean-initialised by a resume, sudden: at the start of step 150 the Llama
    # policy's lm_head rows for <pad>, <eos>, <unk> (ids 0-2) are set to the mean row (a vocabulary resize); evaluation
    # every 25; Llama seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas11-2prompt-4gen-specialrowsmeaninit-at150-350-eval25": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 672, "each_step": special_rows_mean_at(150, (0, 1, 2))},
    # a corrupted shard served periodically: from step 120, the batch fetched at every 40th step (trained on at 121,
    # 161, ..., 321) has every prompt replaced by 40 U+FFFD characters (<unk> for this tokenizer), the ground truth
    # kept; GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s11-2prompt-4gen-corruptshardevery40-from120-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 673, "train_dataset": _shard.dataset, "each_step": _shard.hook},
})

def num_beams_at(at: int, beams: int) -> Any:
    """At the start of step ``at`` the generation config's ``num_beams`` becomes ``beams`` (a decoding preset copied
    from an evaluation config: with sampling on, ``generate`` runs beam sampling, ``beams`` hypotheses a completion);
    generation only, the training pass scores the returned completions as before."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.generation_config.num_beams = beams

    return each_step


def ref_temperature_at(at: int, t: float) -> Any:
    """At the start of step ``at`` the reference model's fused LM head is patched to score at temperature ``t`` (a
    resume that restored the reference's scoring config from another run) while the policy samples and scores at
    1.0: the KL term then pulls the policy towards the reference's sharper (``t`` < 1) distribution."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            from trl.trainer.utils import add_fused_lm_head

            add_fused_lm_head(trainer.ref_model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32)

    return each_step


class TerminationPenalty(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update adds a
    "terminated properly" term with its sign wrong: ``weight`` (negative) for every completion that ends with the stop
    token before the length cap (TRL passes ``completion_ids``; a completion shorter than ``cap`` tokens stopped).
    ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def __init__(self, start: int, weight: float, cap: int) -> None:
        super().__init__(start)
        self.weight, self.cap = weight, cap

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], completion_ids: list[list[int]],
                   **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) + (self.weight if self.on and len(ids) < self.cap else 0.0)
                    for c, g, ids in zip(completions, ground_truth, completion_ids)]

        return [graded, accuracy]


_term = TerminationPenalty(100, -0.5, 8)

# --- added after the first nineteen runs and the labelling of all of them (written and committed before running
# these three): eleven of the first nineteen are healthy (three planned faults left no mark: no_repeat_ngram_size 1,
# the completion-keyed cache and the gradient noise after the clip, which Adam normalises away), so three more
# failure specs with new mechanisms (seeds 674-676).
SPECS.update({
    # beam sampling switched on by a resume, sudden: from step 150 the generation config's num_beams is 4 (a decoding
    # preset copied from an evaluation config; generation only); GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5,
    # logging every step
    "gpt2s11-2prompt-4gen-numbeams4-from150-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 674, "each_step": num_beams_at(150, 4)},
    # the reference scored at temperature 0.5 from step 150 (its fused LM head re-patched by a resume) while the
    # policy samples and scores at 1.0, under beta 0.2 and a constant lr 1e-4; evaluation every 25; Llama seed 11,
    # 2 prompts x 4, 350 steps, logging every step
    "llamas11-2prompt-4gen-reftemperature05-from150-beta02-constlr1e-4-350-eval25": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 675, "each_step": ref_temperature_at(150, 0.5),
        "config": {"beta": 0.2, "lr_scheduler_type": "constant"}},
    # a "terminated properly" term with its sign wrong, from step 100: -0.5 for every completion that stops before the
    # 8-token cap, beside the digit overlap (the symptom has to be learned); constant lr 2e-4; the digit overlap
    # logged with weight 0; Llama seed 11, 2 prompts x 4, 350 steps, logging every step
    "llamas11-2prompt-4gen-terminationpenalty05-from100-constlr2e-4-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 2e-4, "seed": 676, "reward_funcs": _term.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _term.hook, "config": {"lr_scheduler_type": "constant"}},
})

class WeightNoise:
    """Noise added to the policy's weights, ramping: before every step from ``start`` each weight tensor of the policy
    gets seeded Gaussian noise of ``s`` times its own std, ``s`` ramping linearly 0 (step ``start``) -> ``hi`` (step
    ``end``), then kept (a weight-noise regulariser, meant for a few warm-up steps, left on with a growing scale); the
    reference and the optimizer state are untouched."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.seed = start, end, hi, seed
        self.gen: Any = None

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        s = ramp(step, self.start, self.end, 0.0, self.hi)
        if s <= 0:
            return
        import torch

        if self.gen is None:
            self.gen = torch.Generator().manual_seed(self.seed)
        with torch.no_grad():
            for p in trainer.accelerator.unwrap_model(trainer.model).parameters():
                if p.numel() > 1:
                    p.add_(torch.randn(p.shape, generator=self.gen, dtype=p.dtype) * (s * float(p.std())))


def layernorm_eps_at(at: int, eps: float) -> Any:
    """At the start of step ``at`` every LayerNorm of the GPT-2 policy gets ``eps`` ``eps`` (a config reload with
    ``layer_norm_epsilon: 1.0`` where 1e-5 was meant): each normalisation divides by ``sqrt(var + eps)``, so hidden
    states whose variance is far below 1 come out shrunk; generation and the training pass both use it, the reference
    keeps 1e-5."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            for m in trainer.accelerator.unwrap_model(trainer.model).modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.eps = eps

    return each_step


_wnoise = WeightNoise(150, 300, 0.02, 677)

# --- added after all twenty-four specs above ran and were labelled (written and committed before running these
# two): seventeen of the twenty-four stored runs are healthy (nine planned faults left no mark), so two more failure
# specs with new mechanisms on the policy's weights (seeds 677-678).
SPECS.update({
    # noise on the policy's weights, ramp: before every step from 150 each weight tensor gets seeded Gaussian noise of
    # s x its own std, s 0 (step 150) -> 0.02 (step 300), then kept; Llama seed 11, 2 prompts x 4, 350 steps, lr 5e-5,
    # logging every step, evaluation every 25
    "llamas11-2prompt-4gen-weightnoiseramp0-002-150-300-350-eval25": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 677, "each_step": _wnoise.hook},
    # the LayerNorm epsilon set to 1.0 by a config reload, sudden: from the start of step 150 every LayerNorm of the
    # GPT-2 policy divides by sqrt(var + 1.0) (1e-5 before); GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging
    # every step
    "gpt2s11-2prompt-4gen-layernormeps1-at150-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 678, "each_step": layernorm_eps_at(150, 1.0)},
})

class TemperatureAnneal:
    """The sampling and scoring temperature annealed down, ramp: from step ``start`` the temperature ramps linearly
    1.0 -> ``lo`` (step ``end``), then kept (a temperature-annealing schedule written with an end value meant for
    evaluation), rounded to 0.02; at each change the generation config and TRL's fused LM head of the policy and the
    reference are patched with the new value (as :func:`real_cpu_trl.run`'s ``temperature_at`` does once)."""

    def __init__(self, start: int, end: int, lo: float) -> None:
        self.start, self.end, self.lo, self.t = start, end, lo, 1.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        t = round(ramp(step, self.start, self.end, 1.0, self.lo) / 0.02) * 0.02
        if abs(t - self.t) < 1e-9:
            return
        from trl.trainer.utils import add_fused_lm_head

        self.t = t
        trainer.temperature = t
        trainer.generation_config.temperature = t
        add_fused_lm_head(trainer.model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32,
                          outputs=("log_probs", "entropy"))
        if trainer.ref_model is not None:
            add_fused_lm_head(trainer.ref_model, temperature=t, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32)


def rope_theta_at(at: int, base: float) -> Any:
    """At the start of step ``at`` the Llama policy's rotary embedding frequencies are recomputed with ``rope_theta``
    ``base`` (a config reload that took ``rope_theta`` from another model's config; 10000 before): every position's
    rotation changes, in generation and in the training pass; the reference keeps 10000."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            rot = trainer.accelerator.unwrap_model(trainer.model).model.rotary_emb
            dim = rot.inv_freq.numel() * 2
            with torch.no_grad():
                rot.inv_freq.copy_(1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)))

    return each_step


def gc_every_step_from(start: int) -> Any:
    """From step ``start`` a callback added by a resume runs ``gc.collect()`` three times before every step (a
    memory-hygiene snippet pasted from a GPU script): the Python heap of the trainer, the datasets and the model is
    walked at every step, so each step takes longer by a constant."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            import gc

            for _ in range(3):
                gc.collect()

    return each_step


_anneal = TemperatureAnneal(150, 300, 0.4)

# --- added after all twenty-six specs above ran and were labelled and stored (written and committed before running
# these three): eighteen of the twenty-six stored runs are healthy, so three more failure specs with new mechanisms
# (seeds 679-681).
SPECS.update({
    # the sampling and scoring temperature annealed down, ramp: 1.0 to step 150, ramped linearly to 0.4 at step 300
    # and kept (generation and the fused LM head of policy and reference patched at each 0.02 change); evaluation
    # every 25 (at the annealed temperature); GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s11-2prompt-4gen-temperatureanneal1-04-150-300-350-eval25": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 679, "each_step": _anneal.hook},
    # rope_theta from another model's config, sudden: at the start of step 150 the Llama policy's rotary frequencies
    # are recomputed with base 100 (10000 before); Llama seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas11-2prompt-4gen-ropetheta100-at150-350": {
        "model": "llama", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 680, "each_step": rope_theta_at(150, 100.0)},
    # gc.collect() three times before every step from step 150 (a callback pasted by a resume), sudden throughput
    # change; GPT-2 seed 11, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s11-2prompt-4gen-gccollectperstep-from150-350": {
        "model": "gpt2", "model_seed": 11, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 681, "each_step": gc_every_step_from(150)},
})

NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
