"""Off-policy detectors for verl 0.9's V1 trainer: stale trajectories, and "on-policy" updates that are not.

* :class:`OffPolicyStaleness` reads V1's ``training/off_policy/trajectory_staleness/*`` (how many weight versions
  a trained trajectory lags behind the policy being updated; verl ``trainer/ppo/v1/trainer_base.py``). A
  synchronous V1 run (``trainer.v1.trainer_mode=sync``) must stay at 0; an async one must stay under
  ``trainer.v1.sampler.max_off_policy_threshold``.
* :class:`OnPolicyMismatch`: with one PPO epoch and one mini-batch per step the update's first pass is on-policy,
  so ``actor/ppo_kl`` (the mean old-minus-current log-prob) must be 0. verl computes the old log-probs in
  micro-batches of ``rollout.log_prob_micro_batch_size_per_gpu`` and the update's in micro-batches of
  ``actor.ppo_micro_batch_size_per_gpu``; different sizes pad differently and the bf16 kernels round
  differently, so the log-probs differ and the "on-policy" ratio is not 1. The fix is the same micro-batch size.

Both read verl's key paths from the run's stored config and advise in the run's own vocabulary (verl's knobs
land in verl runs' overrides only); rlcockpit's own trainer scores a step in one pass and
has no such split, so :class:`OnPolicyMismatch` only speaks for verl runs.
"""

from __future__ import annotations

from rlcockpit.health.advice import ranked
from rlcockpit.health.base import Detector, median, register_detector
from rlcockpit.health.config_view import make_action
from rlcockpit.health.findings import Action, Cause, Finding

STALE = "training/off_policy/trajectory_staleness/mean"
STALE_MAX = "training/off_policy/trajectory_staleness/max"
STALE_WORST = "training/off_policy/trajectory_staleness_worst/max"
SPANS = "training/off_policy/trajectory_spans/max"
PPO_KL = "actor/ppo_kl"
CLIPFRAC = "actor/pg_clipfrac"

V1_MODE = "trainer.v1.trainer_mode"
V1_LIMIT = "trainer.v1.sampler.max_off_policy_threshold"
ROLLOUT_MICRO = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
ACTOR_MICRO = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"


