"""Twenty-first pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings16``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings15``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: **RMSprop centered with momentum 0.5** (``optim_args``) on 2 prompts x 5 logging every 6; a **polynomial
schedule of power 2** down to ``lr_end=1e-6`` after 30 warm-up steps on 1 prompt x 9; ``loss_type="grpo"`` with
``scale_rewards="none"`` and **epsilon sampling** (``generation_kwargs={"epsilon_cutoff": 3e-4}``) on Qwen2, 3 prompts
x 4, logging every 12; **gradient accumulation 3** with ``dr_grpo`` on 1 prompt x 6; **``pad_to_multiple_of=16``** with
**``num_generations_eval=6``** (evaluation groups of 6, training groups of 3) on 4 prompts x 3, logging every
7; ``bnpo`` on a **cosine schedule with 2 hard restarts** on 1 prompt x 16; ``luspo`` with
``epsilon_high=0.28`` and ``top_k=20`` on 2 prompts x 6 logging every 15; **``steps_per_generation=3``** with
**``off_policy_mask_threshold=0.5``** on a ``constant_with_warmup`` schedule, 2 prompts x 3; the **``greedy``** lr
schedule (transformers' ``GreedyLR``, stepped by the evaluation reward, mode max, factor 0.9, patience 1, lr bounded
1e-6 .. 2e-4); models built from **model seed 12**; seeds 701-709 (healthy), 711-726 (planned failures and faults that
may leave no mark).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run):
**the sampler's weights frozen by a broken weight sync** (from a step generation runs on a frozen copy of the policy
while the policy trains on its samples: an inference engine whose weight sync silently stopped); **the reference
model left in train mode** (GPT-2 dropout 0.1 on in the reference's scoring pass from a step); **Adam's betas swapped
by a resume** (``(0.999, 0.9)`` for ``(0.9, 0.999)``: a config that lists them the other way round); **a content filter
that bans every token containing '0'** in generation (``bad_words_ids`` from another task's config); **a recall-only
grader** from a step (the share of the answer's distinct digits found anywhere in the completion: '0123456789' scores
1; the digit overlap logged with weight 0); **the policy's weights cast to bf16 by a resume** (a reload with
``torch_dtype=bfloat16`` under an fp32 optimizer: the forward in bf16, updates rounded); **greedy decoding** from a
step (``do_sample=False``: an evaluation generation config reused: every group's completions identical); **the
rewards returned in reverse order** from a step (a grader pool that returns results last-in first-out: each
completion paid another's reward; the digit overlap logged beside it with weight 0); **the KL coefficient ramping
0.04 -> 4** (an adaptive KL controller with a far too low target raising beta); **a chat-style template wrapped
around a share of the prompts, ramping 0 -> 1** ('User: 48+75=\\nAssistant:' for a base model whose tokenizer knows no
letters). Faults that may leave no mark (stored healthy if they leave none): **the pad token set to the eos token by a
resume**; **the input embeddings frozen by a resume** (``requires_grad=False``: a PEFT-style freeze list); **the
rollouts generated under bf16 autocast** while the training pass stays fp32 (a rollout/training precision mismatch).
Added after the first five runs were read, in a block committed before it ran: **the tokenizer's decoder lost by a
reload**, **the '=' stripped from the prompts by a cleaning step** and **the KV cache turned off in generation**
(seeds 724-726). Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings16/<name>/`` and labelled by reading it (README, twenty-first pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl16.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl16.py NAME ...   # only these specs
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, arith_training_rows, main, prompt_dataset
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings16"


def stale_sampler_at(at: int) -> Any:
    """At the start of step ``at`` the policy is deep-copied into a frozen sampler and the policy's ``generate`` is
    pointed at the copy (an inference engine whose weight sync silently stopped): from then on every rollout comes from
    the step-``at`` weights while the policy keeps training on them (its own log-probs score them, so the importance
    ratio TRL sees is still 1)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            policy = trainer.accelerator.unwrap_model(trainer.model)
            frozen = copy.deepcopy(policy).eval()
            for p in frozen.parameters():
                p.requires_grad_(False)
            policy.generate = frozen.generate

    return each_step


