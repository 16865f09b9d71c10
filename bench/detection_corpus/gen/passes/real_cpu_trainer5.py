"""Seventh pass of real CPU runs of rlcockpit's own trainer (source ``rlcockpit_trainer_cpu5``): settings and failure
mechanisms none of the earlier CPU sources (``rlcockpit_trainer_cpu`` .. ``rlcockpit_trainer_cpu4``) has, made as a
held-out source (nothing was tuned on it).

Settings: RLOO with 8 prompts x 4 samples a step, GSPO (``policy_loss.loss_mode=gspo``, sequence-level ratio, clip
3e-4/4e-4) with ``seq-mean-token-mean``, Dr. GRPO (``seq-mean-token-sum-norm``, no std normalisation) with DAPO's
clip-higher 0.28 and soft overlong punishment, OPO advantages with the Clip-Cov loss, ReMax (a greedy baseline
rollout per prompt), REINFORCE++; seeds 91-100. Failure mechanisms (how, from which step, sudden or ramp: written in
each spec and committed before the run): a bonus for characters past the answer whose weight ramps up while the
task's accuracy is logged beside the paid reward (``reward_extra/acc/mean``: reward hacking through length), the stop
token's logit raised in sampling (responses collapse to the stop token alone) or lowered step by step (truncation
creeping up), rewards x300 on two steps under RLOO (gradient spike), the learning rate ramping to 100x (collapse).
Each run goes through :func:`real_cpu_trainer.run` (health off, TensorBoard sink); the event file is stored under
``bench/detection_corpus/real/rlcockpit_trainer_cpu5/<name>/`` and labelled by reading it (README, seventh pass).

    nice python bench/detection_corpus/gen/passes/real_cpu_trainer5.py            # every spec not yet stored
    nice python bench/detection_corpus/gen/passes/real_cpu_trainer5.py NAME ...   # only these specs
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gen_path  # noqa: F401  (puts gen/ on sys.path)
from real_cpu_trainer import main
from real_cpu_trainer4 import Ramp, ramp
from real_trainer import digit_overlap

OUT = Path(__file__).resolve().parents[2] / "real" / "rlcockpit_trainer_cpu5"


def _batch(prompts: int, n: int, *more: str) -> list[str]:
    return [f"data.train_batch_size={prompts}", f"actor_rollout_ref.rollout.n={n}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}", *more]


class LengthBonus:
    """The paid reward from step 1: the task's digit overlap plus ``weight`` x min(1, characters past the answer / 6),
    returned as ``{"score", "acc", "len_bonus"}`` so the trainer logs the task's accuracy beside the paid score
    (``reward_extra/acc/mean``). The weight is ``ramp(k, start, end, 0, hi)`` (``end == start``: sudden)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.weight = start, end, hi, 0.0

    def before_step(self, st: Any, step: int) -> None:
        if st.reward.fn is not self.reward:
            st.reward.fn, st.reward.kwargs = self.reward, {}
        self.weight = self.hi if step >= self.end else ramp(step, self.start, self.end, 0.0, self.hi)

    def reward(self, data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None) -> dict[str, float]:
        acc = digit_overlap(data_source, solution_str, ground_truth)
        bonus = min(1.0, max(0, len(solution_str.strip()) - len(str(ground_truth))) / 6)
        return {"score": acc + self.weight * bonus, "acc": acc, "len_bonus": bonus}


