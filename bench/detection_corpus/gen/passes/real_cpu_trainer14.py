"""Nineteenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu14``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu13``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **sequence-level rollout importance sampling** (``algorithm.rollout_correction.rollout_is=sequence`` on the
engine's own log-probs); **gradient accumulation over 12 micro-batches of one sample** (``ppo_micro_batch_size_per_gpu
1``); **REINFORCE++ with a discount gamma 0.9**; **gradient checkpointing with no weight decay and grad clip 5**;
**sampled validation with top-p 0.9** (temperature 1.0, 2 per prompt); the **shared-prefix scoring off**
(``actor.share_prefix=false``); a **regex grader** (the first run of digits of the response, scored by digit overlap)
as the task's reward; batch shapes **5 prompts x 4**, **4 x 3**, **4 x 4**, **3 x 5**, **2 x 7**, **2 x 6**, **3 x 6**;
responses up to **12 / 16** tokens; validation every **15 / 20 / 25 / 30**; 300-350 steps; models built from **model
seed 10** (another tokenizer sample, init and warm-up than every earlier CPU run; ``real_trainer.bpe_model_dir``, built
in code); seeds 561-579 (578-579: specs added after the first runs were read, committed before they ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): the
**rollout engine's logits rounded to fp8 (e4m3)** from a resume (a quantised serving engine: sampling and its
reported log-probs from the rounded logits, the trainer scoring in fp32) and **to bf16** (the same, a finer rounding);
a **tokenizer upgrade whose decoder puts a space between tokens** under the regex grader (the grader reads only the
answer's first token: the paid reward and the validation drop, the policy untouched) at a resume, and the same
**rolled out to a growing share of the reward workers** (0 -> 100%, validation untouched); **gradient accumulation
misconfigured at a resume** (each micro-batch's loss not divided by the number of micro-batches: the gradient summed,
x12) under the default grad clip 1.0, and (x6) with the **grad clip at 100** and a constant lr 1e-4; **training
rollouts switched to greedy** at a resume (``rollout.do_sample=false``, the validation setting leaking into training:
every group's responses identical); the **rollout engine's batching lost** at a resume (one generation call per
sample: a serving config with max_num_seqs 1); the **response mask losing the stop token** (an off-by-one: the EOS no
longer scored by the update) and the **group ids lost** (every response in one group: a batch baseline instead of
the prompt's) at a constant lr 2e-4, beside their matched healthy control; added later (seeds 578-579, committed
before they ran): the **length cap cut to 2 tokens at once** at a resume (the eighteenth pass ramped it) and the
**validation set silently replaced** by training prompts (a fault that should leave no mark).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process** (the
drivers patch module functions of the trainer for the rest of the process): the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu14/<name>/`` and labelled by reading it (README, nineteenth pass).

    for n in $(python -c 'import real_cpu_trainer14 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer14.py $n; done   # one process per spec
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
import numpy as np
import torch
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_trainer import digit_overlap

from rlcockpit.algos import ADV_ESTIMATORS
from rlcockpit.algos.advantages import compute_grpo_outcome_advantage
from rlcockpit.trainer.reward.rewards import REWARDS

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu14"

_FIRST_DIGITS = re.compile(r"\s*(\d+)")


def regex_digit_overlap(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """A regex grader: the response's first run of digits (``\\s*(\\d+)`` at its start, '' when none), scored by the
    task's digit overlap; on a response of digits only it is the digit overlap itself."""
    m = _FIRST_DIGITS.match(solution_str)
    return digit_overlap(data_source, m.group(1) if m else "", ground_truth)


if "corpus_regex_digit_overlap" not in REWARDS:
    REWARDS.register("corpus_regex_digit_overlap")(regex_digit_overlap)
_REGEX = ("reward.name=corpus_regex_digit_overlap",)  # after the corpus reward: the spec's overrides come last