def ref_train_mode_at(at: int) -> Any:
    """At the start of step ``at`` the reference model is put in train mode (a ``model.train()`` applied to every
    model in a list after a resume): GPT-2's dropout (0.1 on attention, residual and embeddings) is then on in the
    reference's scoring pass, so its log-probs are noisy; the policy's own pass is unchanged."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.ref_model.train()

    return each_step


def adam_betas_at(at: int, betas: tuple[float, float]) -> Any:
    """At the start of step ``at`` every param group's Adam ``betas`` become ``betas`` (a resume reading
    ``(beta2, beta1)``); the moments and the step count are kept, so the first moment barely moves and its bias
    correction, ``1 - beta1 ** t``, divides it by a small number."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            for g in kw["optimizer"].param_groups:
                g["betas"] = betas

    return each_step


def bad_words_at(at: int, char: str) -> Any:
    """At the start of step ``at`` the generation config's ``bad_words_ids`` bans every vocabulary token whose text
    contains ``char`` (a content-filter list copied from another task's generation config); generation only."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            tok = trainer.processing_class
            banned = sorted(i for t, i in tok.get_vocab().items() if char in t)
            trainer.generation_config.bad_words_ids = [[i] for i in banned]

    return each_step


class RecallGrader(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update scores recall
    only: the share of the true answer's distinct digits found anywhere in the completion (no penalty for extra or
    misplaced digits: '0123456789' scores 1). ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = []
            for c, g in zip(completions, ground_truth):
                if self.on:
                    want = set(str(g))
                    out.append(len(want & set(c)) / len(want))
                else:
                    out.append(digit_overlap("arith", c, g))
            return out

        return [graded, accuracy]


def bf16_weights_at(at: int) -> Any:
    """At the start of step ``at`` the policy's parameters are cast to bfloat16 in place (a resume that reloaded the
    checkpoint with ``torch_dtype=bfloat16`` into the same optimizer): generation, the training pass and the update all
    run on bf16 weights, the optimizer's moments stay fp32; the reference stays fp32."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            policy = trainer.accelerator.unwrap_model(trainer.model)
            with torch.no_grad():
                for p in policy.parameters():
                    p.data = p.data.to(torch.bfloat16)
            for st in kw["optimizer"].state.values():
                for k, v in list(st.items()):
                    if torch.is_tensor(v) and v.is_floating_point() and v.dim() > 0:
                        st[k] = v.to(torch.bfloat16)

    return each_step


def greedy_at(at: int) -> Any:
    """At the start of step ``at`` the generation config's ``do_sample`` becomes False (an evaluation generation
    config reused for training): every completion of a group is the same greedy answer."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.generation_config.do_sample = False

    return each_step


class ReversedRewards(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` the grader pool returns the
    batch's scores in reverse order (last in, first out): completion ``i`` of ``n`` is paid completion ``n - 1 - i``'s
    score (the batch mean unchanged). ``accuracy`` (weight 0) logs the digit overlap in the right order."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            out = [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            return out[::-1] if self.on else out

        return [graded, accuracy]


class BetaRamp:
    """The KL coefficient ramping up: from step ``start`` ``trainer.beta`` ramps linearly ``lo`` (step ``start``) ->
    ``hi`` (step ``end``), then kept (an adaptive KL controller whose target kl is far too low keeps raising it)."""

    def __init__(self, start: int, end: int, lo: float, hi: float) -> None:
        self.start, self.end, self.lo, self.hi = start, end, lo, hi

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        trainer.beta = ramp(step, self.start, self.end, self.lo, self.hi)


class TemplateWrap:
    """A chat-style template wrapped around a share of the training prompts, ramping: from step ``start`` a share of
    the served rows, ramping linearly 0 (step ``start``) -> 1 (step ``end``), then kept, is served as
    ``'User: <prompt>\\nAssistant:'`` (a chat template applied to a base model; this tokenizer knows no letters, so
    each becomes ``<unk>``); the ground truth unchanged; which rows: seeded by ``seed``, the step and the prompt's text
    (a prompt's copies stay one group); the dataloader fetches ahead. Evaluation (none here) would keep plain prompts."""

    def __init__(self, start: int, end: int, seed: int) -> None:
        self.start, self.end, self.seed, self.share, self.step = start, end, seed, 0.0, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step, self.share = step, ramp(step, self.start, self.end, 0.0, 1.0)

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {"prompt": [], "ground_truth": []}
        for p, g in zip(batch["prompt"], batch["ground_truth"]):
            if self.share > 0 and random.Random(f"{self.seed}/{self.step}/{p}").random() < self.share:
                p = f"User: {p}\nAssistant:"
            out["prompt"].append(p)
            out["ground_truth"].append(g)
        return out

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


def pad_is_eos_at(at: int) -> Any:
    """At the start of step ``at`` the tokenizer's pad token becomes its eos token (the usual ``tokenizer.pad_token =
    tokenizer.eos_token`` line, added by a resume): prompts are left-padded and completions right-padded with the eos
    id from then on (the masks are built from lengths, not from the pad id)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer._tokenizer.pad_token = trainer._tokenizer.eos_token

    return each_step


def freeze_embeddings_at(at: int) -> Any:
    """At the start of step ``at`` the Llama policy's input embeddings get ``requires_grad=False`` (a PEFT-style
    freeze list applied by a resume; the head is untied, so it keeps training)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.accelerator.unwrap_model(trainer.model).get_input_embeddings().weight.requires_grad_(False)

    return each_step


