"""Twelfth pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu8``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu7``) has, made as a
held-out source (nothing was tuned on it, no detector ran on it).

Settings: **PPO with a critic** (GAE, ``critic/*`` keys) under ``actor.loss_agg_mode=seq-mean-token-sum``;
**pass@k advantages** (``algorithm.adv_estimator=grpo_passk``: only each group's best response learns) with one
prompt a step; the engine's own log-probs reported (``rollout.calculate_log_probs``); models built from **model
seed 4** (another tokenizer sample, init and warm-up than every earlier CPU run); seeds 181-190.

Failure mechanisms (how, from which step, sudden or ramp: written in each spec and committed before the run): a
host-memory leak that **accelerates** (a per-step trace buffer whose step-k append grows with k: quadratic growth,
where the ninth pass's leak was linear); the **rollout engine sampling at temperature 2.0** while the trainer scores
at 1.0 (a rollout server's sampling config drifting from the trainer's: rollout/training mismatch); a **grader that
starts paying format only** (any all-digit answer scores 1.0; the task's accuracy logged beside it); a **weight-decay
sign bug** (AdamW ``weight_decay`` -200 from a step: every step multiplies the weights by 1 + lr x 200). Added after
the first batch ran (each committed before it ran): a healthy GPG run, a data loader stuck on one batch, a slow reward
server, a loss-scale bug (isolated gradient spikes) and another run's checkpoint loaded as the reference. Each run
goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu8/<name>/`` and labelled by reading it (README, twelfth pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer8.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer8.py NAME ...   # only these specs
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_cpu_trainer7 import RewardSignFlip
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu8"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


class AcceleratingLeak:
    """From step ``start`` every step appends to a trace buffer that is never cleared, and the append grows with the
    step: step k keeps ``(k - start + 1) x kb`` KB more (quadratic growth of the process's memory; the bytes are
    written, so they are resident)."""

    def __init__(self, start: int, kb: int) -> None:
        self.start, self.kb = start, kb
        self.kept: list[bytes] = []

    def before_step(self, st: Any, step: int) -> None:
        if step >= self.start:
            self.kept.append(b"\x01" * ((step - self.start + 1) * self.kb * 1024))


class EngineTemperature:
    """From step ``start`` the rollout engine samples training rollouts at temperature ``t`` (its reported log-probs
    at ``t`` too) while the trainer keeps scoring at the config's 1.0: the rollout server's sampling config no
    longer matches the trainer's. Greedy validation is unchanged."""

    def __init__(self, start: int, t: float) -> None:
        self.start, self.t = start, t

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            engine = getattr(st.engine, "_engine", st.engine)
            inner = engine.generate
            t = self.t

            def hot(prompts: Any, params: Any, *a: Any, **kw: Any) -> Any:
                if not params.greedy:
                    params = dataclasses.replace(params, temperature=t)
                return inner(prompts, params, *a, **kw)

            engine.generate = hot


class FormatOnlyGrader(RewardSignFlip):
    """The paid score is the task's digit overlap until step ``start - 1``; from step ``start`` the grader pays format
    only: 1.0 for any non-empty all-digit answer, 0.0 otherwise. The task's accuracy is returned beside it
    (``reward_extra/acc/mean``); validation keeps the task's own reward."""

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        if self.sign < 0:  # RewardSignFlip sets sign -1 from ``start``: here it means "the bug is on"
            got = solution_str.strip()
            return {"score": 1.0 if got and got.isdigit() else 0.0, "acc": acc}
        return {"score": acc, "acc": acc}


class WeightDecayFrom:
    """From step ``start`` the actor's AdamW ``weight_decay`` is ``wd`` (negative: a sign bug, each step multiplies
    every weight by 1 - lr x wd, i.e. grows it)."""

    def __init__(self, start: int, wd: float) -> None:
        self.start, self.wd = start, wd

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            for g in st.actor_opt.param_groups:
                g["weight_decay"] = self.wd


class StuckLoader:
    """From step ``start`` the prompt loader hands out the batch it gave at ``start`` again at every step (a data
    loader whose position is reset to the same offset each step: the run trains on the same prompts over and
    over). Validation keeps its own prompts."""

    def __init__(self, start: int) -> None:
        self.start = start

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            loader = st.loader
            inner = loader.next_batch
            kept: dict[int, list[Any]] = {}

            def stuck(k: int | None = None) -> list[Any]:
                key = k or loader.batch_size
                if key not in kept:
                    kept[key] = inner(k)
                return list(kept[key])

            loader.next_batch = stuck


