"""rlcockpit's RL algorithms as pure torch functions (verl 0.9's ``core_algos`` semantics and names).

Everything chosen by a config name lives in a :class:`rlcockpit.registry.Registry`:
:data:`ADV_ESTIMATORS` (``algorithm.adv_estimator``), :data:`POLICY_LOSSES`
(``actor.policy_loss.loss_mode``), :data:`KL_ESTIMATORS` (``kl_penalty`` / ``kl_loss_type``),
:data:`KL_CONTROLLERS` (``algorithm.kl_ctrl.type``) and :data:`LOSS_AGG_MODES`
(``actor.loss_agg_mode``).  Rollout correction (``algorithm.rollout_correction``) is
:func:`compute_rollout_correction_and_rejection_mask`.  Register your own with the same decorator::

    from rlcockpit.algos import ADV_ESTIMATORS

    @ADV_ESTIMATORS.register("my_estimator")
    def my_estimator(*, token_level_rewards, response_mask, **kw):
        ...
        return advantages, returns

Functions keep verl's argument names and take verl's config fields as keyword arguments.  A
function is passed only the config fields it declares, and an input it would ignore (say
``rollout_is_weights`` for a loss that does not apply them) is an error, never silently dropped.

Shapes: ``bs`` responses, ``T`` padded response length, ``V`` vocabulary size.
"""

from __future__ import annotations

from rlcockpit.algos import advantages_group, advantages_otb, losses_cov, losses_ratio  # noqa: F401  (registration)
from rlcockpit.algos.advantages import (
    ADV_ESTIMATORS,
    compute_advantage,
    compute_gae_advantage_return,
    compute_grpo_outcome_advantage,
    compute_grpo_vectorized_outcome_advantage,
    compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_reinforce_plus_plus_outcome_advantage,
    compute_remax_outcome_advantage,
    compute_rloo_outcome_advantage,
    compute_rloo_vectorized_outcome_advantage,
    group_stats,
)
from rlcockpit.algos.advantages_group import (
    compute_gdpo_outcome_advantage,
    compute_gpg_outcome_advantage,
    compute_grpo_passk_outcome_advantage,
    compute_opo_outcome_advantage,
)
from rlcockpit.algos.advantages_otb import (
    compute_multi_turn_optimal_token_baseline_advantage,
    compute_optimal_token_baseline_advantage,
)
from rlcockpit.algos.core import (
    LOSS_AGG_MODES,
    accepted_params,
    agg_loss,
    entropy_from_logits,
    group_ids,
    logprobs_from_logits,
    masked_mean,
    masked_sum,
    masked_var,
    masked_whiten,
    scores_to_token_level,
)
from rlcockpit.algos.dapo import dynamic_sampling_mask, overlong_penalty
from rlcockpit.algos.kl import (
    KL_CONTROLLERS,
    KL_ESTIMATORS,
    AdaptiveKLController,
    FixedKLController,
    KLController,
    apply_kl_penalty,
    compute_kl_loss,
    get_kl_controller,
    kl_needs_full_vocab,
    kl_penalty,
)
from rlcockpit.algos.losses import (
    POLICY_LOSSES,
    compute_entropy_bonus,
    compute_policy_loss,
    compute_value_loss,
    policy_loss_gpg,
    policy_loss_gspo,
    policy_loss_reinforce,
    policy_loss_vanilla,
)
from rlcockpit.algos.losses_cov import policy_loss_clip_cov, policy_loss_kl_cov
from rlcockpit.algos.losses_ratio import (
    policy_loss_cispo,
    policy_loss_dppo_kl,
    policy_loss_dppo_tv,
    policy_loss_dro,
    policy_loss_geo_mean,
    policy_loss_sapo,
)
from rlcockpit.algos.rollout_corr import (
    ROLLOUT_IS_LEVELS,
    ROLLOUT_RS_OPTIONS,
    compute_rollout_corr_metrics_from_logprobs,
    compute_rollout_correction_and_rejection_mask,
    compute_rollout_correction_weights,
    compute_rollout_rejection_mask,
    policy_loss_bypass_mode,
)
from rlcockpit.algos.rollout_corr_metrics import compute_offpolicy_metrics

__all__ = [
    "ADV_ESTIMATORS",
    "KL_CONTROLLERS",
    "KL_ESTIMATORS",
    "LOSS_AGG_MODES",
    "POLICY_LOSSES",
    "ROLLOUT_IS_LEVELS",
    "ROLLOUT_RS_OPTIONS",
    "AdaptiveKLController",
    "FixedKLController",
    "KLController",
    "accepted_params",
    "agg_loss",
    "apply_kl_penalty",
    "compute_advantage",
    "compute_entropy_bonus",
    "compute_gae_advantage_return",
    "compute_gdpo_outcome_advantage",
    "compute_gpg_outcome_advantage",
    "compute_grpo_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_kl_loss",
    "compute_multi_turn_optimal_token_baseline_advantage",
    "compute_offpolicy_metrics",
    "compute_opo_outcome_advantage",
    "compute_optimal_token_baseline_advantage",
    "compute_policy_loss",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_reinforce_plus_plus_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "compute_rollout_corr_metrics_from_logprobs",
    "compute_rollout_correction_and_rejection_mask",
    "compute_rollout_correction_weights",
    "compute_rollout_rejection_mask",
    "compute_value_loss",
    "dynamic_sampling_mask",
    "entropy_from_logits",
    "get_kl_controller",
    "group_ids",
    "group_stats",
    "kl_needs_full_vocab",
    "kl_penalty",
    "logprobs_from_logits",
    "masked_mean",
    "masked_sum",
    "masked_var",
    "masked_whiten",
    "overlong_penalty",
    "policy_loss_bypass_mode",
    "policy_loss_cispo",
    "policy_loss_clip_cov",
    "policy_loss_dppo_kl",
    "policy_loss_dppo_tv",
    "policy_loss_dro",
    "policy_loss_geo_mean",
    "policy_loss_gpg",
    "policy_loss_gspo",
    "policy_loss_kl_cov",
    "policy_loss_reinforce",
    "policy_loss_sapo",
    "policy_loss_vanilla",
    "scores_to_token_level",
]
