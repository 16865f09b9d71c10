"""Ninth pass of real TRL ``GRPOTrainer`` CPU runs (source ``trl_cpu_settings6``): settings and failure mechanisms
none of the earlier TRL CPU sources (``trl_cpu_settings`` .. ``trl_cpu_settings5``) has, made as a held-out source
(nothing was tuned on it, no detector ran on it).

Settings: ``loss_type`` **``grpo``** with **``scale_rewards="batch"``**, top-p 0.95 with **``min_p``** 0.05; GSPO
(**``importance_sampling_level="sequence"``**) with ``num_iterations=2`` and two-sided clipping (**``delta``**);
**``steps_per_generation=4``** (one generation of 8 prompts reused over 4 optimizer steps) with **``beta=0.1``** and
**``top_entropy_quantile=0.2``**; **``loss_type="cispo"``** with ``disable_dropout`` and completions cut at **3
tokens** (truncation from the first step), logging every 4; models built from **model seed 2**; seeds 131-139.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
paid reward switched to **group self-consistency** (the share of the prompt's completions giving the same answer: a
majority-vote reward with no ground truth) while the task's accuracy is logged beside it with weight 0, a "judge"
reward drifting towards one fixed answer, a brevity bonus that ramps up, the learning rate ramping to 30x under
``beta=0.1``, the stop token lost while each generation is reused over 4 steps, a reward outlier on one completion
under ``scale_rewards="none"`` (gradient spikes). Each run goes through
:func:`real_cpu_trl.run`; its ``trainer_state.json`` is stored under
``bench/detection_corpus/real/trl_cpu_settings6/<name>/`` and labelled by reading it (README, ninth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trl6.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trl6.py NAME ...   # only these specs
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trl import main
from real_cpu_trl4 import lr_ramp
from real_cpu_trl5 import LengthRamp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "trl_cpu_settings6"


class JudgeRamp(LengthRamp):
    """A judge drifting from the task: ``(1 - w)`` x the task's digit overlap + ``w`` x the digit overlap with the
    fixed answer ``"199"``, ``w`` ramping from 0 at ``start`` to ``hi`` at ``end`` (accuracy logged with weight 0)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        super().__init__(start, end, hi)
        self.__name__ = "judge_ramp"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        fixed = digit_overlap(data_source, solution_str, "199")
        return (1 - self.weight) * digit_overlap(data_source, solution_str, ground_truth) + self.weight * fixed


class BrevityRamp(LengthRamp):
    """A brevity bonus that builds up: the task's digit overlap + ``w`` x (1 - min(1, characters / 4)), ``w``
    ramping from 0 at ``start`` to ``hi`` at ``end``: the empty completion (stop token alone) earns it all."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        super().__init__(start, end, hi)
        self.__name__ = "brevity_ramp"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        return digit_overlap(data_source, solution_str, ground_truth) + self.weight * (
            1.0 - min(1.0, len(solution_str.strip()) / 4))


def agreement(prompts: list[Any], completions: list[str], **kw: Any) -> list[float]:
    """Group self-consistency: each completion earns the share of its prompt's completions giving the same
    (stripped) answer, with no ground truth (a majority-vote reward that pays the policy for agreeing with itself)."""
    counts = Counter((str(p), c.strip()) for p, c in zip(prompts, completions))
    groups = Counter(str(p) for p in prompts)
    return [counts[(str(p), c.strip())] / groups[str(p)] for p, c in zip(prompts, completions)]


def digit_agreement(prompts: list[Any], completions: list[str], **kw: Any) -> list[float]:
    """Self-consistency digit by digit: each completion earns the mean, over its characters, of the share of its
    prompt's completions with the same character at that position (an empty completion earns 0); no ground truth."""
    answers = [c.strip() for c in completions]
    groups: dict[str, list[str]] = {}
    for p, a in zip(prompts, answers):
        groups.setdefault(str(p), []).append(a)

    def score(p: Any, a: str) -> float:
        group = groups[str(p)]
        if not a:
            return 0.0
        return sum(sum(1 for b in group if i < len(b) and b[i] == ch) / len(group) for i, ch in enumerate(a)) / len(a)

    return [score(p, a) for p, a in zip(prompts, answers)]


def reward_swapped_at(step: int, fn: Any) -> Any:
    """From ``step`` the paid reward function (``rewards/train_reward``: TRL keeps the name it logged at init) is
    ``fn``, a batch-level function that sees every completion of the step (the runner's switch is per completion)."""

    def each_step(trainer: Any, args: Any, step_: int, kw: Any) -> None:
        if step_ == step:
            trainer.reward_funcs[0] = fn

    return each_step


