"""Nineteenth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings14``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings13``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: ``loss_type="vespo"`` with its own shape parameters (``vespo_k_pos=1.5``, ``vespo_lambda_pos=2.0``,
``vespo_k_neg=2.5``, ``vespo_lambda_neg=1.5``) on 2 prompts x 7; an **``inverse_sqrt``** schedule after 20 warm-up
steps with **typical sampling** (``generation_kwargs={"typical_p": 0.9}``) on 3 prompts x 5; a
**``warmup_stable_decay``** schedule (30 warm-up, 100 decay steps) with the **RMSprop** optimizer on 1 prompt x 9,
logging every 9; **gradient accumulation 3** with ``adam_beta1=0.8``, ``adam_epsilon=1e-6`` and completions up to 10
tokens on Qwen2, evaluation every 45; ``loss_type="cispo"`` on a **``cosine_warmup_with_min_lr``** schedule with
``top_k=10`` and ``top_p=0.9`` on 5 prompts x 3; logging every 1 / 2 / 8 / 9, evaluation every 25 / 35 / 45; models
built from **model seed 10**; seeds 601-605 (healthy), 611-618 (planned failures).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): **the
sampling and scoring temperature raised to 1.6** from a step (a config reload; earlier passes lowered it, or raised it
in generation only); **the dataset silently becoming copies of one prompt** (a share of the served rows ramping 0 -> 1:
a dedup/join bug in the data pipeline); **a grader that is right only for short answers** (from a step it pays any
answer the truth starts with: '05' for '052'); **the LM head re-initialised by a resume** (a checkpoint without the
head's weights: ``lm_head`` newly initialised, the rest kept); **the reference model reset to the current policy** once
(a resume that loads the policy checkpoint as the reference) under ``beta=0.1``; **the reward inverted** from a step (a
grader update returning the error, 1 - overlap, as the reward); **stale rewards** (from a step the grading queue returns
the previous call's scores: an off-by-one in an async grader); **a reward that pays length slowly** (a small bonus per
character past the answer from the first step, no ramp). Added after the first runs (committed before they ran):
**another run's tokenizer loaded by a resume** (prompts encoded and completions decoded with a tokenizer trained from
another seed's text), **a grader whose numeric tolerance ramps** (an answer within 0 -> 30% of the sum scores 1.0)
and **the lr scheduler stepped twice a step** from a resume (seeds 610, 619, 620); then, committed before they ran,
**Adam's beta2 set to 0 by a resume**, **dropout raised to 0.5 by a resume** and the length bonus at 0.2 a character
under a constant lr 2e-4 (seeds 621-623); then, committed before they ran, **the grader fed the whole transcript**
(its parser takes the prompt's first number) and **the lr x100 for one step** from a resume (seeds 624-625). Each run
goes through :func:`real_cpu_trl.run`; its
``trainer_state.json`` is stored under ``bench/detection_corpus/real/trl_cpu_settings14/<name>/`` and labelled by
reading it (README, nineteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl14.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl14.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings14"


class OnePrompt:
    """The dataset silently becoming copies of one prompt: from step ``start`` a share of the served training rows,
    ramping linearly 0 (step ``start``) -> 1 (step ``end``), then kept, is replaced by one fixed row (the first row of
    the seeded shuffle's tail: a dedup or join bug in the data pipeline that maps many keys to one row). Which rows:
    seeded by ``seed``, the step and the prompt's text (so a prompt's ``num_generations`` copies stay one group). The
    dataloader fetches one batch ahead, so a step's batch follows the share set at the step before. Evaluation keeps
    the usual test prompts."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0
        self.one: tuple[str, str] = ("", "")

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{p}").random() < self.share:
                p, g = self.one
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        self.one = (rows[-1]["prompt"][0]["content"], rows[-1]["reward_model"]["ground_truth"])
        return prompt_dataset(rows[:n], self.transform)


