"""Twenty-fourth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu19``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu18``) has in
this shape, made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: **training rollouts under top-k 8** on a 500-step one-prompt run; a **500-step one-prompt Llama at
temperature 0.9**; the **KL loss (low_var_kl, 0.01) under seq-mean-token-mean**; a **12-token response cap** on Qwen2;
**clip 0.28 symmetric over two mini-batches of one prompt**; **grad clip 0.3 with a 30-step warm-up into the cosine**;
two matched controls (GPT-2 at a constant lr 1e-4, the Llama on its cosine); validation every **13 / 17 / 18 / 20 / 21
/ 23 / 41 / 47**; models built from **model seed 15** (another tokenizer sample, init and warm-up than every earlier CPU
run); seeds 1101-1120.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
**reward server that times out (score 0) more often on longer responses**, its time-out share ramping; the
**tokenizer's EOS id changed at a resume** (a re-exported tokenizer whose ``eos_token_id`` names the digit token '0');
the **KL-loss coefficient typed x100** at a resume (0.01 -> 1.0); the **reference model swapped for the policy** at a
resume (the KL loss reads 0); **``ppo_epochs`` typed 8** at a resume; **attention dropout 0.1 left on** from a resume
(a checkpoint converted with its config's dropout); a **reward summed over the response's characters** instead of
averaged (a score scaled by the response length); **``rollout.n`` typed 1** at a resume (GRPO groups of one); a
**grader that reads the response reversed** (a right-to-left decode bug); a **gradient all-reduce adding noise**
whose size ramps (a flaky interconnect); the **response mask shifted one token right** (a padding-side change: the
first response token left out of the loss, the attention and the grader's decode, the token after the end in); and one
that may leave no mark: the **tied LM head untied at a resume with the new head left out of the optimizer** (the head
no longer trains; the KL-loss typo may leave little).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process**: the event
file is stored under ``bench/detection_corpus/real/rlcockpit_trainer_cpu19/<name>/`` and labelled by reading it
(README, twenty-fourth pass).

    for n in $(python -c 'import real_cpu_trainer19 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer19.py $n; done   # one process per spec
"""

from __future__ import annotations

import dataclasses
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
from real_cpu_trainer18 import CfgTypo
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu19"


