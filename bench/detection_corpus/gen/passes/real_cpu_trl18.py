"""Twenty-third pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings18``): settings and failure
mechanisms none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings17``) has, made as a held-out
source (nothing was tuned on it, no detector ran on it).

Settings: **``include_num_input_tokens_seen``** (``num_input_tokens_seen`` logged) on 1 prompt x 6 logging every 3;
**``eval_delay=100``** (no evaluation before step 100) with evaluation every 20 on 2 prompts x 4 logging every 2; a
**``warmup_stable_decay`` schedule with a ``1-sqrt`` decay** (20 warm-up, 100 decay steps) on 2 prompts x 5; a
**cosine schedule of a quarter cycle** (``num_cycles=0.25``: the lr ends at half its peak) on 1 prompt x 8 logging
every 4; **NEFTune** embedding noise (``neftune_noise_alpha=5``) on 2 prompts x 4; a **tight clip
``max_grad_norm=0.1``** at a constant lr 2e-4 on Qwen2, 2 prompts x 4 logging every 5; a **static KV cache in
generation** (``cache_implementation="static"``) with **AdamW's ``beta1`` 0** on 1 prompt x 10 logging every 6; a
**500-step** run of 1 prompt x 6 logging every 5 and evaluating every 125; a **500-step** run of 2 prompts x 2 logging
every 4; models built from **model seed 14**; seeds 1051-1059 (healthy), 1061-1073 (planned failures and faults that
may leave no mark).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): **a
multi-answer grader** from a step (a parser from a multiple-choice task: the completion is split on '+' and the best
piece's digit overlap is paid; the digit overlap of the whole completion logged with weight 0); **an uncapped per-digit
credit grader** from a step (every completion digit found in the answer adds 1/len(answer): repeats pay, the score is
not capped at 1); **a self-certainty bonus whose weight ramps** (a "confidence" reward, the policy's own mean token
probability of the completion, weight 0 -> 1: reward from internal feedback); **the reference log-probs misaligned by
one token** from a step (an off-by-one in the reference's gather); **a length-normalised reward** from a step (the
digit overlap divided by the completion's token count: a normalisation meant for log-probs applied to the reward);
**a repetition penalty below 1 ramping** in generation (1 -> 0.3: a config that meant 1/0.3); **the ground truth read
backwards** from a step (a little-endian parsing bug: '123' graded as '321'); **an entropy coefficient ramping to 0.5**
(a schedule in the wrong unit: 0.005 meant); **the PPO clip epsilon 0 by a config typo** under ``num_iterations=2``.
Faults that may leave no mark (stored healthy if they leave none): **a reward server answering in percent** from a
step (scores x100 under group-scaled advantages); **the tokenizer's padding side flipped to the right by a reload**.
Added after the first fourteen runs were read, in a block committed before it ran: **the reference off-by-one at beta
0.2 under a constant lr 1e-4** and **the self-certainty bonus at full weight from a step under a constant lr 2e-4**
(seeds 1072-1073).
Each run goes through :func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings18/<name>/`` and labelled by reading it (README, twenty-third pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl18.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl18.py NAME ...   # only these specs
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer4 import ramp
from real_cpu_trl import FromStep, accuracy, main
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings18"


class MultiAnswerGrader(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update reuses a parser
    from a multiple-choice task: the completion is split on '+' and the best piece's digit overlap is paid (more
    guesses, more chances). ``accuracy`` (weight 0) logs the whole completion's digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            if not self.on:
                return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            return [max(digit_overlap("arith", p, g) for p in c.split("+")) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


class PerDigitCredit(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` a grader update gives partial
    credit per digit: every digit of the completion that occurs anywhere in the answer adds ``1/len(answer)``, with no
    cap (a sum meant to be a mean over the answer's positions): '111111' pays 2.0 on '123'. ``accuracy`` (weight 0)
    logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            if not self.on:
                return [digit_overlap("arith", c, g) for c, g in zip(completions, ground_truth)]
            return [sum(d in str(g) for d in re.findall(r"\d", c)) / max(1, len(str(g)))
                    for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


class SelfCertainty:
    """A "confidence" reward (``rewards/certainty``) beside the digit overlap (``rewards/accuracy``): the policy's own
    mean token probability of the completion given the prompt (scored with the plain forward, no gradient), weighted
    by a ramp 0 (step ``start``) -> ``top`` (step ``end``), then kept; the reward weights are set on the trainer each
    step (reward from internal feedback: sharper answers pay)."""

    def __init__(self, start: int, end: int, top: float) -> None:
        self.start, self.end, self.top, self.trainer = start, end, top, None

    def hook(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        import torch

        self.trainer = trainer
        w = ramp(step, self.start, self.end, 0.0, self.top)
        trainer.reward_weights = torch.tensor([1.0, w], dtype=torch.float32, device=trainer.reward_weights.device)

    def funcs(self) -> list[Any]:
        def certainty(prompts: list[str], completion_ids: list[list[int]], **kw: Any) -> list[float]:
            import torch

            tok = self.trainer.processing_class
            policy = self.trainer.accelerator.unwrap_model(self.trainer.model)
            out = []
            with torch.no_grad():
                for p, ids in zip(prompts, completion_ids):
                    if not ids:
                        out.append(0.0)
                        continue
                    pids = tok(p, add_special_tokens=False)["input_ids"]
                    logits = policy(input_ids=torch.tensor([pids + list(ids)])).logits[0, len(pids) - 1:-1]
                    probs = logits.float().log_softmax(-1).gather(-1, torch.tensor(ids)[:, None]).exp()
                    out.append(float(probs.mean()))
            return out

        return [accuracy, certainty]


def ref_misaligned_from(at: int) -> Any:
    """From the start of step ``at`` the reference's per-token log-probs are shifted one position along the
    completion (an off-by-one in the reference's gather: token t compared with the reference's log-prob of token
    t-1; the first position gets the last's); the policy's own log-probs are unchanged."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            import torch

            plain = trainer._get_per_token_logps_and_entropies

            def shifted(model: Any, *a: Any, **k: Any) -> Any:
                logps, ent, extra = plain(model, *a, **k)
                if model is trainer.ref_model and logps is not None:
                    logps = torch.roll(logps, 1, dims=1)
                return logps, ent, extra

            trainer._get_per_token_logps_and_entropies = shifted

    return each_step


class LengthNormalised(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` it is divided by the
    completion's token count (a per-token normalisation meant for log-probs applied to the reward: a one-token answer
    keeps its whole score). ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], completion_ids: list[list[int]],
                   **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) / (max(1, len(ids)) if self.on else 1)
                    for c, g, ids in zip(completions, ground_truth, completion_ids)]

        return [graded, accuracy]


def repetition_penalty_ramp(start: int, end: int, low: float) -> Any:
    """The generation config's ``repetition_penalty`` ramps linearly 1 (step ``start``) -> ``low`` (step ``end``),
    then kept (a value below 1 favours tokens already in the prompt or the answer so far: a config that meant
    1/``low``); generation only, the training pass scores unpenalised."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        trainer.generation_config.repetition_penalty = ramp(step, start, end, 1.0, low)

    return each_step


class BackwardsTruth(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` the grader reads the ground
    truth backwards (a little-endian parsing bug: '123' graded as '321'). ``accuracy`` (weight 0) logs the digit
    overlap against the true answer beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, str(g)[::-1] if self.on else g) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


def entropy_coef_ramp(start: int, end: int, top: float) -> Any:
    """From step ``start`` an entropy bonus is on, its coefficient ramping linearly 0 -> ``top`` (step ``end``), then
    kept (a schedule in the wrong unit: 0.005 meant, 0.5 written)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step >= start:
            trainer.entropy_coef = ramp(step, start, end, 0.0, top)
            trainer._entropy_bonus_enabled = True

    return each_step


def clip_epsilon_at(at: int, eps: float) -> Any:
    """From the start of step ``at`` the PPO clip range is ``eps`` on both sides (a config typo: 0 for 0.2)."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.epsilon_low = trainer.epsilon_high = eps

    return each_step


class PercentScores(FromStep):
    """The paid reward (``rewards/graded``) is the digit overlap; from step ``start`` the reward server answers in
    percent (x100) (a units change in its API). ``accuracy`` (weight 0) logs the digit overlap beside it."""

    def funcs(self) -> list[Any]:
        def graded(completions: list[str], ground_truth: list[str], **kw: Any) -> list[float]:
            return [digit_overlap("arith", c, g) * (100.0 if self.on else 1.0) for c, g in zip(completions, ground_truth)]

        return [graded, accuracy]


def padding_right_at(at: int) -> Any:
    """At the start of step ``at`` the tokenizer's ``padding_side`` becomes 'right' (a tokenizer reloaded without its
    saved padding side): a batch's shorter prompts are padded after their last token, before generation starts."""

    def each_step(trainer: Any, args: Any, step: int, kw: Any) -> None:
        if step == at:
            trainer.processing_class.padding_side = "right"

    return each_step


_multi = MultiAnswerGrader(100)
_perdigit = PerDigitCredit(100)
_certain = SelfCertainty(100, 200, 1.0)
_lennorm = LengthNormalised(100)
_backwards = BackwardsTruth(100)
_percent = PercentScores(100)

SPECS: dict[str, dict[str, Any]] = {
    # --- planned failures (seeds 1061-1069) ---
    # a multi-answer grader from step 100 (the completion split on '+', the best piece's digit overlap paid); the
    # whole completion's digit overlap logged with weight 0; completions up to 12 tokens; constant lr 1e-4; GPT-2
    # seed 14, 2 prompts x 4, 250 steps, logging every step
    "gpt2s14-2prompt-4gen-multianswergrader-from100-maxlen12-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1061, "max_len": 12, "reward_funcs": _multi.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _multi.hook, "config": {"lr_scheduler_type": "constant"}},
    # an uncapped per-digit credit grader from step 100 (each completion digit found in the answer adds
    # 1/len(answer)); the digit overlap logged with weight 0; completions up to 12 tokens; constant lr 1e-4; Llama
    # seed 14, 2 prompts x 4, 250 steps, logging every step
    "llamas14-2prompt-4gen-perdigitcredit-uncapped-from100-maxlen12-constlr1e-4-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1062, "max_len": 12, "reward_funcs": _perdigit.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _perdigit.hook, "config": {"lr_scheduler_type": "constant"}},
    # a self-certainty bonus (the policy's mean token probability of its completion) beside the digit overlap, its
    # weight ramping 0 (step 100) -> 1 (step 200), kept; constant lr 1e-4; Llama seed 14, 2 prompts x 4, 250 steps,
    # logging every step
    "llamas14-2prompt-4gen-selfcertaintyramp0-1-100-200-constlr1e-4-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1063, "reward_funcs": _certain.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _certain.hook, "config": {"lr_scheduler_type": "constant"}},
    # the reference's per-token log-probs shifted one token from step 100 (sudden); GPT-2 seed 14, 2 prompts x 4,
    # 250 steps, lr 5e-5, logging every step
    "gpt2s14-2prompt-4gen-refmisaligned1-from100-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1064, "each_step": ref_misaligned_from(100)},
    # a length-normalised reward from step 100 (the digit overlap / the completion's token count); the digit overlap
    # logged with weight 0; constant lr 1e-4; GPT-2 seed 14, 2 prompts x 4, 250 steps, logging every step
    "gpt2s14-2prompt-4gen-lengthnormalisedreward-from100-constlr1e-4-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1065, "reward_funcs": _lennorm.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _lennorm.hook, "config": {"lr_scheduler_type": "constant"}},
    # a repetition penalty below 1 in generation, ramp: 1 to step 100, linearly to 0.3 at step 200, kept; Llama seed
    # 14, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "llamas14-2prompt-4gen-repetitionpenaltyramp1-03-100-200-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1066, "each_step": repetition_penalty_ramp(100, 200, 0.3)},
    # the ground truth read backwards by the grader from step 100 (sudden); the digit overlap against the true answer
    # logged with weight 0; Llama seed 14, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "llamas14-2prompt-4gen-backwardstruth-from100-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1067, "reward_funcs": _backwards.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _backwards.hook},
    # an entropy bonus from step 100, its coefficient ramping 0 -> 0.5 at step 200, kept; GPT-2 seed 14,
    # 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "gpt2s14-2prompt-4gen-entropycoeframp0-05-100-200-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1068, "each_step": entropy_coef_ramp(100, 200, 0.5)},
    # the PPO clip epsilon 0 from step 100 (a config typo for 0.2) under num_iterations 2; Llama seed 14,
    # 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "llamas14-2prompt-4gen-numiter2-clipeps0-from100-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1069, "each_step": clip_epsilon_at(100, 0.0), "config": {"num_iterations": 2}},
    # --- faults that may leave no mark (seeds 1070-1071): stored healthy if they leave none ---
    # a reward server answering in percent from step 100 (the paid reward x100; advantages scaled per group); the
    # digit overlap logged with weight 0; GPT-2 seed 14, 2 prompts x 4, 250 steps, lr 5e-5, logging every step
    "gpt2s14-2prompt-4gen-percentscores-from100-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1070, "reward_funcs": _percent.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _percent.hook},
    # the tokenizer's padding side flipped to the right at step 100 (a reload); Llama seed 14, 2 prompts x 4,
    # 250 steps, lr 5e-5, logging every step
    "llamas14-2prompt-4gen-paddingright-at100-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 5e-5, "seed": 1071, "each_step": padding_right_at(100)},
    # --- healthy settings (seeds 1051-1059) ---
    # healthy: include_num_input_tokens_seen (num_input_tokens_seen logged); GPT-2 seed 14, 1 prompt x 6, 200 steps,
    # lr 5e-5, logging every 3
    "gpt2s14-1prompt-6gen-tokensseen-200-log3": {
        "model": "gpt2", "model_seed": 14, "batch": 6, "num_generations": 6, "steps": 200, "logging_steps": 3,
        "lr": 5e-5, "seed": 1051, "config": {"include_num_input_tokens_seen": True}},
    # healthy: eval_delay 100 (no evaluation before step 100), evaluation every 20; Llama seed 14, 2 prompts x 4,
    # 200 steps, lr 5e-5, logging every 2
    "llamas14-2prompt-4gen-evaldelay100-eval20-200-log2": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 2,
        "eval_steps": 20, "lr": 5e-5, "seed": 1052, "config": {"eval_delay": 100}},
    # healthy: warmup_stable_decay with a 1-sqrt decay (20 warm-up, 100 decay steps); GPT-2 seed 14, 2 prompts x 5,
    # 200 steps, lr 5e-5, logging every step
    "gpt2s14-2prompt-5gen-wsd-1sqrtdecay-warm20-decay100-200": {
        "model": "gpt2", "model_seed": 14, "batch": 10, "num_generations": 5, "steps": 200, "logging_steps": 1,
        "lr": 5e-5, "seed": 1053,
        "config": {"lr_scheduler_type": "warmup_stable_decay", "warmup_steps": 20,
                   "lr_scheduler_kwargs": {"num_decay_steps": 100, "decay_type": "1-sqrt"}}},
    # healthy: a cosine schedule of a quarter cycle (num_cycles 0.25: the lr ends at half its peak, 5e-5 -> 2.5e-5);
    # Llama seed 14, 1 prompt x 8, 200 steps, logging every 4
    "llamas14-1prompt-8gen-cosinequartercycle-200-log4": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 8, "steps": 200, "logging_steps": 4,
        "lr": 5e-5, "seed": 1054, "config": {"lr_scheduler_type": "cosine", "lr_scheduler_kwargs": {"num_cycles": 0.25}}},
    # healthy: NEFTune embedding noise (neftune_noise_alpha 5); GPT-2 seed 14, 2 prompts x 4, 200 steps, lr 5e-5,
    # logging every step
    "gpt2s14-2prompt-4gen-neftune5-200": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 1,
        "lr": 5e-5, "seed": 1055, "config": {"neftune_noise_alpha": 5.0}},
    # healthy: a tight clip max_grad_norm 0.1 at a constant lr 2e-4; Qwen2 seed 14, 2 prompts x 4, 200 steps,
    # logging every 5
    "qwen2s14-2prompt-4gen-maxgradnorm01-constlr2e-4-200-log5": {
        "model": "qwen2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 200, "logging_steps": 5,
        "lr": 2e-4, "seed": 1056, "config": {"max_grad_norm": 0.1, "lr_scheduler_type": "constant"}},
    # healthy: a static KV cache in generation (cache_implementation static) with AdamW's beta1 0 (no momentum);
    # GPT-2 seed 14, 1 prompt x 10, 200 steps, lr 5e-5, logging every 6
    "gpt2s14-1prompt-10gen-staticcache-adambeta1-0-200-log6": {
        "model": "gpt2", "model_seed": 14, "batch": 10, "num_generations": 10, "steps": 200, "logging_steps": 6,
        "lr": 5e-5, "seed": 1057, "config": {"cache_implementation": "static", "adam_beta1": 0.0}},
    # healthy, long: Llama seed 14, 1 prompt x 6, 500 steps, lr 5e-5, logging every 5, evaluation every 125
    "llamas14-1prompt-6gen-500-log5-eval125": {
        "model": "llama", "model_seed": 14, "batch": 6, "num_generations": 6, "steps": 500, "logging_steps": 5,
        "eval_steps": 125, "lr": 5e-5, "seed": 1058},
    # healthy, long: GPT-2 seed 14, 2 prompts x 2, 500 steps, lr 5e-5, logging every 4
    "gpt2s14-2prompt-2gen-500-log4": {
        "model": "gpt2", "model_seed": 14, "batch": 4, "num_generations": 2, "steps": 500, "logging_steps": 4,
        "lr": 5e-5, "seed": 1059},
}

