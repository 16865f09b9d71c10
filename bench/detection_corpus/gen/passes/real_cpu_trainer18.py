"""Twenty-third pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu18``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu17``) has in
this shape, made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: an **asymmetric clip (0.1 / 0.3) over two PPO epochs of two mini-batches**; the **one-digit task**
(``data.builtin.digits=1``: 50 distinct training pairs); the **KL loss's plain k1 estimator** at weight 0.05 on Qwen2;
the **KL penalty in the reward under the abs estimator**; **training rollouts at temperature 1.2** on a 600-step
one-prompt run; **GAE with lambda 0.9, gamma 0.99 and two critic epochs**; **optimal token baselines without the zero
tail**; a **300-prompt training set cycled for three epochs**; a constant-lr 1e-4 matched control; validation every
**16 / 19 / 22 / 26 / 27 / 29 / 30 / 31 / 33 / 37**; models built from **model seed 14** (another tokenizer sample,
init and warm-up than every earlier CPU run); seeds 1001-1020 (1019-1020: specs added after the first runs were read,
each committed before it ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): **DAPO's
overlong ``penalty_factor`` typed -1** at a resume (with a 2-token buffer the sign flip punishes every response
shorter than 6 tokens: a length bonus); an **entropy-bonus ramp whose sign was typed negative** (0 -> -0.1 over
120-270: an entropy penalty); the **reference model's embedding rows shifted by one** at a resume under a KL loss (a
reference loaded against a vocabulary with one token added in front); the **rollout engine holding bf16 weights and
applying each sync as a bf16 delta** from a resume (updates smaller than half a bf16 step are lost: the engine falls
behind the actor; the engine's log-probs reported); a **learned grader that pays familiarity** (a judge refit on the
policy's own outputs: the paid score mixes the digit overlap with how often the exact response was seen before, the
mix ramping 0 -> 80% over 120-270); a **new special token's embedding row initialised at std 1.0** at a resume (a
vocabulary resize whose new row is drawn 50x too wide; GPT-2's head is tied to it); the **optimizer's updates lost**
from a resume (the weights reloaded from a stale offload buffer before every step: the policy no longer changes); two
faults that may leave no mark: the **training files pointing at the validation split** from a resume (train on test)
and **``clip_ratio_high`` typed 0.0** at a resume under one on-policy epoch (the ratio is 1 where the clip is read).
Added later (committed before they ran): the **prompt template re-applied at every resume** with the response cap
shrinking by the token it adds (truncation creeping, seed 1019) and the entropy-penalty ramp again at a constant lr
1e-4 (0 -> -0.3, seed 1020).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink), **one spec per process**: the event
file is stored under ``bench/detection_corpus/real/rlcockpit_trainer_cpu18/<name>/`` and labelled by reading it
(README, twenty-third pass).

    for n in $(python -c 'import real_cpu_trainer18 as m; print(*m.SPECS)'); do
        nice python bench/detection_corpus/gen/passes/real_cpu_trainer18.py $n; done   # one process per spec
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
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

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu18"


class CfgTypo:
    """From step ``start`` (a resume whose config had a typo) the trainer config's dotted ``key`` is ``value``."""

    def __init__(self, start: int, key: str, value: Any) -> None:
        self.start, self.key, self.value = start, key, value

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            *path, last = self.key.split(".")
            node = st.cfg
            for p in path:
                node = getattr(node, p)
            assert hasattr(node, last), self.key
            setattr(node, last, self.value)


class EntropyCoefRamp:
    """From step ``start`` the actor's entropy coefficient ramps 0 (``start``) -> ``hi`` (``end``), kept (an
    entropy-bonus warm-up whose target was typed with the wrong sign: ``hi`` < 0 is an entropy penalty)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi = start, end, hi

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start:
            st.cfg.actor.entropy_coeff = ramp(step, self.start, self.end, 0.0, self.hi)


class RefEmbeddingShift:
    """At step ``start`` (a resume that loaded the reference against a vocabulary with one token added in front) the
    reference model's input embedding rows are shifted by one (token ``i`` reads row ``i - 1``)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            assert st.ref is not None and st.ref is not st.actor
            emb = st.ref.get_input_embeddings().weight
            with torch.no_grad():
                emb.copy_(torch.roll(emb.detach().clone(), 1, dims=0))


