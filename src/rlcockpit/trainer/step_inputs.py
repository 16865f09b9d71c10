"""What one training step computes between the rollout and the update: the no-grad policy passes, rewards,
rollout correction and advantages, in verl's order.

* Old-policy pass: skipped when the update is a single on-policy pass (the update's own detached
  log-probs are then the old ones).  It runs when a later stage needs it: several mini-batches or
  epochs, the in-reward KL, rollout correction in decoupled mode (weights ``pi_old / pi_rollout``), or an
  estimator reading ``old_log_probs`` / ``sum_pi_squared`` (the optimal token baselines).
* Bypass mode (``algorithm.rollout_correction.bypass_mode``): the rollout engine's log-probs *are* the old
  ones; the loss (``bypass_mode``) computes the correction against the policy being trained.
* Decoupled mode: with the engine's log-probs (``rollout.calculate_log_probs`` or a rollout-correction
  setting) ``compute_rollout_correction_and_rejection_mask`` runs once per batch after the KL penalty and
  before the advantages: rejected tokens leave ``response_mask``, IS weights go to the policy loss, the
  ``rollout_corr/*`` metrics are logged.
"""

from __future__ import annotations

from typing import Any

import torch

from rlcockpit.algos import (
    apply_kl_penalty,
    compute_advantage,
    compute_rollout_correction_and_rejection_mask,
    kl_needs_full_vocab,
    scores_to_token_level,
)
from rlcockpit.trainer.algo_args import (
    advantage_kwargs,
    estimator_inputs,
    needs_sum_pi_squared,
    rollout_correction_kwargs,
    rollout_correction_on,
)
from rlcockpit.trainer.models import forward_policy, forward_values, needs_reference, reference_context
from rlcockpit.trainer.state import clamp_kl
from rlcockpit.trainer.update.packing import forward_packed
from rlcockpit.trainer.vision.inputs import vl_scoring_pass

Batch = dict[str, torch.Tensor]


def needs_old_pass(cfg: Any, bs: int, rollout_log_probs: torch.Tensor | None) -> bool:
    """Whether the no-grad old-policy forward must run (see the module docstring)."""
    bypass = cfg.algorithm.rollout_correction.bypass_mode
    single_pass = cfg.actor.ppo_epochs == 1 and bs <= cfg.actor.ppo_mini_batch_size * cfg.rollout.n
    wanted = estimator_inputs(cfg)
    if needs_sum_pi_squared(cfg):
        return True
    if bypass:
        return False
    return (not single_pass or cfg.algorithm.use_kl_in_reward or rollout_log_probs is not None
            or "old_log_probs" in wanted)


def policy_passes(st: Any, batch: Batch, rollout_log_probs: torch.Tensor | None, timed: Any, timing: dict,
                  global_bs: int | None = None) -> None:
    """Fill ``old_log_probs`` (+ ``sum_pi_squared``), ``ref_log_prob`` and ``values`` into ``batch`` (no grad).
    ``global_bs``: the whole step's batch size when ``batch`` is one data-parallel rank's share of it."""
    cfg = st.cfg
    T, bs = batch["responses"].shape[1], global_bs or batch["responses"].shape[0]
    if rollout_correction_on(cfg) and rollout_log_probs is None:
        raise ValueError(f"algorithm.rollout_correction needs the rollout engine's log-probs; rollout.name="
                         f"{cfg.rollout.name} did not report them")
    full_kl = cfg.algorithm.use_kl_in_reward and kl_needs_full_vocab(cfg.algorithm.kl_penalty)
    fwd = {"temperature": cfg.rollout.temperature, "share_prefix": cfg.actor.share_prefix}
    ids, am = batch["input_ids"], batch["attention_mask"]
    # with the batch's images (vision/inputs.py), else packed or padded (same log-probs, packing.py)
    score = vl_scoring_pass(batch) or (forward_packed if cfg.model.use_remove_padding else forward_policy)
    with torch.no_grad():
        if cfg.algorithm.rollout_correction.bypass_mode:
            batch["old_log_probs"] = rollout_log_probs
        if needs_old_pass(cfg, bs, rollout_log_probs) or full_kl:
            with timed(timing, "old_log_prob"), st.autocast():
                st.actor.eval()
                out = score(st.actor, ids, am, T, sum_pi_squared=needs_sum_pi_squared(cfg),
                            full_log_probs=full_kl, with_entropy="nograd", **fwd)
            batch.setdefault("old_log_probs", out["log_probs"])  # bypass mode keeps the rollout's
            batch["old_entropy"] = out["entropy"]  # verl's actor/entropy (update.py); the update then skips it
            if "sum_pi_squared" in out:
                batch["sum_pi_squared"] = out["sum_pi_squared"]
            if full_kl:
                batch["old_full_log_probs"] = out["full_log_probs"]
        if needs_reference(cfg):
            with timed(timing, "ref"):
                model, ctx = reference_context(st.actor, st.ref)
                with ctx, st.autocast():
                    out = score(model, ids, am, T, full_log_probs=full_kl, **fwd)
            batch["ref_log_prob"] = out["log_probs"]
            if full_kl:
                batch["ref_full_log_probs"] = out["full_log_probs"]
        if st.critic is not None:
            with timed(timing, "values"), st.autocast():
                st.critic.eval()
                batch["values"] = forward_values(st.critic, ids, am, T)


def rewards_and_advantages(st: Any, batch: Batch, exp: Any, rollout_log_probs: torch.Tensor | None,
                           metrics: dict[str, float]) -> None:
    """Token-level rewards (minus the in-reward KL), rollout correction (decoupled mode), then advantages."""
    cfg = st.cfg
    mask = batch["response_mask"].float()
    batch["token_level_scores"] = scores_to_token_level(exp.scores.to(mask.device), mask)
    rewards = batch["token_level_scores"]
    a = cfg.algorithm
    if a.use_kl_in_reward:
        full = kl_needs_full_vocab(a.kl_penalty)
        rewards, kl_m = apply_kl_penalty(rewards, batch.pop("old_full_log_probs") if full else batch["old_log_probs"],
                                         batch.pop("ref_full_log_probs") if full else batch["ref_log_prob"], mask,
                                         st.kl_ctrl, a.kl_penalty)
        st.kl_ctrl.update(kl_m["actor/reward_kl_penalty"], n_steps=mask.shape[0])
        clamp_kl(st.kl_ctrl, cfg)
        metrics.update(kl_m)
    batch["token_level_rewards"] = rewards
    if rollout_log_probs is not None and not a.rollout_correction.bypass_mode:
        weights, new_mask, rc_metrics = compute_rollout_correction_and_rejection_mask(
            batch["old_log_probs"], rollout_log_probs, batch["response_mask"], **rollout_correction_kwargs(cfg))
        batch["entropy_mask"] = batch["response_mask"]  # verl's actor/entropy counts the rejected tokens too
        batch["response_mask"] = new_mask
        mask = new_mask.float()
        if weights is not None:
            batch["rollout_is_weights"] = weights
        metrics.update(rc_metrics)
    if exp.baselines is not None:
        batch["reward_baselines"] = exp.baselines.to(mask.device)
    batch["advantages"], batch["returns"] = compute_advantage(
        a.adv_estimator, token_level_rewards=rewards, response_mask=mask,
        **advantage_kwargs(cfg, batch, exp.uids, exp.extras))
