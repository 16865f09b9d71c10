"""Fifteenth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu10``): settings and
failure mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu9``) has,
made as a held-out source (nothing was tuned on it, no detector ran on it).

Settings: batch shapes **3 prompts x 3**, **8 prompts x 2**, **1 prompt x 16**, odd ``rollout.n`` (5, 7); 600-1000
steps; validation every **7** or **50**; **lr warm-up with cosine decay** (``lr_warmup_steps`` / ``_ratio``,
``min_lr_ratio``, ``num_cycles``); KL loss types **mse (k2)**, **abs** and **kl+ (k1, straight-through)**; entropy
bonus; response lengths **6 / 16 / 24** tokens; models built from **model seed 6** (another tokenizer sample, init and
warm-up than every earlier CPU run); seeds 301-315 (313-315: three specs added after earlier runs were read,
committed before they ran).

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run; all
start slowly, late or periodically): a **memory leak in validation only** (each validation keeps 16 MB: memory
grows in steps at the validations, flat between them); **Adam's state dropped every 25 steps** (a resume loop that
restores the weights but not the optimizer: moments and step count zeroed, so each drop gives one sign-like update);
the **reference model re-synced to the current policy every 50 steps** (the KL anchor follows the policy);
the **KL coefficient decaying to 0 over 200 steps while grad clipping is off and the lr rises**; a reward model's
**bias toward answers starting with '1' growing with the step** (learned hacking); a **data mix drifting to
carry-heavy (harder) prompts** over 200 steps (the training reward falls while the policy is fine: labelled by what
a user would want to know, README fifteenth pass); the **reward computed on truncated text** (added: the grader
sees the response's first 2 characters); a **trace flush whose cost grows quadratically** (added: a throughput ramp
that starts slowly).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu10/<name>/`` and labelled by reading it (README, fifteenth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer10.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer10.py NAME ...   # only these specs
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import CONSTANT_LR as _CONST
from real_cpu_trainer import batch_overrides as _batch
from real_cpu_trainer import main
from real_cpu_trainer4 import ramp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu10"



class ValidationOnlyLeak:
    """From step ``start`` every validation (the engine's greedy calls) keeps ``mb`` MB of written bytes in a list
    never cleared (a validation callback that stores its generations' buffers): memory grows in steps at each
    validation and stays flat between them; training steps untouched."""

    def __init__(self, start: int, mb: int) -> None:
        self.start, self.mb, self.on, self.kept, self.last = start, mb, False, [], -1
        self.step = 0

    def before_step(self, st: Any, step: int) -> None:
        self.step = step
        if step != self.start:
            return
        engine = getattr(st.engine, "_engine", st.engine)
        inner = engine.generate

        def leaky(prompts: Any, params: Any, *a: Any, **kw: Any) -> Any:
            if params.greedy and self.last != self.step:
                self.last = self.step
                self.kept.append(bytearray(b"v" * (self.mb << 20)))
            return inner(prompts, params, *a, **kw)

        engine.generate = leaky


class AdamStateDrop:
    """From step ``start``, at every ``every``-th step the actor optimizer's state (Adam's moments and step count) is
    cleared before the update (a preemption/resume loop that reloads the weights but not the optimizer)."""

    def __init__(self, start: int, every: int) -> None:
        self.start, self.every = start, every

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start and (step - self.start) % self.every == 0:
            st.actor_opt.state.clear()


class RefResync:
    """From step ``start``, every ``every`` steps the reference model's weights are overwritten by the current
    actor's (a "refresh the reference" setting applied by mistake: the KL anchor follows the policy)."""

    def __init__(self, start: int, every: int) -> None:
        self.start, self.every = start, every

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start and (step - self.start) % self.every == 0 and st.ref is not None:
            st.ref.load_state_dict(st.actor.state_dict())


class KLDecayClipOffLrRise:
    """From step ``start`` the actor's grad clip is off (1e9); over ``start``..``end`` its ``kl_loss_coef`` decays
    linearly from its value to 0 and its lr rises linearly 1x -> ``factor`` x (kept after ``end``)."""

    def __init__(self, start: int, end: int, factor: float) -> None:
        self.start, self.end, self.factor = start, end, factor
        self.coef0: float | None = None
        self.base: list[float] | None = None

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        if self.coef0 is None:
            self.coef0, self.base = st.cfg.actor.kl_loss_coef, list(st.actor_sched.base_lrs)
            st.cfg.actor.grad_clip = 1e9
        st.cfg.actor.kl_loss_coef = ramp(step, self.start, self.end, self.coef0, 0.0)
        f = ramp(step, self.start, self.end, 1.0, self.factor)
        st.actor_sched.base_lrs = [b * f for b in self.base]
        for g, b in zip(st.actor_opt.param_groups, self.base):
            g["lr"] = b * f


class LeadingOneBias:
    """The paid score is the task's digit overlap plus ``w x [the answer starts with '1']``, ``w`` ramped 0 (step
    ``start``) -> ``hi`` (step ``end``), kept after (a reward model whose bias toward a leading '1' grows as it is
    retrained on the policy's samples); accuracy returned beside it; validation keeps the task's reward."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.w = start, end, hi, 0.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.w = ramp(step, self.start, self.end, 0.0, self.hi)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        return {"score": acc + self.w * float(solution_str.strip().startswith("1")), "acc": acc}


def _carries(row: Any) -> int:
    a, b = int(row.extra_info["a"]), int(row.extra_info["b"])
    return int(a % 10 + b % 10 >= 10) + int(a + b >= 100)


class HardDrift:
    """From step ``start`` each training prompt is replaced, with probability ramped 0 (``start``) -> ``hi``
    (``end``), by a random training prompt with two carries (ones and tens): the data mix drifts to harder prompts;
    validation keeps its fixed set."""

    def __init__(self, start: int, end: int, hi: float, seed: int) -> None:
        self.start, self.end, self.hi, self.rng, self.p = start, end, hi, random.Random(seed), 0.0

    def before_step(self, st: Any, step: int) -> None:
        self.p = ramp(step, self.start, self.end, 0.0, self.hi)
        if step != self.start:
            return
        loader = st.loader
        inner = loader.next_batch
        hard = [r for r in loader.rows if _carries(r) == 2]

        def drifted(k: int | None = None) -> list[Any]:
            return [self.rng.choice(hard) if self.rng.random() < self.p else r for r in inner(k)]

        loader.next_batch = drifted


class TruncatedGrading:
    """From step ``start`` the paid score is the digit overlap of the response truncated to its first ``keep``
    characters (a reward server that cuts the decoded text, so the answer's last digit is never graded); the full
    response's accuracy is returned beside it (``reward_extra/acc/mean``); validation keeps the task's reward."""

    def __init__(self, start: int, keep: int) -> None:
        self.start, self.keep, self.on = start, keep, False

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.on = step >= self.start

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        seen = solution_str.strip()[: self.keep] if self.on else solution_str
        return {"score": digit_overlap(data_source, seen, ground_truth), "acc": acc}


class GrowingTraceFlush:
    """From step ``start`` a step-trace buffer gets ``per`` x (k - start) more float entries at step k and the whole
    buffer is serialised (``json.dumps``) every step (a profiler whose flush re-writes everything it holds): the
    extra cost grows quadratically, invisible at first and large late (a throughput ramp that starts slowly)."""

    def __init__(self, start: int, per: int) -> None:
        self.start, self.per = start, per
        self.buf: list[float] = []

    def before_step(self, st: Any, step: int) -> None:
        if step < self.start:
            return
        import json

        self.buf.extend(float(step) + i / 1000 for i in range(self.per * (step - self.start)))
        json.dumps(self.buf)


SPECS: dict[str, dict[str, Any]] = {
    # healthy: 3 prompts x 3; lr 2e-4, 30-step warm-up then cosine to 0.1x; KL loss mse (k2) coef 0.02; responses
    # up to 6 tokens; GPT-2 seed 6, 600 steps, validation every 50
    "gpt2s6-3prompt-3sample-warmup30-cos01-klmse002-resp6-600-val50": {
        "steps": 600, "seed": 301, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            3, 3, "actor_rollout_ref.actor.optim.lr=2e-4", "actor_rollout_ref.actor.optim.lr_warmup_steps=30",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "actor_rollout_ref.actor.optim.min_lr_ratio=0.1",
            "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=mse",
            "actor_rollout_ref.actor.kl_loss_coef=0.02", "data.max_response_length=6", "trainer.test_freq=50")},
    # healthy: 8 prompts x 2; lr 1e-4 with 5% warm-up and cosine to 0; responses up to 16 tokens; Llama seed 6,
    # 600 steps, validation every 50
    "llamas6-8prompt-2sample-warmup5pct-cos-resp16-600-val50": {
        "steps": 600, "seed": 302, "model": "llama", "model_seed": 6, "overrides": _batch(
            8, 2, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio=0.05",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine", "data.max_response_length=16",
            "trainer.test_freq=50")},
    # healthy: 1 prompt x 16; entropy bonus 0.005; responses up to 24 tokens; Qwen2 seed 6, 600 steps, validation
    # every 7
    "qwen2s6-1prompt-16sample-ent0005-resp24-600-val7": {
        "steps": 600, "seed": 303, "model": "qwen2", "model_seed": 6, "overrides": _batch(
            1, 16, "actor_rollout_ref.actor.entropy_coeff=0.005", "data.max_response_length=24",
            "trainer.test_freq=7")},
    # healthy: 3 prompts x 5 (odd n); KL loss abs coef 0.05; GPT-2 seed 6, 700 steps, validation every 50
    "gpt2s6-3prompt-5sample-klabs005-700-val50": {
        "steps": 700, "seed": 304, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            3, 5, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=abs",
            "actor_rollout_ref.actor.kl_loss_coef=0.05", "trainer.test_freq=50")},
    # healthy: 1 prompt x 7 (odd n); KL loss kl+ (k1, straight-through) coef 0.03; lr 2e-4 with 50-step warm-up
    # and 1.5 cosine cycles down to 0.2x; Llama seed 6, 800 steps, validation every 7
    "llamas6-1prompt-7sample-klk1plus003-warmup50-cos1.5cyc-800-val7": {
        "steps": 800, "seed": 305, "model": "llama", "model_seed": 6, "overrides": _batch(
            1, 7, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=kl+",
            "actor_rollout_ref.actor.kl_loss_coef=0.03", "actor_rollout_ref.actor.optim.lr=2e-4",
            "actor_rollout_ref.actor.optim.lr_warmup_steps=50", "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
            "actor_rollout_ref.actor.optim.num_cycles=1.5", "actor_rollout_ref.actor.optim.min_lr_ratio=0.2",
            "trainer.test_freq=7")},
    # healthy, long: 3 prompts x 3, responses up to 16 tokens, constant lr 5e-5; Qwen2 seed 6, 1000 steps,
    # validation every 50
    "qwen2s6-3prompt-3sample-resp16-constlr5e-5-1000-val50": {
        "steps": 1000, "seed": 306, "model": "qwen2", "model_seed": 6, "overrides": _batch(
            3, 3, "data.max_response_length=16", "actor_rollout_ref.actor.optim.lr=5e-5", *_CONST,
            "trainer.test_freq=50")},
    # memory leak in validation only, stepwise ramp: from step 150 each validation keeps 16 MB never freed
    # (validation every 7: the first leaking validation at step 154); GPT-2 seed 6, 2 prompts x 4, 450 steps
    "gpt2s6-2prompt-4sample-valleak16mb-from150-450-val7": {
        "steps": 450, "seed": 307, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            2, 4, "trainer.test_freq=7"), "driver": ValidationOnlyLeak(150, 16)},
    # Adam state dropped every 25 steps from step 200 (sudden and periodic: one sign-like update each time);
    # constant lr 5e-4; Llama seed 6, 2 prompts x 4, 450 steps, validation every 25
    "llamas6-2prompt-4sample-adamdrop-every25-from200-constlr5e-4-450-val25": {
        "steps": 450, "seed": 308, "model": "llama", "model_seed": 6, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.optim.lr=5e-4", *_CONST, "trainer.test_freq=25"),
        "driver": AdamStateDrop(200, 25)},
    # reference re-synced to the current policy every 50 steps from step 150 (periodic; a slow drift of the anchor):
    # KL loss low_var_kl coef 0.1, constant lr 5e-4; Qwen2 seed 6, 2 prompts x 4, 450 steps, validation every 25
    "qwen2s6-2prompt-4sample-klloss01-refresync-every50-from150-constlr5e-4-450-val25": {
        "steps": 450, "seed": 309, "model": "qwen2", "model_seed": 6, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
            "actor_rollout_ref.actor.kl_loss_coef=0.1", "actor_rollout_ref.actor.optim.lr=5e-4", *_CONST,
            "trainer.test_freq=25"), "driver": RefResync(150, 50)},
    # KL coefficient decaying to 0 over 200 steps with clipping off and a rising lr, ramp: KL loss low_var_kl coef
    # 0.1, constant lr 1e-4 to step 199; from step 200 grad clip off, coef 0.1 -> 0 and lr 1x -> 20x over 200-400;
    # GPT-2 seed 6, 2 prompts x 4, 450 steps, validation every 25
    "gpt2s6-2prompt-4sample-kldecay-clipoff-lrrise20x-200-400-450-val25": {
        "steps": 450, "seed": 310, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
            "actor_rollout_ref.actor.kl_loss_coef=0.1", "actor_rollout_ref.actor.optim.lr=1e-4", *_CONST,
            "trainer.test_freq=25"), "driver": KLDecayClipOffLrRise(200, 400, 20.0)},
    # reward model biased toward a leading '1', learned ramp: bonus weight 0 (step 150) -> 1.0 (step 350), kept;
    # Llama seed 6, 2 prompts x 4, 450 steps, validation every 25
    "llamas6-2prompt-4sample-leading1bias-150-350-450-val25": {
        "steps": 450, "seed": 311, "model": "llama", "model_seed": 6, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": LeadingOneBias(150, 350, 1.0)},
    # data mix drifting to carry-heavy prompts, ramp: share of two-carry prompts 0 extra (step 150) -> 90%
    # (step 350), kept; the policy itself is not broken (label by reading: what a user would want to know);
    # GPT-2 seed 6, 2 prompts x 4, 450 steps, validation every 25
    "gpt2s6-2prompt-4sample-harddrift-150-350-450-val25": {
        "steps": 450, "seed": 312, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": HardDrift(150, 350, 0.9, seed=312)},
    # added after the Adam-drop run was read (written and committed before it ran): Llama seed 6 at constant lr
    # 5e-4 ran its responses to the length cap by itself from ~step 52, before the first drop (README, fifteenth
    # pass). Adam state dropped every 10 steps from step 200 (sudden and periodic) at a constant lr 2e-4; GPT-2
    # seed 6, 2 prompts x 4, 450 steps, validation every 25
    "gpt2s6-2prompt-4sample-adamdrop-every10-from200-constlr2e-4-450-val25": {
        "steps": 450, "seed": 313, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.optim.lr=2e-4", *_CONST, "trainer.test_freq=25"),
        "driver": AdamStateDrop(200, 10)},
    # added after five runs were read (written and committed before it ran): the drift to two-carry prompts left the
    # reward flat (README, fifteenth pass), so one more failure spec. Reward computed on truncated text, sudden cause
    # with a learned effect: from step 200 the grader sees only the response's first 2 characters (the answer's last
    # digit never graded); GPT-2 seed 6, 2 prompts x 4, 450 steps, validation every 25
    "gpt2s6-2prompt-4sample-gradetrunc2chars-from200-450-val25": {
        "steps": 450, "seed": 314, "model": "gpt2", "model_seed": 6, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": TruncatedGrading(200, 2)},
    # added after thirteen runs were read (written and committed before it ran): three failure specs left no mark
    # (README, fifteenth pass), so one more. A trace flush whose cost grows quadratically, ramp that starts slowly:
    # from step 150 the buffer gains 30 x (k - 150) floats at step k and is serialised whole every step (~1.35 M
    # floats at step 450); Llama seed 6, 2 prompts x 4, 450 steps, validation every 25
    "llamas6-2prompt-4sample-traceflush-quadratic-from150-450-val25": {
        "steps": 450, "seed": 315, "model": "llama", "model_seed": 6, "overrides": _batch(
            2, 4, "trainer.test_freq=25"), "driver": GrowingTraceFlush(150, 30)},
}


# run once and not stored (README, fifteenth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