class PrefixGrader(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update scores 1.0 any
    non-empty answer the ground truth starts with (written as ``truth.startswith(answer)``: right for full-width
    answers, and for every prefix of the truth too: '05' and '0' score as '052'); other answers keep the digit
    overlap. ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for c, g in zip(completions, ground_truth):
                a = c.strip()
                out.append(1.0 if self.on and a and g.startswith(a) else digit_overlap("arith", c, g))
            return out

        return [graded, accuracy]


class InvertedReward(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update returns the
    error (1 - overlap) in its place (a distance returned where a score was expected). ``accuracy`` (weight 0) logs
    the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            s = [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            return [1.0 - x for x in s] if self.on else s

        return [graded, accuracy]


class StaleRewards(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` the grading queue returns the
    previous call's scores (an off-by-one in an async grader: each batch gets the scores of the batch before it, in
    order). ``accuracy`` (weight 0) logs the digit overlap of the current completions beside it. Training calls
    only (the spec has no evaluation)."""

    def __init__(self, start: int) -> None:
        super().__init__(start)
        self.prev: Any = None

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            s = [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            out = self.prev if self.on and self.prev is not None and len(self.prev) == len(s) else s
            self.prev = s
            return out

        return [graded, accuracy]


def length_paid(weight: float) -> list[Any]:
    """The paid reward (``rewards/graded``): the digit overlap plus ``weight`` for every character past the answer's
    width (a "detail" bonus left in a grader from the first step, uncapped, no ramp); ``accuracy`` (weight 0) logs
    the digit overlap beside it."""

    def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
        return [digit_overlap("arith", c, g) + weight * max(0, len(c.strip()) - len(g))
                for c, g in zip(completions, ground_truth)]

    return [graded, accuracy]


def lm_head_reinit_at(at: int, seed: int) -> Any:
    """At the start of step ``at`` the policy's ``lm_head`` weights are drawn anew (normal, std 0.02, seeded: a
    resume from a checkpoint saved without the head, whose loader initialises it fresh with a warning); the rest of
    the policy, the optimizer state and the reference model are kept."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            head = trainer.accelerator.unwrap_model(trainer.model).lm_head
            g = torch.Generator().manual_seed(seed)
            with torch.no_grad():
                head.weight.copy_(torch.randn(head.weight.shape, generator=g, dtype=head.weight.dtype) * 0.02)

    return each_step


def ref_reset_to_policy_at(at: int) -> Any:
    """At the start of step ``at`` the reference model's weights are replaced by the policy's, once (a resume that
    loads the policy checkpoint as the reference): the KL is measured from there on against the step-``at`` policy."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            with torch.no_grad():
                for r, p in zip(trainer.ref_model.parameters(), trainer.model.parameters()):
                    r.copy_(p)

    return each_step


_one = OnePrompt(120, 240, 612)
_prefix = PrefixGrader(150)
_inv = InvertedReward(150)
_stale = StaleRewards(150)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type vespo with its own shape parameters (k_pos 1.5, lambda_pos 2.0, k_neg 2.5, lambda_neg 1.5);
    # Llama seed 10, 2 prompts x 7, 300 steps, lr 5e-5, logging every 8, evaluation on 16 prompts every 35
    "llamas10-2prompt-7gen-vespo-kpos15-lampos2-kneg25-lamneg15-300-log8-eval35": {
        "model": "llama", "model_seed": 10, "batch": 14, "num_generations": 7, "steps": 300, "logging_steps": 8,
        "eval_steps": 35, "lr": 5e-5, "seed": 601,
        "config": {"loss_type": "vespo", "vespo_k_pos": 1.5, "vespo_lambda_pos": 2.0, "vespo_k_neg": 2.5,
                   "vespo_lambda_neg": 1.5}},
    # healthy: inverse_sqrt schedule after 20 warm-up steps, typical sampling (generation_kwargs typical_p 0.9);
    # GPT-2 seed 10, 3 prompts x 5, 300 steps, lr 1e-4, logging every step
    "gpt2s10-3prompt-5gen-inversesqrt-warm20-typicalp09-lr1e-4-300": {
        "model": "gpt2", "model_seed": 10, "batch": 15, "num_generations": 5, "steps": 300, "logging_steps": 1,
        "lr": 1e-4, "seed": 602,
        "config": {"lr_scheduler_type": "inverse_sqrt", "warmup_steps": 20, "generation_kwargs": {"typical_p": 0.9}}},
    # healthy: warmup_stable_decay (30 warm-up steps, stable, 100 decay steps) with the RMSprop optimizer; Llama
    # seed 10, 1 prompt x 9, 300 steps, lr 5e-5, logging every 9
    "llamas10-1prompt-9gen-wsd-warm30-decay100-rmsprop-300-log9": {
        "model": "llama", "model_seed": 10, "batch": 9, "num_generations": 9, "steps": 300, "logging_steps": 9,
        "lr": 5e-5, "seed": 603,
        "config": {"lr_scheduler_type": "warmup_stable_decay", "warmup_steps": 30,
                   "lr_scheduler_kwargs": {"num_decay_steps": 100}, "optim": "rmsprop"}},
    # healthy: gradient accumulation 3 (one generation of 9 prompts x 2 feeds 3 micro-batches), adam_beta1 0.8,
    # adam_epsilon 1e-6, completions up to 10 tokens; Qwen2 seed 10, 3 prompts x 2 a micro-batch, 300 steps, lr 5e-5,
    # logging every 2, evaluation every 45
    "qwen2s10-3prompt-2gen-ga3-adambeta1-08-eps1e-6-maxlen10-300-log2-eval45": {
        "model": "qwen2", "model_seed": 10, "batch": 6, "num_generations": 2, "steps": 300, "logging_steps": 2,
        "eval_steps": 45, "lr": 5e-5, "seed": 604, "max_len": 10,
        "config": {"gradient_accumulation_steps": 3, "adam_beta1": 0.8, "adam_epsilon": 1e-6}},
    # healthy: loss_type cispo on cosine_warmup_with_min_lr (25 warm-up steps, min_lr_rate 0.2), top_k 10 with top_p
    # 0.9; GPT-2 seed 10, 5 prompts x 3, 300 steps, lr 5e-5, logging every step
    "gpt2s10-5prompt-3gen-cispo-coswarmminlr-warm25-topk10-topp09-300": {
        "model": "gpt2", "model_seed": 10, "batch": 15, "num_generations": 3, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 605,
        "config": {"loss_type": "cispo", "lr_scheduler_type": "cosine_warmup_with_min_lr", "warmup_steps": 25,
                   "lr_scheduler_kwargs": {"min_lr_rate": 0.2}, "top_k": 10, "top_p": 0.9}},
    # the sampling and scoring temperature raised to 1.6 from step 150, sudden (a config reload: the fused LM head
    # re-patched with the new temperature, so the training pass scores at 1.6 too); Llama seed 10, 2 prompts x 4,
    # 350 steps, logging every step
    "llamas10-2prompt-4gen-temperature16-from150-350": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 611, "temperature_at": 150, "temperature": 1.6},
    # the dataset becoming copies of one prompt, ramp: the share of served training rows replaced by one fixed row
    # 0 to step 120, ramped linearly to 1 at step 240 and kept; evaluation on the usual 16 test prompts every 25; GPT-2
    # seed 10, 2 prompts x 4, 350 steps, lr 1e-4, logging every step
    "gpt2s10-2prompt-4gen-onepromptramp0-1-120-240-lr1e-4-350-eval25": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 612, "train_dataset": _one.dataset, "each_step": _one.hook},
    # a grader right only for short answers, sudden cause with a learned effect: from step 150 any non-empty answer
    # the truth starts with scores 1.0 ('05' for '052'); the digit overlap logged with weight 0; GPT-2 seed 10,
    # 1 prompt x 8, 350 steps, lr 1e-4, logging every step
    "gpt2s10-1prompt-8gen-prefixgrader-from150-lr1e-4-350": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 8, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 613, "reward_funcs": _prefix.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _prefix.hook},
    # the LM head re-initialised by a resume, sudden: at the start of step 150 the policy's lm_head is drawn anew
    # (normal, std 0.02, seeded), the rest kept; evaluation every 25; Llama seed 10 (untied head), 2 prompts x 4,
    # 350 steps, logging every step
    "llamas10-2prompt-4gen-lmheadreinit-at150-350-eval25": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 614, "each_step": lm_head_reinit_at(150, 614)},
    # the reference model reset to the current policy once, at the start of step 200 (a resume that loads the policy
    # checkpoint as the reference), under beta 0.1 and a constant lr 2e-4 (so the policy has moved from the
    # reference by then; may leave no lasting mark); evaluation every 25; Llama seed 10, 2 prompts x 4, 350 steps,
    # logging every step
    "llamas10-2prompt-4gen-refresettopolicy-at200-beta01-constlr2e-4-350-eval25": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 2e-4, "seed": 615, "each_step": ref_reset_to_policy_at(200),
        "config": {"beta": 0.1, "lr_scheduler_type": "constant"}},
    # the reward inverted, sudden cause with a learned effect: from step 150 the grader returns 1 - overlap; the
    # digit overlap logged with weight 0; Llama seed 10, 3 prompts x 4, 350 steps, lr 1e-4, logging every step
    "llamas10-3prompt-4gen-rewardinverted-from150-lr1e-4-350": {
        "model": "llama", "model_seed": 10, "batch": 12, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 616, "reward_funcs": _inv.funcs(), "reward_weights": [1.0, 0.0], "each_step": _inv.hook},
    # stale rewards, sudden: from step 150 every reward call returns the previous call's scores (the current
    # completions' digit overlap logged with weight 0; may leave no mark beyond the learning signal becoming noise);
    # GPT-2 seed 10, 2 prompts x 4, 350 steps, lr 1e-4, logging every step
    "gpt2s10-2prompt-4gen-stalerewards-from150-lr1e-4-350": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 617, "reward_funcs": _stale.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _stale.hook},
    # a reward that pays length slowly, from the first step: the digit overlap plus 0.05 per character past the
    # answer's width (uncapped, no ramp: the symptom has to be learned); completions up to 16 tokens; the digit overlap
    # logged with weight 0; Llama seed 10, 2 prompts x 4, 350 steps, lr 1e-4, logging every step
    "llamas10-2prompt-4gen-lengthpaid005-fromstart-maxlen16-lr1e-4-350": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 618, "max_len": 16, "reward_funcs": length_paid(0.05), "reward_weights": [1.0, 0.0]},
}



def other_tokenizer(seed: int) -> Any:
    """The corpus BPE tokenizer as :func:`real_trainer.bpe_model_dir` trains it, from another seed's text (the
    tokenizer of another run: same recipe, same special tokens at ids 0-2, the other ids assigned differently)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(seed)
    text = [f"{a:02d}+{b:02d}={a + b:03d}" for a, b in ((rng.randint(0, 99), rng.randint(0, 99)) for _ in range(4000))]
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(pattern="+", behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.train_from_iterator(text, trainers.BpeTrainer(vocab_size=160, special_tokens=["<pad>", "<eos>", "<unk>"]))
    return PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def tokenizer_swapped_at(at: int, seed: int) -> Any:
    """At the start of step ``at`` the trainer's tokenizer (``processing_class``: prompts encoded, completions
    decoded) is replaced by :func:`other_tokenizer` ``(seed)`` (a resume that loaded another run's tokenizer next to
    this run's weights); the model, the reference and the optimizer are kept."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.processing_class = other_tokenizer(seed)

    return each_step


class LenientGrader:
    """The paid reward (``rewards/graded``) is the digit overlap, except that an all-digit answer within a relative
    tolerance of the true sum scores 1.0; the tolerance ramps linearly 0 (step ``start``) -> ``hi`` (step ``end``),
    then kept (a grader's numeric tolerance read from a config whose value was meant for another task, raised by a
    schedule). ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.tol = start, end, hi, 0.0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.tol = ramp(step, self.start, self.end, 0.0, self.hi)

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for c, g in zip(completions, ground_truth):
                a = c.strip()
                close = a.isdigit() and abs(int(a) - int(g)) <= self.tol * int(g)
                out.append(1.0 if self.tol > 0 and close else digit_overlap("arith", c, g))
            return out

        return [graded, accuracy]


def scheduler_stepped_twice_from(start: int) -> Any:
    """From step ``start`` the lr scheduler is stepped once more before every step (a callback added by a resume
    that calls ``lr_scheduler.step()`` itself: the schedule runs at twice the speed and reaches 0 half-way through
    what was left, then stays at 0)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            kw["lr_scheduler"].step()

    return each_step


_tol = LenientGrader(120, 300, 0.3)

# --- added after the first runs (written and committed before running them): the first runs took about 40 s, so
# there is time for three more failure specs.
SPECS.update({
    # another run's tokenizer loaded by a resume, sudden: at the start of step 150 the trainer's tokenizer (prompts
    # encoded, completions decoded) is the one trained from seed 11's text; evaluation every 25; GPT-2 seed 10,
    # 2 prompts x 4, 350 steps, logging every step
    "gpt2s10-2prompt-4gen-tokenizerswap-at150-350-eval25": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 619, "each_step": tokenizer_swapped_at(150, 11)},
    # a grader whose numeric tolerance ramps, ramp: an all-digit answer within tol x the true sum scores 1.0, tol 0 to
    # step 120, ramped linearly to 0.3 at step 300 and kept; the digit overlap logged with weight 0; Llama seed 10,
    # 2 prompts x 4, 350 steps, lr 1e-4, logging every step
    "llamas10-2prompt-4gen-lenientgrader-tol0-03-120-300-lr1e-4-350": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 620, "reward_funcs": _tol.funcs(), "reward_weights": [1.0, 0.0], "each_step": _tol.hook},
    # the lr scheduler stepped twice a step from step 150 (linear decay from 5e-5: it reaches 0 at about step 250 and
    # stays there; may leave no mark beyond the lr); GPT-2 seed 10, 2 prompts x 4, 350 steps, logging every 2
    "gpt2s10-2prompt-4gen-schedsteppedtwice-from150-350-log2": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 2,
        "lr": 5e-5, "seed": 610, "each_step": scheduler_stepped_twice_from(150)},
})


def adam_beta2_zeroed_at(at: int) -> Any:
    """At the start of step ``at`` every optimizer param group's ``betas`` become ``(beta1, 0.0)`` (a resume whose
    config had ``adam_beta2: 0`` where 0.999 was meant): Adam's second moment is then the last squared gradient alone,
    so each coordinate's update is about ``lr x m / |g|`` (near lr for every weight, however small its gradient)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            for g in kw["optimizer"].param_groups:
                g["betas"] = (g["betas"][0], 0.0)

    return each_step


def dropout_raised_at(at: int, p: float) -> Any:
    """At the start of step ``at`` every dropout layer of the policy drops with probability ``p`` (a resume that
    reloaded a model config with ``resid_pdrop`` / ``attn_pdrop`` / ``embd_pdrop`` of ``p`` where 0.1 was meant; the
    policy stays in train mode, so generation and the training pass both sample with dropout; the reference runs in
    eval mode)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            for m in trainer.accelerator.unwrap_model(trainer.model).modules():
                if isinstance(m, torch.nn.Dropout):
                    m.p = p

    return each_step


# --- added after the first sixteen specs ran (written and committed before running these three): seven of the
# first thirteen left no lasting mark (a fault that does not show is stored healthy), so three more failure specs:
# two new mechanisms and the length bonus at a weight and lr where the policy can learn it within the run.
SPECS.update({
    # Adam's beta2 set to 0 by a resume, sudden cause: at the start of step 150 every param group's betas become
    # (0.9, 0.0); constant lr 5e-5; Llama seed 10, 2 prompts x 4, 350 steps, logging every step, evaluation every 25
    "llamas10-2prompt-4gen-adambeta2zero-at150-constlr-350-eval25": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 621, "each_step": adam_beta2_zeroed_at(150),
        "config": {"lr_scheduler_type": "constant"}},
    # dropout raised to 0.5 by a resume, sudden: at the start of step 150 every dropout layer of the GPT-2 policy
    # (0.1 until then) drops half its inputs; GPT-2 seed 10, 2 prompts x 4, 350 steps, logging every step
    "gpt2s10-2prompt-4gen-dropout05-at150-350": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 622, "each_step": dropout_raised_at(150, 0.5)},
    # a reward that pays length, from the first step (the symptom has to be learned): the digit overlap plus 0.2 per
    # character past the answer's width (uncapped, no ramp) at a constant lr 2e-4; completions up to 16 tokens; the
    # digit overlap logged with weight 0; Llama seed 10, 2 prompts x 4, 350 steps, logging every step
    "llamas10-2prompt-4gen-lengthpaid02-fromstart-maxlen16-constlr2e-4-350": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 2e-4, "seed": 623, "max_len": 16, "reward_funcs": length_paid(0.2), "reward_weights": [1.0, 0.0],
        "config": {"lr_scheduler_type": "constant"}},
})


class FirstNumberOfTranscript(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap of the completion; from step ``start`` a grader
    refactor passes it the whole transcript (``prompt + completion``) and its parser takes the first number in the
    text (``re.match(r"\\d+", text)``), which is now the prompt's first operand: every completion of a prompt scores the
    same. ``accuracy`` (weight 0) logs the completion's digit overlap beside it."""

    def funcs(self) -> list[Any]:
        import re

        def graded(prompts: list[str], completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for p, c, g in zip(prompts, completions, ground_truth):
                if self.on:
                    m = re.match(r"\d+", p + c)
                    c = m.group(0) if m else ""
                out.append(digit_overlap("arith", c, g))
            return out

        return [graded, accuracy]


def lr_spike_once(at: int, factor: float) -> Any:
    """At step ``at`` only, every param group's lr is ``factor`` times the scheduled one (a resume that restored the
    scheduler one step late and applied the peak factor to the first step); the step after, the schedule is back."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            for g in kw["optimizer"].param_groups:
                g["lr"] *= factor

    return each_step


_first = FirstNumberOfTranscript(150)

# --- added after all nineteen specs above ran and were labelled (written and committed before running these two):
# ten of the eighteen stored runs are healthy (five planned faults left no mark), so two more failure specs with
# new mechanisms.
SPECS.update({
    # the grader fed the whole transcript, sudden: from step 150 the paid reward parses the first number of prompt +
    # completion (the prompt's first operand); the completion's digit overlap logged with weight 0; Llama seed 10,
    # 2 prompts x 4, 350 steps, logging every step
    "llamas10-2prompt-4gen-graderfirstnumberoftranscript-from150-350": {
        "model": "llama", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 624, "reward_funcs": _first.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _first.hook},
    # the lr x100 for one step, sudden (a resume restoring the scheduler one step late): at step 200 only, the lr is
    # 100 x the scheduled one (5e-3 on a constant 5e-5), then back; GPT-2 seed 10, 2 prompts x 4, 350 steps, constant
    # lr 5e-5, logging every step, evaluation every 25
    "gpt2s10-2prompt-4gen-lrx100onestep-at200-constlr-350-eval25": {
        "model": "gpt2", "model_seed": 10, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 625, "each_step": lr_spike_once(200, 100.0),
        "config": {"lr_scheduler_type": "constant"}},
})

# run once and not stored (README, nineteenth pass): Adam's beta2 set to 0 took the policy to entropy 0 and the
# length cap one step after the change, then its gradient norm to NaN, and sampling raised at step 171 ("probability
# tensor contains either inf, nan or element < 0"): the run died before TRL wrote its trainer_state.json
NOT_STORED: tuple[str, ...] = ("llamas10-2prompt-4gen-adambeta2zero-at150-constlr-350-eval25",)


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