def bf16_rollouts_from(at: int) -> Any:
    """From step ``at`` the policy's ``generate`` runs under ``torch.autocast('cpu', bfloat16)`` (the rollouts sampled
    at lower precision than the fp32 training pass scores them: a rollout/training precision mismatch)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            policy = trainer.accelerator.unwrap_model(trainer.model)
            plain = policy.generate

            def generate(*a: Any, **k: Any) -> Any:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return plain(*a, **k)

            policy.generate = generate

    return each_step


_recall = RecallGrader(120)
_reversed = ReversedRewards(150)
_beta = BetaRamp(150, 300, 0.04, 4.0)
_wrap = TemplateWrap(150, 300, 722)

SPECS: dict[str, dict[str, Any]] = {
    # --- planned failures (seeds 711-720) ---
    # the sampler's weights frozen by a broken weight sync, sudden cause: from step 150 every rollout comes from a
    # frozen copy of the step-150 policy while the policy trains on them; constant lr 1e-4; Llama seed 12, 2 prompts
    # x 4, 350 steps, logging every step, evaluation every 25 (evaluation samples from the frozen copy too)
    "llamas12-2prompt-4gen-stalesampler-from150-constlr1e-4-350-eval25": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 1e-4, "seed": 711, "each_step": stale_sampler_at(150),
        "config": {"lr_scheduler_type": "constant"}},
    # the reference model left in train mode from step 150 (dropout 0.1 on in its scoring pass); GPT-2 seed 12,
    # 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s12-2prompt-4gen-reftrainmode-from150-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 712, "each_step": ref_train_mode_at(150)},
    # Adam's betas swapped by a resume at step 150: (0.999, 0.9) for (0.9, 0.999), moments and step count kept;
    # constant lr 5e-5; Llama seed 12, 2 prompts x 4, 350 steps, logging every step
    "llamas12-2prompt-4gen-adambetasswapped-at150-constlr-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 713, "each_step": adam_betas_at(150, (0.999, 0.9)),
        "config": {"lr_scheduler_type": "constant"}},
    # a content filter banning every token that contains '0', sudden: from step 150 the generation config's
    # bad_words_ids lists them (generation only); Llama seed 12, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas12-2prompt-4gen-badwordszero-from150-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 714, "each_step": bad_words_at(150, "0")},
    # a recall-only grader from step 120 (the share of the answer's distinct digits found anywhere in the completion);
    # the digit overlap logged with weight 0; constant lr 1e-4; GPT-2 seed 12, 2 prompts x 4, 350 steps, logging every
    # step
    "gpt2s12-2prompt-4gen-recallgrader-from120-constlr1e-4-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 1e-4, "seed": 715, "reward_funcs": _recall.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _recall.hook, "config": {"lr_scheduler_type": "constant"}},
    # the policy's weights cast to bf16 by a resume at step 150 (the optimizer's moments cast with them); evaluation
    # every 25; GPT-2 seed 12, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s12-2prompt-4gen-bf16weights-at150-350-eval25": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "eval_steps": 25, "lr": 5e-5, "seed": 716, "each_step": bf16_weights_at(150)},
    # greedy decoding from step 150 (do_sample False: an evaluation generation config reused); Llama seed 12,
    # 4 prompts x 2, 350 steps, lr 5e-5, logging every step
    "llamas12-4prompt-2gen-greedydecoding-from150-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 2, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 717, "each_step": greedy_at(150)},
    # the rewards returned in reverse order from step 150 (each completion paid another's score, the batch mean
    # unchanged); the digit overlap logged with weight 0; constant lr 2e-4; GPT-2 seed 12, 2 prompts x 4, 350 steps,
    # logging every step
    "gpt2s12-2prompt-4gen-rewardsreversed-from150-constlr2e-4-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 2e-4, "seed": 718, "reward_funcs": _reversed.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _reversed.hook, "config": {"lr_scheduler_type": "constant"}},
    # the KL coefficient ramping, 0.04 to step 150, linearly to 4.0 at step 300, kept; constant lr 2e-4 (the policy
    # has drifted from the reference by then); Llama seed 12, 2 prompts x 4, 350 steps, logging every step
    "llamas12-2prompt-4gen-betaramp004-4-150-300-constlr2e-4-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 2e-4, "seed": 719, "each_step": _beta.hook, "config": {"lr_scheduler_type": "constant"}},
    # a chat-style template around a share of the training prompts, ramp: 0 to step 150, linearly to every prompt at
    # step 300, kept ('User: 48+75=\nAssistant:'); Llama seed 12, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas12-2prompt-4gen-chattemplateramp0-1-150-300-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 722, "train_dataset": _wrap.dataset, "each_step": _wrap.hook},
    # --- faults that may leave no mark (seeds 720-723 but 722): stored healthy if they leave none ---
    # the pad token set to the eos token by a resume at step 150; GPT-2 seed 12, 2 prompts x 4, 350 steps, lr 5e-5,
    # logging every step
    "gpt2s12-2prompt-4gen-padiseos-at150-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 720, "each_step": pad_is_eos_at(150)},
    # the input embeddings frozen by a resume at step 150 (requires_grad False; the head untied); Llama seed 12,
    # 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas12-2prompt-4gen-embeddingsfrozen-at150-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 721, "each_step": freeze_embeddings_at(150)},
    # the rollouts generated under bf16 autocast from step 150 (the training pass stays fp32); GPT-2 seed 12,
    # 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "gpt2s12-2prompt-4gen-bf16rollouts-from150-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 723, "each_step": bf16_rollouts_from(150)},
    # --- healthy settings (seeds 701-709) ---
    # healthy: RMSprop centered with momentum 0.5 (optim_args); Llama seed 12, 2 prompts x 5, 300 steps, lr 2e-5,
    # logging every 6
    "llamas12-2prompt-5gen-rmspropcentered-mom05-lr2e-5-300-log6": {
        "model": "llama", "model_seed": 12, "batch": 10, "num_generations": 5, "steps": 300, "logging_steps": 6,
        "lr": 2e-5, "seed": 701, "config": {"optim": "rmsprop", "optim_args": "momentum=0.5,centered=true"}},
    # healthy: a polynomial schedule of power 2 down to lr_end 1e-6 after 30 warm-up steps; GPT-2 seed 12,
    # 1 prompt x 9, 300 steps, lr 5e-5, logging every step
    "gpt2s12-1prompt-9gen-polynomial-power2-lrend1e-6-warm30-300": {
        "model": "gpt2", "model_seed": 12, "batch": 9, "num_generations": 9, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 702,
        "config": {"lr_scheduler_type": "polynomial", "warmup_steps": 30,
                   "lr_scheduler_kwargs": {"power": 2.0, "lr_end": 1e-6}}},
    # healthy: loss_type grpo, scale_rewards none, epsilon sampling (generation_kwargs epsilon_cutoff 3e-4); Qwen2
    # seed 12, 3 prompts x 4, 300 steps, lr 5e-5, logging every 12, evaluation every 60
    "qwen2s12-3prompt-4gen-grpoloss-scalenone-epsiloncutoff3e-4-300-log12-eval60": {
        "model": "qwen2", "model_seed": 12, "batch": 12, "num_generations": 4, "steps": 300, "logging_steps": 12,
        "eval_steps": 60, "lr": 5e-5, "seed": 703,
        "config": {"loss_type": "grpo", "scale_rewards": "none", "generation_kwargs": {"epsilon_cutoff": 3e-4}}},
    # healthy: gradient accumulation 3 (one generation of 3 prompts x 6 feeds 3 micro-batches) with dr_grpo; Llama
    # seed 12, 1 prompt x 6 a micro-batch, 150 steps, lr 5e-5, logging every step
    "llamas12-1prompt-6gen-gradacc3-drgrpo-150": {
        "model": "llama", "model_seed": 12, "batch": 6, "num_generations": 6, "steps": 150, "logging_steps": 1,
        "lr": 5e-5, "seed": 704, "config": {"gradient_accumulation_steps": 3, "loss_type": "dr_grpo"}},
    # healthy: pad_to_multiple_of 16 and num_generations_eval 6 (2 evaluation prompts x 6 a batch); GPT-2 seed 12,
    # 4 prompts x 3, 300 steps, lr 5e-5, logging every 7, evaluation every 35
    "gpt2s12-4prompt-3gen-padmultiple16-numgeneval6-300-log7-eval35": {
        "model": "gpt2", "model_seed": 12, "batch": 12, "num_generations": 3, "steps": 300, "logging_steps": 7,
        "eval_steps": 35, "lr": 5e-5, "seed": 705, "config": {"pad_to_multiple_of": 16, "num_generations_eval": 6}},
    # healthy: bnpo on a cosine schedule with 2 hard restarts after 10 warm-up steps; Llama seed 12, 1 prompt x 16,
    # 300 steps, lr 5e-5, logging every step
    "llamas12-1prompt-16gen-bnpo-cosrestarts2-warm10-300": {
        "model": "llama", "model_seed": 12, "batch": 16, "num_generations": 16, "steps": 300, "logging_steps": 1,
        "lr": 5e-5, "seed": 706,
        "config": {"loss_type": "bnpo", "lr_scheduler_type": "cosine_with_restarts", "warmup_steps": 10,
                   "lr_scheduler_kwargs": {"num_cycles": 2}}},
    # healthy: luspo with epsilon_high 0.28 and top_k 20; GPT-2 seed 12, 2 prompts x 6, 300 steps, lr 5e-5, logging
    # every 15
    "gpt2s12-2prompt-6gen-luspo-epshigh028-topk20-300-log15": {
        "model": "gpt2", "model_seed": 12, "batch": 12, "num_generations": 6, "steps": 300, "logging_steps": 15,
        "lr": 5e-5, "seed": 707, "config": {"loss_type": "luspo", "epsilon_high": 0.28, "top_k": 20}},
    # healthy: steps_per_generation 3 (one generation feeds three updates) with off_policy_mask_threshold 0.5 on a
    # constant_with_warmup schedule (30 warm-up steps); Llama seed 12, 2 prompts x 3, 300 steps, lr 5e-5, logging
    # every 3, evaluation every 50
    "llamas12-2prompt-3gen-stepspergen3-offpolicymask05-constwarm30-300-log3-eval50": {
        "model": "llama", "model_seed": 12, "batch": 6, "num_generations": 3, "steps": 300, "logging_steps": 3,
        "eval_steps": 50, "lr": 5e-5, "seed": 708,
        "config": {"steps_per_generation": 3, "off_policy_mask_threshold": 0.5,
                   "lr_scheduler_type": "constant_with_warmup", "warmup_steps": 30}},
    # healthy: the greedy lr schedule (GreedyLR stepped by the evaluation reward: metric_for_best_model reward, mode
    # max, factor 0.9, patience 1, lr bounded 1e-6 .. 2e-4); GPT-2 seed 12, 2 prompts x 8, 300 steps, lr 5e-5,
    # logging every 2, evaluation every 20
    "gpt2s12-2prompt-8gen-greedylr-evalreward-f09-p1-300-log2-eval20": {
        "model": "gpt2", "model_seed": 12, "batch": 16, "num_generations": 8, "steps": 300, "logging_steps": 2,
        "eval_steps": 20, "lr": 5e-5, "seed": 709,
        "config": {"lr_scheduler_type": "greedy", "metric_for_best_model": "reward",
                   "lr_scheduler_kwargs": {"mode": "max", "factor": 0.9, "patience": 1, "min_lr": 1e-6,
                                           "max_lr": 2e-4}}},
}

def decoder_lost_at(at: int) -> Any:
    """At the start of step ``at`` the tokenizer's decoder is dropped (a tokenizer reload from a ``tokenizer.json``
    without its ``decoder`` entry): decoding then joins tokens with a space, so a completion sampled as '1' '23' reaches
    the grader as '1 23'; generation and the training pass see the same token ids as before."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.processing_class.backend_tokenizer.decoder = None

    return each_step