class LengthTimeouts(_PaidReward):
    """A reward server whose latency grows with the response: from step ``start`` a call times out (caught, scored 0)
    with probability ``share x min(1, len(response) / chars)``, ``share`` ramping 0 (``start``) -> ``hi`` (``end``),
    kept (seeded by ``seed``); the task's digit overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int, end: int, hi: float, chars: int, seed: int) -> None:
        self.start, self.end, self.hi, self.chars, self.step = start, end, hi, chars, 0
        self.rng = random.Random(seed)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step < self.start:
            return {"score": acc, "acc": acc}
        share = ramp(self.step, self.start, self.end, 0.0, self.hi)
        timed_out = self.rng.random() < share * min(1.0, len(solution_str.strip()) / self.chars)
        return {"score": 0.0 if timed_out else acc, "acc": acc}


class EosIdChanged:
    """At step ``start`` (a resume that loaded a re-exported tokenizer) the engine's EOS id becomes the id of the
    token ``token``: generation stops after that token (kept in the response), the real EOS no longer stops it."""

    def __init__(self, start: int, token: str) -> None:
        self.start, self.token = start, token

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            tid = st.tokenizer.convert_tokens_to_ids(self.token)
            assert tid is not None and tid != st.tokenizer.unk_token_id, self.token
            st.engine.eos_ids = torch.tensor([tid])


class RefIsPolicy:
    """From step ``start`` (a resume whose reference path pointed at the actor's checkpoint, sharing it) the
    reference model is the live policy: its log-probs are the actor's own, the KL to it is 0."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            assert st.ref is not None and st.ref is not st.actor
            st.ref = st.actor


class AttentionDropoutOn:
    """At step ``start`` (a resume from a checkpoint converted with its config's ``attention_dropout``) the actor's
    attention dropout is ``p`` (config and every attention module): the update's forward passes drop attention
    weights, the engine samples in eval mode (the Llama's own config has 0.0)."""

    def __init__(self, start: int, p: float) -> None:
        self.start, self.p = start, p

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        assert st.actor.config.attention_dropout == 0.0
        st.actor.config.attention_dropout = self.p
        mods = [m for m in st.actor.modules() if hasattr(m, "attention_dropout")]
        assert mods
        for m in mods:
            m.attention_dropout = self.p


class LengthScaledReward(_PaidReward):
    """From step ``start`` (a per-character scorer summed where it should have been averaged) the paid score is the
    digit overlap x the response's characters / ``chars`` (the answer's length); ``acc`` logged beside it."""

    def __init__(self, start: int, chars: int) -> None:
        self.start, self.chars, self.step = start, chars, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step < self.start:
            return {"score": acc, "acc": acc}
        return {"score": acc * len(solution_str.strip()) / self.chars, "acc": acc}


class ReversedGrader(_PaidReward):
    """From step ``start`` (a grader whose decode reverses the characters: a right-to-left bug) the paid score is the
    digit overlap of the reversed response; ``acc`` (the task's) logged beside it."""

    def __init__(self, start: int) -> None:
        self.start, self.step = start, 0

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.step < self.start:
            return {"score": acc, "acc": acc}
        return {"score": digit_overlap(data_source, solution_str.strip()[::-1], ground_truth), "acc": acc}


class AllReduceNoise:
    """From step ``start`` a flaky gradient all-reduce: each parameter's gradient gets Gaussian noise whose norm is
    ``k`` x that gradient's norm, ``k`` ramping 0 (``start``) -> ``hi`` (``end``), kept (before clipping; seeded)."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.k = start, end, hi, 0.0
        self.gen = torch.Generator().manual_seed(seed)

    def _noisy(self, g: torch.Tensor) -> torch.Tensor:
        if self.k == 0.0:
            return g
        noise = torch.randn(g.shape, generator=self.gen)
        return g + noise * (self.k * g.norm() / noise.norm().clamp_min(1e-12))

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            for p in st.actor.parameters():
                if p.requires_grad:
                    p.register_hook(self._noisy)
        if step >= self.start:
            self.k = ramp(step, self.start, self.end, 0.0, self.hi)


class HeadUntied:
    """At step ``start`` (a checkpoint converter untied the LM head; the optimizer, restored, holds the old tensors)
    the actor's output head becomes its own copy of the embedding, not registered with the optimizer: the embedding
    trains on, the head stays as it was."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            head, emb = st.actor.get_output_embeddings(), st.actor.get_input_embeddings()
            assert head.weight is emb.weight
            head.weight = torch.nn.Parameter(emb.weight.detach().clone())
            st.actor.config.tie_word_embeddings = False


class ResponseMaskShifted:
    """From step ``start`` (a padding-side change in the batch builder) the rollout's response mask is shifted one
    token right: the first response token is out of the loss and the attention, the token after the end is in."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        gen = getattr(st.engine, "wrapped", st.engine).generate  # the engine's own (the wrapper forwards the patch)

        def shifted(*args: Any, **kwargs: Any) -> Any:
            out = gen(*args, **kwargs)
            m = torch.zeros_like(out.response_mask)
            m[:, 1:] = out.response_mask[:, :-1]
            return dataclasses.replace(out, response_mask=m)

        st.engine.generate = shifted


_LR1E4 = ("actor_rollout_ref.actor.optim.lr=1e-4", *_CONST)
_A = "actor_rollout_ref.actor"
_G = {"model": "gpt2", "model_seed": 15}
_L = {"model": "llama", "model_seed": 15}
_Q = {"model": "qwen2", "model_seed": 15}


def _gpt2_fault(seed: int, driver: Any, *more: str) -> dict[str, Any]:
    """A GPT-2 fault spec: 4 prompts x 3 at a constant lr 1e-4, 250 steps, validation every 18 (the control's)."""
    return {"steps": 250, "seed": seed, **_G, "overrides": _batch(4, 3, *_LR1E4, *more, "trainer.test_freq=18"),
            "driver": driver}


def _llama_fault(seed: int, driver: Any, *more: str) -> dict[str, Any]:
    """A Llama fault spec: 4 prompts x 3 on the preset's cosine lr, 250 steps, validation every 20 (the control's)."""
    return {"steps": 250, "seed": seed, **_L, "overrides": _batch(4, 3, *more, "trainer.test_freq=20"),
            "driver": driver}


SPECS: dict[str, dict[str, Any]] = {
    # healthy: training rollouts under top-k 8; 1 prompt x 6, 500 steps; GPT-2 seed 15, validation every 41
    "gpt2s15-1prompt-6sample-topk8-500-val41": {
        "steps": 500, "seed": 1101, **_G, "overrides": _batch(
            1, 6, "actor_rollout_ref.rollout.top_k=8", "trainer.test_freq=41")},
    # healthy: one prompt x 8 at temperature 0.9, 500 steps; Llama seed 15, validation every 47
    "llamas15-1prompt-8sample-temp09-500-val47": {
        "steps": 500, "seed": 1102, **_L, "overrides": _batch(
            1, 8, "actor_rollout_ref.rollout.temperature=0.9", "trainer.test_freq=47")},
    # healthy: the KL loss (low_var_kl, 0.01) under seq-mean-token-mean; 2 prompts x 3; Llama seed 15, 250 steps,
    # validation every 17
    "llamas15-2prompt-3sample-klloss001-seqmeantokenmean-250-val17": {
        "steps": 250, "seed": 1103, **_L, "overrides": _batch(
            2, 3, f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_coef=0.01", f"{_A}.loss_agg_mode=seq-mean-token-mean",
            "trainer.test_freq=17")},
    # healthy: a 12-token response cap; 2 prompts x 5; Qwen2 seed 15, 250 steps, validation every 23
    "qwen2s15-2prompt-5sample-resp12-250-val23": {
        "steps": 250, "seed": 1104, **_Q, "overrides": _batch(
            2, 5, "data.max_response_length=12", "trainer.test_freq=23")},
    # healthy: clip 0.28 both sides over two mini-batches of one prompt; 2 prompts x 4; GPT-2 seed 15, 250 steps,
    # validation every 21
    "gpt2s15-2prompt-4sample-clip028-2minibatch-250-val21": {
        "steps": 250, "seed": 1105, **_G, "overrides": [
            "data.train_batch_size=2", "actor_rollout_ref.rollout.n=4", f"{_A}.ppo_mini_batch_size=1",
            f"{_A}.clip_ratio_low=0.28", f"{_A}.clip_ratio_high=0.28", "trainer.test_freq=21"]},
    # healthy: grad clip 0.3, a 30-step linear warm-up into the cosine; 3 prompts x 4; Qwen2 seed 15, 250 steps,
    # validation every 13
    "qwen2s15-3prompt-4sample-gradclip03-warmup30-250-val13": {
        "steps": 250, "seed": 1106, **_Q, "overrides": _batch(
            3, 4, f"{_A}.grad_clip=0.3", f"{_A}.optim.lr_warmup_steps=30", "trainer.test_freq=13")},
    # healthy: the matched control of the constant-lr 1e-4 GPT-2 faults below; 4 prompts x 3, 250 steps,
    # validation every 18
    "gpt2s15-4prompt-3sample-constlr1e-4-250-val18": {
        "steps": 250, "seed": 1107, **_G, "overrides": _batch(4, 3, *_LR1E4, "trainer.test_freq=18")},
    # healthy: the matched control of the Llama faults below (the preset's cosine lr); 4 prompts x 3, 250 steps,
    # validation every 20
    "llamas15-4prompt-3sample-250-val20": {
        "steps": 250, "seed": 1108, **_L, "overrides": _batch(4, 3, "trainer.test_freq=20")},
    # reward-server time-outs that grow with the response length, ramp: from step 100 a call scores 0 with
    # probability share x min(1, chars / 4), share 0 (100) -> 0.8 (220), kept; acc logged beside it; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-lengthtimeouts0-80pct-100-220-constlr1e-4-250-val18": _gpt2_fault(
        1109, LengthTimeouts(100, 220, 0.8, 4, 1109)),
    # the tokenizer's EOS id changed at a resume, sudden: from step 125 generation stops after the token '0' (the
    # real EOS no longer stops it); Llama seed 15
    "llamas15-4prompt-3sample-eosid-to0-from125-250-val20": _llama_fault(1110, EosIdChanged(125, "0")),
    # the KL-loss coefficient typed x100 at a resume, sudden (may leave little mark): the KL loss (low_var_kl) at 0.01
    # from step 1, 1.0 from step 125; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-klloss001-coefx100-from125-constlr1e-4-250-val18": _gpt2_fault(
        1111, CfgTypo(125, f"{_A}.kl_loss_coef", 1.0), f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_coef=0.01"),
    # the reference swapped for the policy at a resume, sudden: from step 125 the reference is the live actor (KL 0)
    # under the KL loss (low_var_kl, 0.05 from step 1); Llama seed 15
    "llamas15-4prompt-3sample-klloss005-refispolicy-from125-250-val20": _llama_fault(
        1112, RefIsPolicy(125), f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_coef=0.05"),
    # ppo_epochs typed 8 at a resume, sudden: from step 125 eight passes over each step's batch; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-ppoepochs8-from125-constlr1e-4-250-val18": _gpt2_fault(
        1113, CfgTypo(125, f"{_A}.ppo_epochs", 8)),
    # attention dropout 0.1 left on from a resume, sudden: from step 125 the actor's attention dropout is 0.1
    # (rollouts in eval mode); the engine's log-probs reported; Llama seed 15
    "llamas15-4prompt-3sample-attndropout01-from125-250-val20": _llama_fault(
        1114, AttentionDropoutOn(125, 0.1), "actor_rollout_ref.rollout.calculate_log_probs=true"),
    # a reward summed over the response's characters, sudden cause (learned): from step 125 the paid score is the
    # digit overlap x chars / 3; acc logged beside it; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-lengthscaledreward-from125-constlr1e-4-250-val18": _gpt2_fault(
        1115, LengthScaledReward(125, 3)),
    # rollout.n typed 1 at a resume, sudden: from step 125 one sample per prompt (GRPO groups of one); GPT-2 seed 15
    "gpt2s15-4prompt-3sample-rolloutn1-from125-constlr1e-4-250-val18": _gpt2_fault(
        1116, CfgTypo(125, "actor_rollout_ref.rollout.n", 1)),
    # a grader reading the response reversed, sudden cause (learned): from step 125 the paid score is the digit
    # overlap of the reversed response; acc logged beside it; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-reversedgrader-from125-constlr1e-4-250-val18": _gpt2_fault(1117, ReversedGrader(125)),
    # a gradient all-reduce adding noise, ramp: from step 100 each gradient gets noise of k x its norm, k 0 (100) ->
    # 8 (220), kept; Llama seed 15
    "llamas15-4prompt-3sample-allreducenoise0-8x-100-220-250-val20": _llama_fault(
        1118, AllReduceNoise(100, 220, 8.0, 1118)),
    # the tied head untied at a resume and left out of the optimizer, sudden (may leave no mark): from step 125 the
    # head keeps its step-125 weights; GPT-2 seed 15
    "gpt2s15-4prompt-3sample-headuntied-from125-constlr1e-4-250-val18": _gpt2_fault(1119, HeadUntied(125)),
    # the response mask shifted one token right, sudden: from step 125; Llama seed 15
    "llamas15-4prompt-3sample-respmaskshift-from125-250-val20": _llama_fault(1120, ResponseMaskShifted(125)),
}


if __name__ == "__main__":
    main(SPECS, OUT)