class SlowRewardServer:
    """From step ``start`` every call of the training reward function first waits ``seconds`` (a reward-model server
    that answers slowly: ``timing_s/reward`` and the step time grow); validation's reward is untouched."""

    def __init__(self, start: int, seconds: float) -> None:
        self.start, self.seconds = start, seconds

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            import time

            inner, wait = st.reward.fn, self.seconds

            def slow(*a: Any, **kw: Any) -> Any:
                time.sleep(wait)
                return inner(*a, **kw)

            st.reward.fn = slow


class LossScaleNotUnscaled:
    """At the steps in ``steps`` every gradient of the actor is ``factor`` x what the loss gives (a loss-scale bug:
    on those steps the scaler's factor is not removed before the norm and the clip), through a hook on each actor
    parameter; the grad norm logged is the scaled one and the clip at ``actor.grad_clip`` bounds the update."""

    def __init__(self, steps: tuple[int, ...], factor: float) -> None:
        self.steps, self.factor, self.on, self.installed = set(steps), factor, False, False

    def before_step(self, st: Any, step: int) -> None:
        if not self.installed:
            for p in st.actor.parameters():
                if p.requires_grad:
                    p.register_hook(lambda g: g * self.factor if self.on else g)
            self.installed = True
        self.on = step in self.steps


class SwapReference:
    """At the start of step ``start`` the reference model's weights are replaced by another checkpoint of the same
    architecture (the corpus model of ``arch`` built from model seed ``seed``: another run's checkpoint loaded as the
    reference)."""

    def __init__(self, start: int, arch: str, seed: int) -> None:
        self.start, self.arch, self.seed = start, arch, seed

    def before_step(self, st: Any, step: int) -> None:
        if step == self.start:
            from real_trainer import bpe_model_dir
            from transformers import AutoModelForCausalLM

            other = AutoModelForCausalLM.from_pretrained(bpe_model_dir(self.arch, self.seed))
            st.ref.load_state_dict(other.state_dict())