class Bf16DeltaSync:
    """From step ``start`` the rollout engine keeps its own weights in bf16 and each sync adds the actor's change
    since the last sync to them in bf16 (a delta sync into a bf16 engine): a change smaller than half a bf16 step of
    the weight is rounded away, so the engine falls behind the actor as the actor moves. The engine samples from and
    reports the log-probs of its own copy (computed in fp32 from the bf16 values)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        actor = dict(st.actor.named_parameters())
        if step == self.start:
            st.engine.sync_weights = lambda model: None
            st.engine.model = copy.deepcopy(st.actor)
            self.held = {k: p.detach().to(torch.bfloat16) for k, p in actor.items()}
        else:
            for k, p in actor.items():
                delta = (p.detach() - self.sent[k]).to(torch.bfloat16)
                self.held[k] = self.held[k] + delta  # bf16 + bf16: rounded to bf16
        self.sent = {k: p.detach().clone() for k, p in actor.items()}
        with torch.no_grad():
            for k, p in st.engine.model.named_parameters():
                p.copy_(self.held[k].float())


class FamiliarityGrader(_PaidReward):
    """A learned judge refit on the policy's own outputs: it pays how familiar a response is. Every response the
    grader sees (from step 1) is counted by its stripped text; from step ``start`` the paid score is ``(1 - w) x
    acc + w x min(1, seen / k)`` (``seen``: the count before this response), ``w`` ramping 0 (``start``) -> ``hi``
    (``end``), kept; the task's digit overlap is returned beside it as ``acc`` from step 1."""

    def __init__(self, start: int, end: int, hi: float, k: int) -> None:
        self.start, self.end, self.hi, self.k, self.step, self.seen = start, end, hi, k, 0, Counter()

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> Any:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        text = solution_str.strip()
        familiar = min(1.0, self.seen[text] / self.k)
        self.seen[text] += 1
        w = ramp(self.step, self.start, self.end, 0.0, self.hi) if self.step >= self.start else 0.0
        return {"score": (1 - w) * acc + w * familiar, "acc": acc}


class NewTokenRow:
    """At step ``start`` (a resume that resized the vocabulary for a new special token) the last row of the input
    and output embeddings is redrawn from N(0, ``std``) (the new row's init drawn far too wide; tied heads share it)."""

    def __init__(self, start: int, std: float, seed: int) -> None:
        self.start, self.std, self.seed = start, std, seed

    def before_step(self, st: Any, step: int) -> None:
        if step != self.start:
            return
        g = torch.Generator().manual_seed(self.seed)
        with torch.no_grad():
            for w in {id(m.weight): m.weight for m in (st.actor.get_input_embeddings(),
                                                         st.actor.get_output_embeddings())}.values():
                w[-1].copy_(torch.randn(w.shape[1], generator=g) * self.std)


class UpdatesLost:
    """From step ``start`` (a resume whose parameter offload reloads the weights from a stale host buffer) the
    actor's weights are put back to their values at ``start`` before every step: each step's gradient and optimizer
    update still run (the optimizer's moments move on), the policy does not change."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            self.kept = {k: v.detach().clone() for k, v in st.actor.state_dict().items()}
        elif step > self.start:
            st.actor.load_state_dict(self.kept)


class TrainOnValidation:
    """From step ``start`` (a resume whose ``data.train_files`` pointed at the validation split) the loader serves
    the validation prompts, shuffled each epoch; validation itself is unchanged (train on test)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            ld = st.loader
            ld.rows, ld.pos = list(st.val_rows), 0
            ld._order = ld._make_order()


class TemplateReapplied:
    """At every resume from step ``start`` (every ``every`` steps, ``times`` resumes) the prompt template is applied
    once more to the already-templated training prompts (its trailing '=' appended again: '12+34==' after one resume)
    and, the engine's context budget (``max_model_len``) being fixed, the response cap shrinks by the token each
    resume adds (8 -> 8 - ``times``, training and validation; the validation prompts are left as they are)."""

    def __init__(self, start: int, every: int, times: int) -> None:
        self.start, self.every, self.times = start, every, times

    def before_step(self, st: Any, step: int) -> None:
        k = (step - self.start) // self.every + 1
        if step < self.start or (step - self.start) % self.every or k > self.times:
            return
        st.loader.rows = [dataclasses.replace(r, text=r.text + "=", input_ids=[*r.input_ids, r.input_ids[-1]])
                          for r in st.loader.rows]
        st.cfg.data.max_response_length -= 1


_LOGPROBS = "actor_rollout_ref.rollout.calculate_log_probs=true"
_LR1E4 = ("actor_rollout_ref.actor.optim.lr=1e-4", *_CONST)
_A = "actor_rollout_ref.actor"