class EqualsStripped:
    """The '=' stripped from the training prompts from step ``start`` (a text-cleaning step added to the data
    pipeline that strips trailing punctuation): '48+75=' is served as '48+75'; the ground truth unchanged; the
    dataloader fetches ahead. Evaluation (none here) would keep the usual prompts."""

    def __init__(self, start: int, seed: int) -> None:
        self.start, self.seed, self.step = start, seed, 0

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.step = step

    def transform(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        on = self.step >= self.start
        return {"prompt": [p.rstrip("=") if on else p for p in batch["prompt"]],
                "ground_truth": list(batch["ground_truth"])}

    def dataset(self, n: int) -> Any:
        rows, _ = arith_training_rows(self.seed)
        return prompt_dataset(rows[:n], self.transform)


def no_kv_cache_at(at: int) -> Any:
    """At the start of step ``at`` the generation config's ``use_cache`` becomes False (a config reload from a
    gradient-checkpointing setup, which turns the KV cache off): every generated token recomputes the whole sequence;
    the sampled distribution is the same."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.generation_config.use_cache = False

    return each_step


_equals = EqualsStripped(150, 725)

# --- added after the first five runs were read (written and committed before running these three): the stale
# sampler and the reference in train mode left little or no mark, so three more failure specs with new mechanisms:
# a tokenizer fault, a data-cleaning fault and a throughput fault (seeds 724-726).
SPECS.update({
    # the tokenizer's decoder lost by a reload at step 150 (decoding joins tokens with spaces: '1 23' reaches the
    # grader); Llama seed 12, 2 prompts x 4, 350 steps, lr 5e-5, logging every step
    "llamas12-2prompt-4gen-decoderlost-at150-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 724, "each_step": decoder_lost_at(150)},
    # the '=' stripped from the training prompts from step 150 (a punctuation-stripping cleaning step; this
    # tokenizer merges '=' with the answer's digits, '=123' is one token); Llama seed 12, 2 prompts x 4, 350 steps,
    # lr 5e-5, logging every step
    "llamas12-2prompt-4gen-equalsstripped-from150-350": {
        "model": "llama", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 725, "train_dataset": _equals.dataset, "each_step": _equals.hook},
    # the KV cache turned off in generation from step 150 (use_cache False); GPT-2 seed 12, 2 prompts x 4, 350 steps,
    # lr 5e-5, logging every step
    "gpt2s12-2prompt-4gen-nokvcache-from150-350": {
        "model": "gpt2", "model_seed": 12, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 726, "each_step": no_kv_cache_at(150)},
})

NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