SPECS: dict[str, dict[str, Any]] = {
    # healthy: PPO with a critic (GAE; critic/* and values logged), actor.loss_agg_mode seq-mean-token-sum;
    # Llama seed 4, 2 prompts x 4, 400 steps, validation every 20
    "llamas4-gae-seqmeantokensum-2prompt-4sample-400-val20": {"steps": 400, "seed": 181, "model": "llama",
                                                              "model_seed": 4, "overrides": _batch(
        2, 4, "algorithm.adv_estimator=gae", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum",
        "trainer.test_freq=20")},
    # healthy, long: pass@k advantages (grpo_passk: only each group's best response learns), one prompt x 8 a step,
    # the engine's log-probs reported (rollout.calculate_log_probs); GPT-2 seed 4, 500 steps, validation every 25
    "gpt2s4-1prompt-8sample-passk-calclogprobs-500-val25": {"steps": 500, "seed": 182, "model": "gpt2",
                                                            "model_seed": 4, "overrides": _batch(
        1, 8, "algorithm.adv_estimator=grpo_passk", "actor_rollout_ref.rollout.calculate_log_probs=true",
        "trainer.test_freq=25")},
    # host-memory leak that accelerates, ramp: from the start of step 150 each step appends (k - 149) x 120 KB to a
    # buffer never cleared (step 400: 30 MB a step, ~3.8 GB kept in all); Qwen2 seed 4, 2 prompts x 4, 400 steps,
    # validation every 25
    "qwen2s4-2prompt-4sample-accelleak150-400-val25": {"steps": 400, "seed": 183, "model": "qwen2",
                                                       "model_seed": 4, "overrides": _batch(
        2, 4, "trainer.test_freq=25"), "driver": AcceleratingLeak(150, 120)},
    # rollout/training mismatch, sudden: from the start of step 200 the engine samples training rollouts at
    # temperature 2.0 (its reported log-probs at 2.0) while the trainer scores at 1.0; engine log-probs on from
    # step 1 (rollout.calculate_log_probs); GPT-2 seed 4, 2 prompts x 4, 400 steps, validation every 20
    "gpt2s4-2prompt-4sample-enginetemp2at200-calclogprobs-400-val20": {"steps": 400, "seed": 184, "model": "gpt2",
                                                                       "model_seed": 4, "overrides": _batch(
        2, 4, "actor_rollout_ref.rollout.calculate_log_probs=true", "trainer.test_freq=20"),
        "driver": EngineTemperature(200, 2.0)},
    # reward hacking through a grader that pays format only, sudden: the paid score is the digit overlap to step 149
    # and from the start of step 150 1.0 for any non-empty all-digit answer (0 otherwise); the accuracy logged beside
    # it (reward_extra/acc/mean) from step 1; validation keeps the task's score; constant lr 1e-4; Llama seed 4,
    # 2 prompts x 6, 400 steps, validation every 10
    "llamas4-2prompt-6sample-formatonly150-constlr1e-4-400-val10": {"steps": 400, "seed": 185, "model": "llama",
                                                                    "model_seed": 4, "overrides": _batch(
        2, 6, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=10"), "driver": FormatOnlyGrader(150)},
    # weight-decay sign bug, sudden cause with a compounding effect: constant lr 1e-4, AdamW weight_decay 0 to step
    # 199 and -200 from the start of step 200 (every step multiplies each decayed weight by 1.02); Qwen2 seed 4,
    # 2 prompts x 4, 400 steps, validation every 20
    "qwen2s4-2prompt-4sample-wdneg200at200-constlr1e-4-400-val20": {"steps": 400, "seed": 186, "model": "qwen2",
                                                                    "model_seed": 4, "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=20"), "driver": WeightDecayFrom(200, -200.0)},
    # added after the first batch ran (written and committed before running it): the first runs took 25-30 s, so
    # there is time for more. Healthy, long: GPG (adv_estimator gpg with the gpg policy loss: plain policy gradient,
    # no ratio, no clip); Llama seed 4, 2 prompts x 4, 700 steps, validation every 35
    "llamas4-2prompt-4sample-gpg-gpgloss-700-val35": {"steps": 700, "seed": 187, "model": "llama", "model_seed": 4,
                                                      "overrides": _batch(
        2, 4, "algorithm.adv_estimator=gpg", "actor_rollout_ref.actor.policy_loss.loss_mode=gpg",
        "trainer.test_freq=35")},
    # the data loader stuck on one batch, sudden cause: from the start of step 150 the loader returns step 150's two
    # prompts at every step (validation keeps its own prompts); constant lr 1e-4; GPT-2 seed 4, 2 prompts x 6,
    # 450 steps, validation every 15
    "gpt2s4-2prompt-6sample-stuckloader150-constlr1e-4-450-val15": {"steps": 450, "seed": 188, "model": "gpt2",
                                                                    "model_seed": 4, "overrides": _batch(
        2, 6, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=15"), "driver": StuckLoader(150)},
    # added after the second batch was written (committed before running it). Throughput drop from a slow reward
    # server, sudden: from the start of step 200 every training reward call (one per response) first waits 30 ms
    # (8 responses: ~0.24 s a step); Llama seed 4, 2 prompts x 4, 400 steps, validation every 25
    "llamas4-2prompt-4sample-slowreward30ms200-400-val25": {"steps": 400, "seed": 189, "model": "llama",
                                                            "model_seed": 4, "overrides": _batch(
        2, 4, "trainer.test_freq=25"), "driver": SlowRewardServer(200, 0.03)},
    # added after the first 17 runs were stored (written and committed before running these). Gradient spikes from a
    # loss-scale bug, sudden and isolated: at steps 220, 260, 300 and 340 only, every actor gradient is x50 before the
    # norm and the clip (grad_clip 1.0 stays); GPT-2 seed 4, 2 prompts x 4, 400 steps, validation every 20
    "gpt2s4-2prompt-4sample-lossscale50x-at220-260-300-340-400-val20": {
        "steps": 400, "seed": 190, "model": "gpt2", "model_seed": 4,
        "overrides": _batch(2, 4, "trainer.test_freq=20"), "driver": LossScaleNotUnscaled((220, 260, 300, 340), 50.0)},
    # another checkpoint loaded as the reference, sudden: KL loss low_var_kl coef 0.1 from step 1; at the start of
    # step 200 the reference's weights are replaced by the corpus Llama of model seed 3 (same architecture, another
    # run); constant lr 1e-4; Llama seed 4, 2 prompts x 4, 400 steps, validation every 20
    "llamas4-2prompt-4sample-klloss01-refswap-s3at200-constlr1e-4-400-val20": {
        "steps": 400, "seed": 180, "model": "llama", "model_seed": 4, "overrides": _batch(
            2, 4, "actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_coef=0.1",
            "actor_rollout_ref.actor.kl_loss_type=low_var_kl", "actor_rollout_ref.actor.optim.lr=1e-4",
            "actor_rollout_ref.actor.optim.lr_scheduler_type=constant", "trainer.test_freq=20"),
        "driver": SwapReference(200, "llama", 3)},
}


# run once and not stored: the failure its spec meant did not come (README, twelfth pass)
NOT_STORED: tuple[str, ...] = ()


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