class SpacedDecode:
    """From step ``start`` the text the grader reads is the new tokenizer version's decode: every token decoded on
    its own and joined with a space ("12 3" for "123": a decoder that lost its merge of byte-level pieces), for the
    share of training samples ramped ``lo`` (``start``) -> ``hi`` (``end``), kept (reward workers upgraded one by one;
    ``end == start``: all from ``start``); with ``val`` the validation's grader reads it too (the trainer's own
    decode upgraded)."""

    def __init__(self, start: int, end: int, hi: float, val: bool, seed: int) -> None:
        self.start, self.end, self.hi, self.val, self.p = start, end, hi, val, 0.0
        self.rng, self.tok = random.Random(seed), None

    def spaced(self, text: str) -> str:
        ids = self.tok(text, add_special_tokens=False)["input_ids"]
        return " ".join(self.tok.decode([i]) for i in ids)

    def before_step(self, st: Any, step: int) -> None:
        self.tok = st.tokenizer
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.p = ramp(step, self.start, self.end, 0.0, self.hi) if self.end > self.start else \
            (self.hi if step >= self.start else 0.0)
        if self.val and step >= self.start and st.val_reward.fn is not self.val_reward:
            st.val_reward.fn, st.val_reward.kwargs = self.val_reward, {}

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        if self.p > 0 and self.rng.random() < self.p:
            solution_str = self.spaced(solution_str)
        return regex_digit_overlap(data_source, solution_str, ground_truth)

    def val_reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
        return regex_digit_overlap(data_source, self.spaced(solution_str), ground_truth)


class RolloutLogitsRounded:
    """From step ``start`` (a resume onto a quantised serving engine) the rollout engine's logits are rounded to
    ``dtype`` (``float8_e4m3fn`` or ``bfloat16``) and back before sampling and before its reported log-probs
    (training rollouts and validation); the trainer's own log-probs stay fp32."""

    def __init__(self, start: int, dtype: torch.dtype) -> None:
        self.start, self.dtype, self.done = start, dtype, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.rollout.engine as eng

        dtype, lean, own = self.dtype, eng.lean_forward, eng._model_forward

        def rounded(fwd: Any) -> Any:
            if fwd is None:
                return None

            def f(*a: Any, **k: Any) -> torch.Tensor:
                out = fwd(*a, **k)
                return out.to(dtype).to(out.dtype)
            return f

        eng.lean_forward = lambda model, rows=32: rounded(lean(model, rows=rows))
        eng._model_forward = lambda model: rounded(own(model))
        self.done = True


class GradAccumSummed:
    """From step ``start`` (a resume with a changed accumulation setting) each micro-batch's loss is handed to
    ``backward`` multiplied by ``factor`` (the number of micro-batches per mini-batch): the micro-batch losses are
    summed where they should be averaged, so the gradient is ``factor`` x too large before clipping; the logged
    losses are unchanged."""

    def __init__(self, start: int, factor: float) -> None:
        self.start, self.factor, self.done = start, factor, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.update.ppo as ppo

        inner, factor = ppo._micro_step, self.factor

        def summed(*a: Any, **k: Any) -> tuple[torch.Tensor, dict[str, float]]:
            loss, m = inner(*a, **k)
            return loss * factor, m

        ppo._micro_step = summed
        self.done = True