_certain_at = SelfCertainty(99, 100, 1.0)  # weight 0 to step 99, 1 from step 100

# --- added after the first fourteen runs were read (written and committed before running these two): the reference
# off-by-one moved only the kl at beta 0.04 and lr 5e-5, and the self-certainty ramp lowered the entropy only 12%, so
# the same two mechanisms harder: the reference off-by-one at beta 0.2 under a constant lr 1e-4 on Llama, and the
# self-certainty bonus at full weight from step 100 (sudden) under a constant lr 2e-4 on GPT-2 (seeds 1072-1073).
SPECS.update({
    # the reference's per-token log-probs shifted one token from step 100 (sudden), beta 0.2, constant lr 1e-4; Llama
    # seed 14, 2 prompts x 4, 250 steps, logging every step
    "llamas14-2prompt-4gen-refmisaligned1-from100-beta02-constlr1e-4-250": {
        "model": "llama", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 1e-4, "seed": 1072, "each_step": ref_misaligned_from(100),
        "config": {"beta": 0.2, "lr_scheduler_type": "constant"}},
    # a self-certainty bonus at weight 1 from step 100 (sudden) beside the digit overlap; constant lr 2e-4; GPT-2
    # seed 14, 2 prompts x 4, 250 steps, logging every step
    "gpt2s14-2prompt-4gen-selfcertainty1-from100-constlr2e-4-250": {
        "model": "gpt2", "model_seed": 14, "batch": 8, "num_generations": 4, "steps": 250, "logging_steps": 1,
        "lr": 2e-4, "seed": 1073, "reward_funcs": _certain_at.funcs(), "reward_weights": [1.0, 0.0],
        "each_step": _certain_at.hook, "config": {"lr_scheduler_type": "constant"}},
})

NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