SPECS: dict[str, dict[str, Any]] = {
    # healthy: asymmetric clip 0.1 / 0.3 over 2 PPO epochs of 2 mini-batches (1 prompt each); 2 prompts x 4; Llama
    # seed 14, 300 steps, validation every 27
    "llamas14-2prompt-4sample-asymclip01-03-2epochs-2minibatch-300-val27": {
        "steps": 300, "seed": 1001, "model": "llama", "model_seed": 14, "overrides": _batch(
            2, 4, f"{_A}.clip_ratio_low=0.1", f"{_A}.clip_ratio_high=0.3", f"{_A}.ppo_epochs=2",
            f"{_A}.ppo_mini_batch_size=1", "trainer.test_freq=27")},
    # healthy: the one-digit task (data.builtin.digits=1: 50 distinct training pairs, 50 validation pairs); 2 prompts
    # x 4; GPT-2 seed 14, 300 steps, validation every 29
    "gpt2s14-2prompt-4sample-digits1-300-val29": {
        "steps": 300, "seed": 1002, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            2, 4, "data.builtin.digits=1", "trainer.test_freq=29")},
    # healthy: the KL loss's plain k1 estimator, weight 0.05; 3 prompts x 4; Qwen2 seed 14, 300 steps, validation
    # every 31
    "qwen2s14-3prompt-4sample-klloss-k1-coef005-300-val31": {
        "steps": 300, "seed": 1003, "model": "qwen2", "model_seed": 14, "overrides": _batch(
            3, 4, f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_type=kl", f"{_A}.kl_loss_coef=0.05",
            "trainer.test_freq=31")},
    # healthy: the KL penalty in the reward under the abs estimator, fixed coefficient 0.05; 2 prompts x 4; GPT-2 seed
    # 14, 300 steps, validation every 33
    "gpt2s14-2prompt-4sample-klreward-abs-coef005-300-val33": {
        "steps": 300, "seed": 1004, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            2, 4, "algorithm.use_kl_in_reward=true", "algorithm.kl_penalty=abs", "algorithm.kl_ctrl.kl_coef=0.05",
            "trainer.test_freq=33")},
    # healthy: training rollouts at temperature 1.2; 1 prompt x 5, 600 steps; Llama seed 14, validation every 37
    "llamas14-1prompt-5sample-temp12-600-val37": {
        "steps": 600, "seed": 1005, "model": "llama", "model_seed": 14, "overrides": _batch(
            1, 5, "actor_rollout_ref.rollout.temperature=1.2", "trainer.test_freq=37")},
    # healthy: PPO with a critic, GAE lambda 0.9, gamma 0.99, two critic epochs per step; 2 prompts x 4; GPT-2 seed
    # 14, 300 steps, validation every 26
    "gpt2s14-2prompt-4sample-gae-lam09-gamma099-critic2epochs-300-val26": {
        "steps": 300, "seed": 1006, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=gae", "algorithm.lam=0.9", "algorithm.gamma=0.99",
            "critic.ppo_epochs=2", "trainer.test_freq=26")},
    # healthy: optimal token baselines without the zero-tail handling; 2 prompts x 4; Llama seed 14, 300 steps,
    # validation every 19
    "llamas14-2prompt-4sample-otb-nozerotail-300-val19": {
        "steps": 300, "seed": 1007, "model": "llama", "model_seed": 14, "overrides": _batch(
            2, 4, "algorithm.adv_estimator=optimal_token_baseline", "algorithm.handle_zero_tail=false",
            "trainer.test_freq=19")},
    # healthy: a 300-prompt training set (data.builtin.train_size=300) cycled for 3 epochs; 2 prompts x 4, 450 steps;
    # GPT-2 seed 14, validation every 30
    "gpt2s14-2prompt-4sample-train300rows-3epochs-450-val30": {
        "steps": 450, "seed": 1008, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            2, 4, "data.builtin.train_size=300", "trainer.test_freq=30")},
    # healthy: the matched control of the constant-lr 1e-4 GPT-2 faults below, nothing changed; 4 prompts x 3, 300
    # steps, validation every 16
    "gpt2s14-4prompt-3sample-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1009, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16")},
    # DAPO's overlong penalty_factor typed -1 at a resume, sudden cause (learned): the soft overlong punishment on
    # from step 1 (buffer 2 of the 8-token cap, logged), from step 150 its factor -1 for 1 (every response shorter than
    # 6 tokens is punished (6 - L) / 2: a length bonus); constant lr 1e-4; GPT-2 seed 14, 4 prompts x 3, 300 steps,
    # validation every 16
    "gpt2s14-4prompt-3sample-overlongfactor-neg1-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1010, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "reward.overlong_buffer.enable=true", "reward.overlong_buffer.len=2",
            "reward.overlong_buffer.log=true", "trainer.test_freq=16"),
        "driver": CfgTypo(150, "reward.overlong_buffer.penalty_factor", -1.0)},
    # entropy-bonus ramp with its sign typed negative, ramp: from step 120 the entropy coefficient 0 (120) -> -0.1
    # (270), kept (an entropy penalty); Llama seed 14, 4 prompts x 3, 300 steps, validation every 22
    "llamas14-4prompt-3sample-entcoef0-neg01-120-270-300-val22": {
        "steps": 300, "seed": 1011, "model": "llama", "model_seed": 14, "overrides": _batch(
            4, 3, "trainer.test_freq=22"), "driver": EntropyCoefRamp(120, 270, -0.1)},
    # the reference's embedding rows shifted by one at a resume, sudden: from step 150 under the KL loss (low_var_kl,
    # weight 0.05 from step 1); Llama seed 14, 4 prompts x 3, 300 steps, validation every 22
    "llamas14-4prompt-3sample-klloss-refembedshift-from150-300-val22": {
        "steps": 300, "seed": 1012, "model": "llama", "model_seed": 14, "overrides": _batch(
            4, 3, f"{_A}.use_kl_loss=true", f"{_A}.kl_loss_coef=0.05", "trainer.test_freq=22"),
        "driver": RefEmbeddingShift(150)},
    # bf16 delta sync into the rollout engine from a resume, sudden cause (grows as the actor moves): from step 150 the
    # engine holds bf16 weights and adds each sync's change in bf16; the engine's log-probs reported; Llama seed 14, 4
    # prompts x 3, 300 steps, validation every 22
    "llamas14-4prompt-3sample-bf16deltasync-from150-300-val22": {
        "steps": 300, "seed": 1013, "model": "llama", "model_seed": 14, "overrides": _batch(
            4, 3, _LOGPROBS, "trainer.test_freq=22"), "driver": Bf16DeltaSync(150)},
    # a learned grader paying familiarity, ramp: from step 120 the paid score (1 - w) x acc + w x min(1, seen / 50),
    # w 0 (120) -> 0.8 (270), kept; the task's accuracy logged beside it; constant lr 1e-4; GPT-2 seed 14, 4 prompts x
    # 3, 300 steps, validation every 16
    "gpt2s14-4prompt-3sample-familiargrader0-80pct-120-270-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1014, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": FamiliarityGrader(120, 270, 0.8, 50)},
    # a new special token's embedding row drawn at std 1.0 at a resume, sudden: at step 150 the last row of the (tied)
    # embedding redrawn from N(0, 1); constant lr 1e-4; GPT-2 seed 14, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s14-4prompt-3sample-newtokenrow-std1-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1015, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": NewTokenRow(150, 1.0, 1015)},
    # the optimizer's updates lost from a resume, sudden: from step 151 the actor's weights put back to their step-150
    # values before every step; constant lr 1e-4; GPT-2 seed 14, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s14-4prompt-3sample-updateslost-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1016, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": UpdatesLost(150)},
    # training on the validation split from a resume, sudden (may leave no mark): from step 150 the loader serves the
    # 200 validation prompts; constant lr 1e-4; GPT-2 seed 14, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s14-4prompt-3sample-trainonval-from150-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1017, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": TrainOnValidation(150)},
    # clip_ratio_high typed 0.0 at a resume, sudden (may leave no mark: one on-policy epoch, the ratio is 1): from
    # step 150; Qwen2 seed 14, 2 prompts x 4, 300 steps, validation every 16
    "qwen2s14-2prompt-4sample-cliphigh0-from150-300-val16": {
        "steps": 300, "seed": 1018, "model": "qwen2", "model_seed": 14, "overrides": _batch(
            2, 4, "trainer.test_freq=16"), "driver": CfgTypo(150, "actor_rollout_ref.actor.clip_ratio_high", 0.0)},
    # added after the first runs were read (written and committed before it ran), seed 1019: the batch had no
    # truncation fault. the prompt template re-applied at every resume, ramp in steps: from step 130, every 20 steps
    # (6 resumes, to 230) the training prompts get one more trailing '=' and the response cap shrinks by one token
    # (8 -> 2: a fixed context budget); Llama seed 14, 4 prompts x 3, 300 steps, validation every 22
    "llamas14-4prompt-3sample-templatereapplied-130-230-300-val22": {
        "steps": 300, "seed": 1019, "model": "llama", "model_seed": 14, "overrides": _batch(
            4, 3, "trainer.test_freq=22"), "driver": TemplateReapplied(130, 20, 6)},
    # added after the nineteen runs were read (written and committed before it ran), seed 1020: the entropy-penalty
    # ramp on the Llama's cosine lr left no mark. the same sign typo at a constant lr 1e-4, ramp: from step 120 the
    # entropy coefficient 0 (120) -> -0.3 (270), kept; GPT-2 seed 14, 4 prompts x 3, 300 steps, validation every 16
    "gpt2s14-4prompt-3sample-entcoef0-neg03-120-270-constlr1e-4-300-val16": {
        "steps": 300, "seed": 1020, "model": "gpt2", "model_seed": 14, "overrides": _batch(
            4, 3, *_LR1E4, "trainer.test_freq=16"), "driver": EntropyCoefRamp(120, 270, -0.3)},
}


if __name__ == "__main__":
    main(SPECS, OUT)