class EosBias:
    """The stop token's logit in sampling shifted by ``ramp(k, start, end, 0, hi)`` before every step (positive: the
    policy stops sooner; negative: later). Only the draw sees it: the rollout's and the training pass's log-probs
    are the model's own, as a decoding-config bias (``sequence_bias``) behaves. Validation samples through the same
    engine, so it sees the bias too."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi, self.value = start, end, hi, 0.0
        self.installed = False

    def before_step(self, st: Any, step: int) -> None:
        self.value = self.hi if step >= self.end else ramp(step, self.start, self.end, 0.0, self.hi)
        if not self.installed:
            import rlcockpit.trainer.rollout.engine as engine

            eos = st.engine.eos_ids.clone()
            for name in ("sample_next_token", "sample_with_uniforms"):
                setattr(engine, name, self._biased(getattr(engine, name), eos))
            self.installed = True

    def _biased(self, fn: Any, eos: Any) -> Any:
        def biased(logits: Any, params: Any, *a: Any, **kw: Any) -> Any:
            if self.value:
                logits = logits.clone()
                logits[:, eos.to(logits.device)] += self.value
            return fn(logits, params, *a, **kw)

        return biased


class EntropyPenaltyRamp:
    """An entropy penalty that builds up: before every step ``actor.entropy_coeff`` is ``ramp(k, start, end, 0, hi)``
    (``hi`` negative: the update pays for lower entropy)."""

    def __init__(self, start: int, end: int, hi: float) -> None:
        self.start, self.end, self.hi = start, end, hi

    def before_step(self, st: Any, step: int) -> None:
        st.cfg.actor.entropy_coeff = ramp(step, self.start, self.end, 0.0, self.hi)


SPECS: dict[str, dict[str, Any]] = {
    # healthy: RLOO, GPT-2, 8 prompts x 4 samples a step, 250 steps, validation every 25
    "gpt2-8prompt-4sample-rloo-250-val25": {"steps": 250, "seed": 91, "model": "gpt2", "overrides": _batch(
        8, 4, "algorithm.adv_estimator=rloo", "trainer.test_freq=25")},
    # healthy: GSPO (sequence-level ratio, clip 3e-4 / 4e-4) with seq-mean-token-mean; Llama, 1 prompt x 6,
    # 400 steps, validation every 10
    "llama-1prompt-6sample-gspo-400-val10": {"steps": 400, "seed": 92, "model": "llama", "overrides": _batch(
        1, 6, "actor_rollout_ref.actor.policy_loss.loss_mode=gspo", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
        "actor_rollout_ref.actor.clip_ratio_low=0.0003", "actor_rollout_ref.actor.clip_ratio_high=0.0004",
        "trainer.test_freq=10")},
    # healthy: Dr. GRPO (seq-mean-token-sum-norm, no std normalisation) with DAPO clip-higher 0.28 and the soft
    # overlong punishment (last 4 of 12 tokens); Qwen2, 2 prompts x 4, responses up to 12 tokens, 400 steps,
    # validation every 20
    "qwen2-2prompt-drgrpo-cliphigh-overlong-len12-400-val20": {"steps": 400, "seed": 93, "model": "qwen2",
                                                               "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm", "algorithm.norm_adv_by_std_in_grpo=false",
        "actor_rollout_ref.actor.clip_ratio_high=0.28", "data.max_response_length=12",
        "reward.overlong_buffer.enable=true", "reward.overlong_buffer.len=4", "reward.overlong_buffer.penalty_factor=1.0",
        "trainer.test_freq=20")},
    # healthy: OPO advantages with the Clip-Cov policy loss; GPT-2 seed 1, 2 prompts x 4, 350 steps, validation
    # every 15
    "gpt2s1-2prompt-opo-clipcov-350-val15": {"steps": 350, "seed": 94, "model": "gpt2", "model_seed": 1,
                                             "overrides": _batch(
        2, 4, "algorithm.adv_estimator=opo", "actor_rollout_ref.actor.policy_loss.loss_mode=clip_cov",
        "trainer.test_freq=15")},
    # slow reward hacking through length: the paid reward is the task's digit overlap plus w x min(1, characters
    # past the answer / 6), w ramping linearly from 0 at step 150 to 1.0 at step 300; the task's accuracy logged
    # beside it (reward_extra/acc/mean) from step 1; validation keeps the task's score; lr 3e-4; GPT-2,
    # 1 prompt x 8, 450 steps, validation every 10
    "gpt2-1prompt-8sample-lenbonusramp-lr3e-4-450-val10": {"steps": 450, "seed": 95, "model": "gpt2",
                                                           "overrides": _batch(
        1, 8, "actor_rollout_ref.actor.optim.lr=3e-4", "trainer.test_freq=10"),
        "driver": LengthBonus(150, 300, 1.0)},
    # sudden collapse to the stop token alone: from step 250 the stop token's logit in sampling is raised by 6;
    # REINFORCE++; Qwen2, 2 prompts x 4, 400 steps, validation every 10
    "qwen2-2prompt-rpp-eosboost6-400-val10": {"steps": 400, "seed": 96, "model": "qwen2", "overrides": _batch(
        2, 4, "algorithm.adv_estimator=reinforce_plus_plus", "trainer.test_freq=10"),
        "driver": EosBias(250, 250, 6.0)},
    # slow collapse from an lr ramp: ReMax (greedy baseline rollout), the learning rate ramps linearly from 1x at
    # step 200 to 100x at step 320 (then stays; cosine schedule underneath); Llama, 2 prompts x 4, 400 steps,
    # validation every 10
    "llama-2prompt-remax-lrramp100-400-val10": {"steps": 400, "seed": 97, "model": "llama", "overrides": _batch(
        2, 4, "algorithm.adv_estimator=remax", "trainer.test_freq=10"), "driver": Ramp("lr", 200, 320, 1.0, 100.0)},
    # sudden gradient spike: rewards x300 at steps 230 and 231 under RLOO (the advantage keeps the reward's scale;
    # grad clip 1.0 stays on); GPT-2 seed 1, 4 prompts x 4, 350 steps, validation every 25
    "gpt2s1-4prompt-rloo-rewardx300-350-val25": {"steps": 350, "seed": 98, "model": "gpt2", "model_seed": 1,
                                                 "overrides": _batch(4, 4, "algorithm.adv_estimator=rloo",
                                                                     "trainer.test_freq=25"),
                                                 "fault": {"kind": "reward_scale", "step": 230,
                                                           "params": {"steps": [230, 231], "factor": 300.0}}},
    # slow truncation creeping up: the stop token's logit in sampling lowered step by step, 0 at step 150 to -8 at
    # step 330 (then stays); responses up to 16 tokens; Llama seed 1, 1 prompt x 8, 400 steps, validation every 20
    "llamas1-1prompt-8sample-eosbiasramp-len16-400-val20": {"steps": 400, "seed": 99, "model": "llama",
                                                            "model_seed": 1, "overrides": _batch(
        1, 8, "data.max_response_length=16", "trainer.test_freq=20"), "driver": EosBias(150, 330, -8.0)},
    # added after the first nine ran (written before running it): slow entropy collapse, the entropy penalty
    # (actor.entropy_coeff) ramping linearly from 0 at step 200 to -2 at step 320 (then stays); lr 1e-4; GPT-2,
    # 2 prompts x 4, 400 steps, validation every 20
    "gpt2-2prompt-entpenramp2-lr1e-4-400-val20": {"steps": 400, "seed": 100, "model": "gpt2", "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.optim.lr=1e-4", "trainer.test_freq=20"),
        "driver": EntropyPenaltyRamp(200, 320, -2.0)},
    # added after the run above (written before running it): under the cosine schedule that ramp met an lr already
    # decayed to 0.5-0.1x and the entropy only drifted; the same ramp on a constant lr of 1e-4 (seed 110)
    "gpt2-2prompt-entpenramp2-constlr1e-4-400-val20": {"steps": 400, "seed": 110, "model": "gpt2", "overrides": _batch(
        2, 4, "actor_rollout_ref.actor.optim.lr=1e-4", "actor_rollout_ref.actor.optim.lr_scheduler_type=constant",
        "trainer.test_freq=20"), "driver": EntropyPenaltyRamp(200, 320, -2.0)},
}


# run once and not stored: the failure its spec meant did not come (README, seventh pass, "Looked at and not stored")
NOT_STORED = ("gpt2-2prompt-entpenramp2-lr1e-4-400-val20",)


if __name__ == "__main__":
    main(SPECS, OUT, NOT_STORED)
