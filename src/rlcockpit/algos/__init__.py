"""rlcockpit's RL algorithms as pure torch functions (verl's ``core_algos`` semantics and names).

Everything chosen by a config name lives in a :class:`rlcockpit.registry.Registry`:
:data:`ADV_ESTIMATORS` (``algorithm.adv_estimator``), :data:`POLICY_LOSSES`
(``actor.policy_loss.loss_mode``), :data:`KL_ESTIMATORS` (``kl_penalty`` / ``kl_loss_type``),
:data:`KL_CONTROLLERS` (``algorithm.kl_ctrl.type``) and :data:`LOSS_AGG_MODES`
(``actor.loss_agg_mode``).  Register your own with the same decorator::

    from rlcockpit.algos import ADV_ESTIMATORS

    @ADV_ESTIMATORS.register("my_estimator")
    def my_estimator(*, token_level_rewards, response_mask, **kw):
        ...
        return advantages, returns

Shapes: ``bs`` responses, ``T`` padded response length, ``V`` vocabulary size.
"""

from __future__ import annotations

from rlcockpit.algos.advantages import (
    ADV_ESTIMATORS,
    compute_advantage,
    compute_gae_advantage_return,
    compute_grpo_outcome_advantage,
    compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_reinforce_plus_plus_outcome_advantage,
    compute_remax_outcome_advantage,
    compute_rloo_outcome_advantage,
    group_stats,
)
from rlcockpit.algos.core import (
    LOSS_AGG_MODES,
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
    kl_penalty,
)
from rlcockpit.algos.losses import (
    POLICY_LOSSES,
    compute_entropy_bonus,
    compute_policy_loss,
    compute_value_loss,
    policy_loss_gpg,
    policy_loss_gspo,
    policy_loss_vanilla,
)

__all__ = [
    "ADV_ESTIMATORS",
    "KL_CONTROLLERS",
    "KL_ESTIMATORS",
    "LOSS_AGG_MODES",
    "POLICY_LOSSES",
    "AdaptiveKLController",
    "FixedKLController",
    "KLController",
    "agg_loss",
    "apply_kl_penalty",
    "compute_advantage",
    "compute_entropy_bonus",
    "compute_gae_advantage_return",
    "compute_grpo_outcome_advantage",
    "compute_kl_loss",
    "compute_policy_loss",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_reinforce_plus_plus_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_value_loss",
    "dynamic_sampling_mask",
    "entropy_from_logits",
    "get_kl_controller",
    "group_ids",
    "group_stats",
    "kl_penalty",
    "logprobs_from_logits",
    "masked_mean",
    "masked_sum",
    "masked_var",
    "masked_whiten",
    "overlong_penalty",
    "policy_loss_gpg",
    "policy_loss_gspo",
    "policy_loss_vanilla",
    "scores_to_token_level",
]