@register_detector("off_policy_staleness", "trajectory_staleness")
class OffPolicyStaleness(Detector):
    """Trained trajectories too stale. Warning: a synchronous V1 run (``trainer.v1.trainer_mode=sync``) trains on
    trajectories with staleness > 0 on ``sustain`` checks, or the mean staleness rose above ``rise_ratio`` x its
    warm-up level (and >= 1 version). Critical: the mean staleness reached ``limit_frac`` of
    ``trainer.v1.sampler.max_off_policy_threshold`` (verl's default 8 when the config does not say) on ``sustain``
    checks: most of the batch is as old as the limit allows."""

    keys = (STALE,)
    prefixes = ("training/off_policy/",)
    common = {"enabled": True, "warmup": 3, "cooldown": 30}
    defaults = {"limit_frac": 0.75, "rise_ratio": 2.0, "sustain": 3, "default_limit": 8}
    story = "other"
    cause = "the trainer consumes trajectories faster than the rollout produces fresh ones"

    def __init__(self, params, ctx) -> None:
        super().__init__(params, ctx)
        self._base: float | None = None

    def on_warm(self) -> None:
        self._base = median(self.ctx.tracks[STALE].tail(self.warmup))

    def _limit(self) -> float:
        return float(self.ctx.view.number(V1_LIMIT) or self.p["default_limit"])

    def check(self, step: int) -> Finding | None:
        p, track = self.p, self.ctx.tracks[STALE]
        s, limit = track.last, self._limit()
        worst = max((self.ctx.tracks[k].last for k in (STALE_MAX, STALE_WORST) if k in self.ctx.tracks), default=s)
        values = {"staleness": s, "worst": worst, "limit": limit, "before": self._base}
        if self.sustained(s >= p["limit_frac"] * limit, p["sustain"]):
            return self.fire(step, "critical", f"Trained trajectories are {s:.1f} policy versions old on average "
                             f"(worst {worst:.0f}; limit {limit:.0f})", "Most of the batch is as stale as the "
                             "off-policy limit allows: the importance ratios grow and updates get noisy.",
                             values=values, extra_keys=(STALE_MAX, STALE_WORST, SPANS))
        mode = self.ctx.view.get(V1_MODE)
        if mode == "sync" and track.n >= p["sustain"] and min(track.tail(p["sustain"])) > 0:
            return self.fire(step, "warning", f"A synchronous run trains on stale trajectories (staleness "
                             f"{s:.1f}, worst {worst:.0f})", "trainer.v1.trainer_mode=sync should train on-policy.",
                             values=values, extra_keys=(STALE_MAX, STALE_WORST))
        base = self._base if self._base is not None else 0.0
        if s >= 1.0 and s > p["rise_ratio"] * max(base, 0.5) and min(track.tail(p["sustain"])) >= 1.0:
            return self.fire(step, "warning", f"Trajectory staleness rose to {s:.1f} versions (from {base:.1f})",
                             "The replay buffer serves older and older trajectories.", values=values,
                             step_start=track.tail_steps(p["sustain"])[0], extra_keys=(STALE_MAX, STALE_WORST))
        return None

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        limit = finding.evidence["values"].get("limit") or self.p["default_limit"]
        causes = [Cause(self.cause, 0.6, f"staleness {finding.evidence['values'].get('staleness', 0):.1f} versions")]
        spans = self.ctx.tracks.get(SPANS)
        if spans is not None and spans.n and spans.last > 1:
            causes.append(Cause("partial rollouts continue trajectories across weight updates", 0.5,
                                f"a trajectory spans up to {spans.last:.0f} versions"))
        view = self.ctx.view
        actions = [make_action(view, "Bound the staleness", {V1_LIMIT: max(1, int(limit) // 2)},
                               "older trajectories are dropped (or awaited) instead of trained on"),
                   make_action(view, "Correct for the policy lag", {"algorithm.rollout_correction.rollout_is": "token"},
                               "truncated importance weights between the rollout and the trained policy")]
        return ranked(causes), actions


@register_detector("on_policy_mismatch", "onpolicy_logprob_mismatch")
class OnPolicyMismatch(Detector):
    """An on-policy update whose old and current log-probs differ (verl runs). Applies when the stored config has
    one PPO epoch and one mini-batch per step (``ppo_mini_batch_size == data.train_batch_size``) and no
    off-policy V1 mode. Warning: ``|actor/ppo_kl|`` > ``kl_abs`` on ``sustain`` consecutive checks. The probable
    cause names the override when ``rollout.log_prob_micro_batch_size_per_gpu`` differs from
    ``actor.ppo_micro_batch_size_per_gpu``."""

    keys = (PPO_KL,)
    common = {"enabled": True, "warmup": 2, "cooldown": 1000}
    defaults = {"kl_abs": 1e-4, "sustain": 3}
    story = "other"
    cause = "the old log-probs and the update's log-probs are computed differently (kernels, padding, dtype)"

    def _on_policy(self) -> bool:
        return self.ctx.view.memo("on_policy_mismatch.on_policy", self._on_policy_config)  # asked every step

    def _on_policy_config(self) -> bool:
        v = self.ctx.view
        if not v.is_verl or (v.get(V1_MODE) not in (None, "sync")):
            return False
        epochs = v.number("actor_rollout_ref.actor.ppo_epochs") or 1
        mini, batch = v.number("actor_rollout_ref.actor.ppo_mini_batch_size"), v.number("data.train_batch_size")
        return epochs == 1 and mini is not None and mini == batch

    def check(self, step: int) -> Finding | None:
        if not self._on_policy():
            return None
        kl = self.ctx.tracks[PPO_KL].last
        if not self.sustained(abs(kl) > self.p["kl_abs"], self.p["sustain"]):
            return None
        clip = self.ctx.tracks.get(CLIPFRAC)
        values = {"ppo_kl": kl, "pg_clipfrac": clip.last if clip is not None and clip.n else None,
                  "rollout_micro": self.ctx.view.get(ROLLOUT_MICRO), "actor_micro": self.ctx.view.get(ACTOR_MICRO)}
        return self.fire(step, "warning", f"On-policy update with actor/ppo_kl={kl:.2e} (should be 0)",
                         "One epoch over one mini-batch: the old and the current policy are the same weights, yet "
                         "their log-probs differ.", values=values, extra_keys=(CLIPFRAC,),
                         step_start=self.ctx.tracks[PPO_KL].tail_steps(self.p["sustain"])[0])

    def advise(self, finding: Finding) -> tuple[list[Cause], list[Action]]:
        vals = finding.evidence["values"]
        rollout, actor = vals.get("rollout_micro"), vals.get("actor_micro")
        causes = [Cause(self.cause, 0.4)]
        actions: list[Action] = []
        if actor is not None and rollout != actor:
            causes.append(Cause(f"the old log-probs use micro-batches of {rollout} "
                                f"({ROLLOUT_MICRO}), the update {actor} ({ACTOR_MICRO}): different padding "
                                "and rounding", 0.85, f"{ROLLOUT_MICRO}={rollout}, {ACTOR_MICRO}={actor}"))
            actions.append(make_action(self.ctx.view, "Compute the old log-probs with the update's micro-batch size",
                                       {"rollout.log_prob_micro_batch_size_per_gpu": actor},
                                       "the on-policy ratio is then exactly 1"))
        return ranked(causes), actions