class GreedyRollouts:
    """From step ``start`` (a resume whose rollout config took the validation's ``do_sample=false``) the training
    rollouts are greedy: every response to a prompt is the same."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.rollout.do_sample = False


class RolloutUnbatched:
    """From step ``start`` (a resume onto a serving config with max_num_seqs 1) the rollout engine generates one
    sample per call, the calls one after another (training rollouts and validation); the samples are the same
    distribution."""

    def __init__(self, start: int) -> None:
        self.start, self.done = start, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.collect as col

        inner, pad = col.generate_rows, st.tokenizer.pad_token_id

        def one_by_one(engine: Any, rows: list[Any], params: Any) -> Any:
            return col.pad_cat([inner(engine, [r], params) for r in rows], pad)

        col.generate_rows = one_by_one
        self.done = True


class EosUnmasked:
    """From step ``start`` the rollout's response mask stops one token short: 1 up to but excluding the first EOS
    (an off-by-one in the mask): the stop token is no longer scored by the update, nor counted in the response
    length."""

    def __init__(self, start: int) -> None:
        self.start, self.done = start, False

    def before_step(self, st: Any, step: int) -> None:
        if self.done or step < self.start:
            return
        import rlcockpit.trainer.rollout.engine as eng

        def short(responses: torch.Tensor, eos_ids: torch.Tensor) -> torch.Tensor:
            is_eos = torch.isin(responses, eos_ids.to(responses.device)).long()
            return (is_eos.cumsum(dim=1) == 0).long()

        eng.response_mask_from_eos = short
        self.done = True


class GroupIdsLost:
    """From step ``start`` the GRPO advantages are computed with every response's group id the same (a collation
    bug that drops the prompt uid): each response is normalised against the whole batch, not its prompt's group."""

    name = "corpus_grpo_one_group"

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        if self.name not in ADV_ESTIMATORS:
            @ADV_ESTIMATORS.register(self.name)
            def estimator(*, token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None,
                          norm_adv_by_std_in_grpo: bool = True,
                          epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
                return compute_grpo_outcome_advantage(
                    token_level_rewards=token_level_rewards, response_mask=response_mask,
                    index=np.zeros(token_level_rewards.shape[0], dtype=np.int64),
                    norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo, epsilon=epsilon)
        st.cfg.algorithm.adv_estimator = self.name


class ResponseCapCut:
    """From step ``start`` (a resume under a serving config whose max_tokens was typed as ``cap``) the generation length
    cap (``data.max_response_length``, read by sampling and validation) is ``cap`` at once, kept."""

    def __init__(self, start: int, cap: int) -> None:
        self.start, self.cap = start, cap

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.cfg.data.max_response_length = self.cap


class ValidationSetReplaced:
    """From step ``start`` (a resume whose validation file path points at the training split) the validation prompts
    are the training set's first rows (as many as before), silently: the same task and distribution, prompts the
    policy may have trained on."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            st.val_rows[:] = list(st.loader.rows[:len(st.val_rows)])


_LOGPROBS = "actor_rollout_ref.rollout.calculate_log_probs=true"
_MICRO = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: sequence-level rollout importance sampling on the engine's own log-probs; 5 prompts x 4; responses up to
    # 12 tokens; GPT-2 seed 10, 300 steps, validation every 15
    "gpt2s10-5prompt-4sample-rolloutis-seq-resp12-300-val15": {
        "steps": 300, "seed": 561, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            5, 4, _LOGPROBS, "algorithm.rollout_correction.rollout_is=sequence", "data.max_response_length=12",
            "trainer.test_freq=15")},
    # healthy: gradient accumulation over 12 micro-batches of one sample (ppo_micro_batch_size_per_gpu 1); 4 prompts x
    # 3; Llama seed 10, 300 steps, validation every 20
    "llamas10-4prompt-3sample-micro1-300-val20": {
        "steps": 300, "seed": 562, "model": "llama", "model_seed": 10, "overrides": _batch(
            4, 3, f"{_MICRO}=1", "trainer.test_freq=20")},
    # healthy: REINFORCE++ with a discount gamma 0.9 (the outcome reward discounted back over the response's tokens); 4
    # prompts x 4; responses up to 16 tokens; Qwen2 seed 10, 300 steps, validation every 25
    "qwen2s10-4prompt-4sample-reinforcepp-gamma09-resp16-300-val25": {
        "steps": 300, "seed": 563, "model": "qwen2", "model_seed": 10, "overrides": _batch(
            4, 4, "algorithm.adv_estimator=reinforce_plus_plus", "algorithm.gamma=0.9", "data.max_response_length=16",
            "trainer.test_freq=25")},
    # healthy: gradient checkpointing, AdamW weight decay 0, grad clip 5.0; 3 prompts x 5; Llama seed 10, 300 steps,
    # validation every 30
    "llamas10-3prompt-5sample-gradckpt-wd0-clip5-300-val30": {
        "steps": 300, "seed": 564, "model": "llama", "model_seed": 10, "overrides": _batch(
            3, 5, "actor_rollout_ref.model.enable_gradient_checkpointing=true",
            "actor_rollout_ref.actor.optim.weight_decay=0.0", "actor_rollout_ref.actor.grad_clip=5.0",
            "trainer.test_freq=30")},
    # healthy: sampled validation with top-p 0.9 (temperature 1.0, 2 per prompt: mean@2); the regex grader as the
    # task's reward; 4 prompts x 3; GPT-2 seed 10, 300 steps, validation every 20
    "gpt2s10-4prompt-3sample-regexgrader-valtopp09-n2-300-val20": {
        "steps": 300, "seed": 565, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, *_REGEX, "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
            "actor_rollout_ref.rollout.val_kwargs.temperature=1.0", "actor_rollout_ref.rollout.val_kwargs.top_p=0.9",
            "actor_rollout_ref.rollout.val_kwargs.n=2", "trainer.test_freq=20")},
    # healthy: shared-prefix scoring off (each row scored on its own: the same math, more FLOPs); 2 prompts x 7;
    # Qwen2 seed 10, 300 steps, validation every 25
    "qwen2s10-2prompt-7sample-shareprefixoff-300-val25": {
        "steps": 300, "seed": 566, "model": "qwen2", "model_seed": 10, "overrides": _batch(
            2, 7, "actor_rollout_ref.actor.share_prefix=false", "trainer.test_freq=25")},
    # healthy: the matched control of the constant-lr faults below, nothing changed; constant lr 2e-4; GPT-2 seed 10, 4
    # prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-constlr2e-4-350-val12": {
        "steps": 350, "seed": 567, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12")},
    # rollout logits rounded to fp8 (e4m3) at a resume, sudden: from step 150 the engine samples from, and reports the
    # log-probs of, fp8-rounded logits (training and validation); the engine's log-probs reported (metrics only, no
    # correction); GPT-2 seed 10, 5 prompts x 4, responses up to 12, 350 steps, validation every 15
    "gpt2s10-5prompt-4sample-fp8rolloutlogits-from150-resp12-350-val15": {
        "steps": 350, "seed": 568, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            5, 4, _LOGPROBS, "data.max_response_length=12", "trainer.test_freq=15"),
        "driver": RolloutLogitsRounded(150, torch.float8_e4m3fn)},
    # rollout logits rounded to bf16 at a resume, sudden: from step 150 as above with bf16; the engine's log-probs
    # reported; Llama seed 10, 4 prompts x 3, 350 steps, validation every 20
    "llamas10-4prompt-3sample-bf16rolloutlogits-from150-350-val20": {
        "steps": 350, "seed": 569, "model": "llama", "model_seed": 10, "overrides": _batch(
            4, 3, _LOGPROBS, "trainer.test_freq=20"), "driver": RolloutLogitsRounded(150, torch.bfloat16)},
    # tokenizer decode with spaces under the regex grader at a resume, sudden: from step 160 the grader (training and
    # validation) reads every response decoded token by token joined with spaces ("12 3"), so it scores the first token's
    # digits only; GPT-2 seed 10, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-regexgrader-spaceddecode-from160-350-val12": {
        "steps": 350, "seed": 570, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, *_REGEX, "trainer.test_freq=12"), "driver": SpacedDecode(160, 160, 1.0, val=True, seed=570)},
    # tokenizer decode with spaces rolled out to a growing share of the reward workers, ramp: from step 150 each
    # training sample is graded on the spaced decode with probability 0 (150) -> 100% (300), kept; validation
    # untouched; regex grader; Llama seed 10, 3 prompts x 6, 350 steps, validation every 18
    "llamas10-3prompt-6sample-regexgrader-spaceddecode0-100pct-150-300-350-val18": {
        "steps": 350, "seed": 571, "model": "llama", "model_seed": 10, "overrides": _batch(
            3, 6, *_REGEX, "trainer.test_freq=18"), "driver": SpacedDecode(150, 300, 1.0, val=False, seed=571)},
    # gradient accumulation misconfigured at a resume, sudden: 12 micro-batches of one sample; from step 150 each
    # micro-batch's loss x12 (summed, not averaged: the gradient x12 before the default clip 1.0); Llama seed 10, 4
    # prompts x 3, 350 steps, validation every 20
    "llamas10-4prompt-3sample-micro1-gradaccumsum-from150-350-val20": {
        "steps": 350, "seed": 572, "model": "llama", "model_seed": 10, "overrides": _batch(
            4, 3, f"{_MICRO}=1", "trainer.test_freq=20"), "driver": GradAccumSummed(150, 12.0)},
    # gradient accumulation misconfigured with the clip at 100, sudden: 6 micro-batches of two samples, grad clip 100,
    # constant lr 1e-4; from step 150 each micro-batch's loss x6; GPT-2 seed 10, 4 prompts x 3, 350 steps, validation
    # every 12
    "gpt2s10-4prompt-3sample-micro2-gradaccumsum-clip100-constlr1e-4-from150-350-val12": {
        "steps": 350, "seed": 573, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, f"{_MICRO}=2", "actor_rollout_ref.actor.grad_clip=100.0", "actor_rollout_ref.actor.optim.lr=1e-4",
            *_CONST, "trainer.test_freq=12"), "driver": GradAccumSummed(150, 6.0)},
    # training rollouts switched to greedy at a resume, sudden: from step 170 rollout.do_sample=false (every response
    # to a prompt the same); GPT-2 seed 10, 2 prompts x 6, 350 steps, validation every 12
    "gpt2s10-2prompt-6sample-greedyrollouts-from170-350-val12": {
        "steps": 350, "seed": 574, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            2, 6, "trainer.test_freq=12"), "driver": GreedyRollouts(170)},
    # rollout batching lost at a resume, sudden: from step 150 one generation call per sample, one after another
    # (training and validation); GPT-2 seed 10, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-rolloutunbatched-from150-350-val12": {
        "steps": 350, "seed": 575, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": RolloutUnbatched(150)},
    # response mask losing the stop token, sudden: from step 150 the mask ends before the first EOS (not scored, not
    # counted); constant lr 2e-4; GPT-2 seed 10, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-eosunmasked-from150-constlr2e-4-350-val12": {
        "steps": 350, "seed": 576, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12"),
        "driver": EosUnmasked(150)},
    # group ids lost, sudden: from step 150 GRPO normalises every response against the whole batch (one group);
    # constant lr 2e-4; GPT-2 seed 10, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-groupidslost-from150-constlr2e-4-350-val12": {
        "steps": 350, "seed": 577, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=12"),
        "driver": GroupIdsLost(150)},
    # added after the first runs were read (written and committed before they ran), seeds 578-579: a sudden
    # cut of the length cap (the eighteenth pass ramped it) and a planned fault that should leave no mark.
    # generation length cap cut at a resume, sudden: from step 180 data.max_response_length 2 (training and validation;
    # the models answer in 3 tokens, the stop token last); Llama seed 10, 4 prompts x 3, 350 steps, validation every 20
    "llamas10-4prompt-3sample-respcapcut2-from180-350-val20": {
        "steps": 350, "seed": 578, "model": "llama", "model_seed": 10, "overrides": _batch(
            4, 3, "trainer.test_freq=20"), "driver": ResponseCapCut(180, 2)},
    # validation set silently replaced by training prompts at a resume, sudden: from step 150 the 200 validation prompts
    # are the training set's first 200; GPT-2 seed 10, 4 prompts x 3, 350 steps, validation every 12
    "gpt2s10-4prompt-3sample-valsetreplaced-from150-350-val12": {
        "steps": 350, "seed": 579, "model": "gpt2", "model_seed": 10, "overrides": _batch(
            4, 3, "trainer.test_freq=12"), "driver": ValidationSetReplaced(150)},
}


# run once and not stored (README, nineteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
