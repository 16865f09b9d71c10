"""From the trainer config to the keyword arguments of :mod:`rlcockpit.algos` (verl's field names).

verl hands each of its algorithm functions the whole config object and lets it read its fields;
rlcockpit's functions take those fields as keyword arguments instead.  This module is the one place
that maps the config onto them, decides which extra inputs a chosen estimator or loss needs (rollout
log-probs, ``sum_pi_squared``, reward components) and validates the algorithm settings against the
registries before anything heavy starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlcockpit.algos import (
    ADV_ESTIMATORS,
    KL_ESTIMATORS,
    LOSS_AGG_MODES,
    POLICY_LOSSES,
    ROLLOUT_IS_LEVELS,
    accepted_params,
)
from rlcockpit.algos.rollout_corr import parse_is_threshold, parse_rs_options, parse_rs_thresholds
from rlcockpit.trainer.observe.filter_metric import validate_filter_metric

if TYPE_CHECKING:
    from rlcockpit.trainer.config import Config

POLICY_LOSS_FIELDS = ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub", "kl_cov_ratio", "ppo_kl_coef", "dro_beta")
ROLLOUT_CORRECTION_FIELDS = ("rollout_is", "rollout_is_threshold", "rollout_is_batch_normalize", "rollout_rs",
                             "rollout_rs_threshold")


def policy_loss_name(cfg: Config) -> str:
    """``actor.policy_loss.loss_mode``; ``bypass_mode`` when ``algorithm.rollout_correction.bypass_mode`` (as verl)."""
    return "bypass_mode" if cfg.algorithm.rollout_correction.bypass_mode else cfg.actor.policy_loss.loss_mode


def policy_loss_kwargs(cfg: Config) -> dict[str, Any]:
    """The actor config fields policy losses read (each loss takes the ones it declares)."""
    a = cfg.actor
    out: dict[str, Any] = {"clip_ratio": a.clip_ratio, "clip_ratio_low": a.clip_ratio_low,
                           "clip_ratio_high": a.clip_ratio_high, "clip_ratio_c": a.clip_ratio_c,
                           "loss_agg_mode": a.loss_agg_mode, "tau_pos": a.tau_pos, "tau_neg": a.tau_neg}
    out.update({k: getattr(a.policy_loss, k) for k in POLICY_LOSS_FIELDS})
    rc = cfg.algorithm.rollout_correction
    if rc.bypass_mode:
        out.update({k: getattr(rc, k) for k in ROLLOUT_CORRECTION_FIELDS}, loss_type=rc.loss_type)
    return out


def loss_scale_factor(cfg: Config) -> int:
    """Dr.GRPO's constant divisor: ``actor.loss_scale_factor``, else the configured response length (as verl,
    whose responses are padded to ``data.max_response_length``), never the batch's longest response."""
    return int(cfg.actor.loss_scale_factor or cfg.data.max_response_length)


def rollout_correction_kwargs(cfg: Config) -> dict[str, Any]:
    rc = cfg.algorithm.rollout_correction
    return {k: getattr(rc, k) for k in ROLLOUT_CORRECTION_FIELDS}


def rollout_correction_on(cfg: Config) -> bool:
    rc = cfg.algorithm.rollout_correction
    return rc.rollout_is is not None or rc.rollout_rs is not None or rc.bypass_mode


def wants_rollout_log_probs(cfg: Config) -> bool:
    """The rollout engine must report its log-probs: rollout correction, or ``rollout.calculate_log_probs``."""
    return rollout_correction_on(cfg) or cfg.rollout.calculate_log_probs


def estimator_inputs(cfg: Config) -> frozenset[str]:
    """The keyword parameters of the configured advantage estimator (all of them for a ``**kwargs`` one)."""
    params = accepted_params(ADV_ESTIMATORS.get(cfg.algorithm.adv_estimator))
    return frozenset({"old_log_probs", "sum_pi_squared", "rollout_is_weights", "non_tensor_batch", "values",
                      "reward_baselines", "index"}) if params is None else params


def needs_sum_pi_squared(cfg: Config) -> bool:
    return cfg.actor.calculate_sum_pi_squared or "sum_pi_squared" in estimator_inputs(cfg)