def majority_vote_from(step: int) -> Any:
    """From ``step`` the paid reward is :func:`agreement`."""
    return reward_swapped_at(step, agreement)


def eos_lost_at(step: int) -> Any:
    """From ``step`` no token stops a completion (``eos_token_ids`` and the generation config point at an id no
    token has), so completions run to ``max_completion_length``."""

    def each_step(trainer: Any, args: Any, step_: int, kw: Any) -> None:
        if step_ == step:
            trainer.eos_token_ids = [-7]
            trainer.generation_config.eos_token_id = -7

    return each_step


class OutlierReward:
    """The task's digit overlap, except that on each of ``steps`` the first completion scored gets ``value`` (a
    reward-model outlier on one sample: a parsing bug, a judge's runaway logit)."""

    def __init__(self, steps: tuple[int, ...], value: float) -> None:
        self.steps, self.value, self.armed = steps, value, False
        self.__name__ = "outlier_reward"

    def __call__(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        if self.armed:
            self.armed = False
            return self.value
        return digit_overlap(data_source, solution_str, ground_truth)

    def each_step(self, trainer: Any, args: Any, step: int, kw: Any) -> None:
        self.armed = step in self.steps


_JUDGE = JudgeRamp(140, 290, 0.8)
_OUTLIER = OutlierReward((212, 219), 200.0)
_BREVITY = BrevityRamp(170, 290, 1.5)

SPECS: dict[str, dict[str, Any]] = {
    # healthy: loss_type grpo with scale_rewards "batch", top-p 0.95 and min-p 0.05; GPT-2 seed 2, 2 prompts x 4,
    # 500 steps, logging every step
    "gpt2s2-2prompt-4gen-grpoloss-batchscale-topp095-minp005-500": {
        "model": "gpt2", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 500, "logging_steps": 1,
        "lr": 5e-5, "seed": 131, "config": {"loss_type": "grpo", "scale_rewards": "batch", "top_p": 0.95,
                                             "min_p": 0.05}},
    # healthy: GSPO (importance_sampling_level sequence, loss_type grpo) with num_iterations 2 and two-sided
    # clipping delta 1.5; Llama seed 2, 1 prompt x 6, 400 steps, logging every 2
    "llamas2-1prompt-6gen-gspo-iter2-delta15-400-log2": {
        "model": "llama", "model_seed": 2, "batch": 6, "num_generations": 6, "steps": 400, "logging_steps": 2,
        "lr": 5e-5, "seed": 132, "config": {"importance_sampling_level": "sequence", "loss_type": "grpo",
                                             "num_iterations": 2, "delta": 1.5}},
    # healthy: steps_per_generation 4 (one generation of 8 prompts x 4 reused over 4 optimizer steps of 2 prompts),
    # beta 0.1, top_entropy_quantile 0.2 (only the top-20% entropy tokens train); Qwen2 seed 2, 400 steps, logging
    # every step, evaluation on 16 prompts every 50
    "qwen2s2-2prompt-4gen-stepsper4-beta01-topent02-400": {
        "model": "qwen2", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "eval_steps": 50, "lr": 5e-5, "seed": 133, "config": {"steps_per_generation": 4, "beta": 0.1,
                                                               "top_entropy_quantile": 0.2}},
    # healthy (a hard one): loss_type cispo, disable_dropout, completions cut at 3 tokens (truncated from the first
    # step: a setting, not a change); GPT-2 seed 2, 1 prompt x 8, 400 steps, logging every 4
    # (after the run: 3 tokens hold most answers with their stop token, clipped <= 6%; see the README)
    "gpt2s2-1prompt-8gen-maxlen3-nodropout-cispo-400-log4": {
        "model": "gpt2", "model_seed": 2, "batch": 8, "num_generations": 8, "steps": 400, "logging_steps": 4,
        "lr": 5e-5, "seed": 134, "max_len": 3, "config": {"loss_type": "cispo", "disable_dropout": True}},
    # entropy collapse from a self-consistency reward (sudden switch, the symptom builds up): from step 160 the paid
    # reward is the share of the prompt's completions that agree with each completion (no ground truth); the task's
    # accuracy logged beside it with weight 0 (rewards/accuracy); lr 1e-4; Llama seed 2, 2 prompts x 6, 400 steps,
    # logging every step
    "llamas2-2prompt-6gen-majorityvote160-lr1e-4-400": {
        "model": "llama", "model_seed": 2, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 1e-4, "seed": 135, "reward_switch_at": 160, "reward_switch_to": digit_overlap,
        "each_step": majority_vote_from(160)},
    # slow reward hacking against a judge: from step 140 the paid reward is (1 - w) x the task's digit overlap +
    # w x the overlap with the fixed answer "199", w ramping 0 -> 0.8 at step 290 (then stays); accuracy logged
    # beside it with weight 0; lr 3e-4; Qwen2 seed 2, 1 prompt x 8, 450 steps, logging every step, evaluation every 25
    "qwen2s2-1prompt-8gen-judge199ramp-lr3e-4-450": {
        "model": "qwen2", "model_seed": 2, "batch": 8, "num_generations": 8, "steps": 450, "logging_steps": 1,
        "eval_steps": 25, "lr": 3e-4, "seed": 136, "reward_switch_at": 140, "reward_switch_to": _JUDGE,
        "each_step": _JUDGE.each_step},
    # slow collapse towards the bare stop token: from step 170 the paid reward is the task's digit overlap + a
    # brevity bonus w x (1 - min(1, characters / 4)), w ramping 0 -> 1.5 at step 290; accuracy beside it with
    # weight 0; lr 2e-4; GPT-2 seed 2, 2 prompts x 4, 400 steps, logging every 2
    "gpt2s2-2prompt-4gen-brevityramp-lr2e-4-400-log2": {
        "model": "gpt2", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 2,
        "lr": 2e-4, "seed": 137, "reward_switch_at": 170, "reward_switch_to": _BREVITY,
        "each_step": _BREVITY.each_step},
    # slow collapse / KL blow-up under a KL penalty: beta 0.1, the learning rate ramping linearly from 1x at step 210
    # to 30x at step 330 (then stays, on TRL's linear decay); Llama seed 2, 2 prompts x 4, 400 steps, logging every
    # step
    "llamas2-2prompt-4gen-beta01-lrramp30-400": {
        "model": "llama", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 138, "each_step": lr_ramp(210, 330, 30.0), "config": {"beta": 0.1}},
    # sudden length explosion under reused generations: steps_per_generation 4, the stop token lost from step 175
    # (the first generation after it is the one for step 177); completions up to 16 tokens; Qwen2 seed 2,
    # 2 prompts x 4 a step, 350 steps, logging every step
    "qwen2s2-2prompt-4gen-stepsper4-eoslost175-len16-350": {
        "model": "qwen2", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 350, "logging_steps": 1,
        "lr": 5e-5, "seed": 139, "max_len": 16, "each_step": eos_lost_at(175),
        "config": {"steps_per_generation": 4}},
    # added after the first nine ran (written before running it): the whole-answer vote above gave no signal (six
    # 3-token answers almost never agree: the paid reward sat at 1/6) and the entropy only drifted; from step 160
    # the paid reward is self-consistency digit by digit (digit_agreement), accuracy beside it with weight 0;
    # lr 3e-4; Llama seed 2, 2 prompts x 6, 400 steps, logging every step
    "llamas2-2prompt-6gen-digitvote160-lr3e-4-400": {
        "model": "llama", "model_seed": 2, "batch": 12, "num_generations": 6, "steps": 400, "logging_steps": 1,
        "lr": 3e-4, "seed": 141, "reward_switch_at": 160, "reward_switch_to": digit_overlap,
        "each_step": reward_swapped_at(160, digit_agreement)},
    # added after the first nine ran (written before running it): the 30x ramp above raised the kl 3-5x for 80
    # steps and nothing else; the learning rate ramping linearly from 1x at step 210 to 100x at step 330 (then
    # stays, on TRL's linear decay), beta 0.1; Llama seed 2, 2 prompts x 4, 400 steps, logging every step
    "llamas2-2prompt-4gen-beta01-lrramp100-400": {
        "model": "llama", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 140, "each_step": lr_ramp(210, 330, 100.0), "config": {"beta": 0.1}},
    # added after the second batch (written before running it): sudden gradient spikes from a reward outlier on ONE
    # completion: at steps 212 and 219 the first completion scored gets reward 200 (the other 7 their digit
    # overlap); loss_type grpo with scale_rewards "none" (no std to absorb it); max_grad_norm 1.0 stays; the
    # accuracy logged beside the paid reward with weight 0; GPT-2 seed 2, 2 prompts x 4, 400 steps, logging every step
    "gpt2s2-2prompt-4gen-grpoloss-noscale-outlier200-400": {
        "model": "gpt2", "model_seed": 2, "batch": 8, "num_generations": 4, "steps": 400, "logging_steps": 1,
        "lr": 5e-5, "seed": 143, "reward_switch_at": 1, "reward_switch_to": _OUTLIER, "each_step": _OUTLIER.each_step,
        "config": {"loss_type": "grpo", "scale_rewards": "none"}},
}


# run once and not stored: the failure its spec meant did not come (README, ninth pass)
NOT_STORED = ("llamas2-2prompt-6gen-majorityvote160-lr1e-4-400", "llamas2-2prompt-4gen-beta01-lrramp30-400")


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