def advantage_kwargs(cfg: Config, batch: dict[str, Any], uids: np.ndarray,
                     extras: list[Any] | None) -> dict[str, Any]:
    """Inputs and config fields for ``compute_advantage``: each input only where the estimator uses it."""
    a = cfg.algorithm
    wanted = estimator_inputs(cfg)
    out: dict[str, Any] = {"index": uids, "gamma": a.gamma, "lam": a.lam,
                           "norm_adv_by_std_in_grpo": a.norm_adv_by_std_in_grpo, "handle_zero_tail": a.handle_zero_tail}
    for key in ("values", "reward_baselines", "old_log_probs", "sum_pi_squared", "rollout_is_weights"):
        if key in wanted and batch.get(key) is not None:
            out[key] = batch[key]
    if a.gdpo_reward_keys:
        out.update(gdpo_reward_keys=list(a.gdpo_reward_keys), gdpo_reward_weights=a.gdpo_reward_weights,
                   non_tensor_batch=reward_components(extras or [], list(a.gdpo_reward_keys)))
    return out


def reward_components(extras: list[Any], keys: list[str]) -> dict[str, np.ndarray]:
    """Per-response reward components from the reward function's dicts (a failed sample scores 0, as its score)."""
    out = {}
    for key in keys:
        if not any(isinstance(e, dict) and key in e for e in extras):
            raise ValueError(f"algorithm.gdpo_reward_keys: the reward function never returned {key!r}; it must return "
                             f"a dict with one entry per reward component (got keys "
                             f"{sorted({k for e in extras if isinstance(e, dict) for k in e})})")
        out[key] = np.array([float(e[key]) if isinstance(e, dict) and key in e else 0.0 for e in extras],
                            dtype=np.float32)
    return out


def validate_algorithm(cfg: Config, error: type[Exception] = ValueError) -> None:
    """Check every algorithm name against the registries and the rollout-correction settings; raise ``error``."""
    checks = (("algorithm.adv_estimator", cfg.algorithm.adv_estimator, ADV_ESTIMATORS),
              ("actor.policy_loss.loss_mode", cfg.actor.policy_loss.loss_mode, POLICY_LOSSES),
              ("actor.loss_agg_mode", cfg.actor.loss_agg_mode, LOSS_AGG_MODES),
              ("critic.loss_agg_mode", cfg.critic.loss_agg_mode, LOSS_AGG_MODES),
              ("actor.kl_loss_type", cfg.actor.kl_loss_type, KL_ESTIMATORS),
              ("algorithm.kl_penalty", cfg.algorithm.kl_penalty, KL_ESTIMATORS))
    for key, name, registry in checks:
        try:
            registry.canonical(name)
        except KeyError as exc:
            raise error(f"config key {key!r}: {exc.args[0]}") from None
    if cfg.algorithm.adv_estimator == "grpo_passk" and cfg.rollout.n < 2:
        raise error("algorithm.adv_estimator=grpo_passk needs rollout.n >= 2 (it compares the best two responses)")
    rc = cfg.algorithm.rollout_correction
    try:
        if rc.rollout_is is not None and rc.rollout_is not in ROLLOUT_IS_LEVELS:
            raise ValueError(f"rollout_is must be null or one of {', '.join(ROLLOUT_IS_LEVELS)}, got {rc.rollout_is!r}")
        parse_is_threshold(rc.rollout_is_threshold)
        if rc.rollout_rs is not None:
            parse_rs_thresholds(parse_rs_options(rc.rollout_rs), rc.rollout_rs_threshold)
        if rc.loss_type not in ("ppo_clip", "reinforce"):
            raise ValueError(f"loss_type must be ppo_clip or reinforce, got {rc.loss_type!r}")
    except (ValueError, TypeError) as exc:
        raise error(f"algorithm.rollout_correction: {exc}") from exc
    validate_filter_metric(cfg, error)
    if policy_loss_name(cfg) == "dro" and not (cfg.actor.policy_loss.dro_beta or 0) > 0:
        raise error("config key 'actor.policy_loss.dro_beta' must be > 0 with loss_mode=dro")
    if cfg.algorithm.adv_estimator == "gdpo" and not cfg.algorithm.gdpo_reward_keys:
        raise error("algorithm.adv_estimator=gdpo needs algorithm.gdpo_reward_keys: the reward components your "
                    "reward function returns in its dict, e.g. [acc, format]")
    if cfg.algorithm.gdpo_reward_weights is not None and len(cfg.algorithm.gdpo_reward_weights) != len(
            cfg.algorithm.gdpo_reward_keys or []):
        raise error("algorithm.gdpo_reward_weights needs one weight per algorithm.gdpo_reward_keys entry")
