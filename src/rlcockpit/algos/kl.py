"""KL estimators, the in-reward KL penalty and the KL coefficient controllers.

Two places use a KL to the reference policy, as in verl:

* ``algorithm.use_kl_in_reward``: :func:`apply_kl_penalty` subtracts ``beta * kl`` from the
  token-level scores before advantages are estimated; ``beta`` comes from a controller
  (:class:`FixedKLController` or :class:`AdaptiveKLController`).
* ``actor.use_kl_loss``: :func:`compute_kl_loss` adds ``kl_loss_coef * agg(kl)`` to the actor loss.

Estimators (John Schulman, "Approximating KL divergence"), per token with
``d = log_prob - ref_log_prob``: ``kl``/``k1`` = ``d``; ``abs`` = ``|d|``; ``mse``/``k2`` =
``d^2 / 2``; ``low_var_kl``/``k3`` = ``exp(-d) + d - 1`` clamped to ``[-10, 10]``.

A ``+`` suffix (``k1+``, ``k3+``, ``low_var_kl+``, ...) is verl's straight-through variant: the value
is the named estimator's, the gradient is ``k2``'s.  k1 and k3 are unbiased estimates of the KL's
*value* but not of its *gradient*; k2's gradient is (see verl's ``kl_penalty``).  ``k2+``/``mse+`` equal
``k2``.

``full`` is the exact KL over the whole vocabulary, ``sum_v pi(v) (log pi(v) - log ref(v))``; it needs
both policies' full log-distributions ``(..., V)`` instead of the sampled tokens' log-probs (verl
reserves the name but raises ``NotImplementedError``; rlcockpit's trainer computes the
distributions when ``kl_loss_type``/``kl_penalty`` is ``full``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import Tensor

from rlcockpit.algos.core import agg_loss, check_same_shape, masked_mean
from rlcockpit.registry import Registry

__all__ = [
    "KL_CONTROLLERS",
    "KL_ESTIMATORS",
    "AdaptiveKLController",
    "FixedKLController",
    "KLController",
    "apply_kl_penalty",
    "compute_kl_loss",
    "get_kl_controller",
    "kl_needs_full_vocab",
    "kl_penalty",
]

KLEstimator = Callable[[Tensor, Tensor], Tensor]
KL_ESTIMATORS: Registry[KLEstimator] = Registry("kl estimator")


@KL_ESTIMATORS.register("kl", "k1")
def _kl_k1(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    """Unbiased but high variance (can be negative per token)."""
    return log_prob - ref_log_prob


@KL_ESTIMATORS.register("abs")
def _kl_abs(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    return (log_prob - ref_log_prob).abs()


@KL_ESTIMATORS.register("mse", "k2")
def _kl_k2(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    """Biased, low variance, always >= 0."""
    return 0.5 * (log_prob - ref_log_prob).square()


@KL_ESTIMATORS.register("low_var_kl", "k3")
def _kl_k3(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    """Unbiased, low variance, always >= 0; clamped like verl so one wild token cannot dominate."""
    log_ratio = torch.clamp(ref_log_prob - log_prob, min=-20.0, max=20.0)
    kld = torch.exp(log_ratio) - log_ratio - 1.0
    return torch.clamp(kld, min=-10.0, max=10.0)


def _straight_through(base: KLEstimator) -> KLEstimator:
    """``base``'s value with k2's gradient: ``k2 - sg(k2) + sg(base)``."""

    def estimator(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
        backward = _kl_k2(log_prob, ref_log_prob)
        return backward - backward.detach() + base(log_prob, ref_log_prob).detach()

    estimator.__doc__ = f"Straight-through: the value of {base.__name__}, the gradient of k2."
    return estimator


for _base, _names in ((_kl_k1, ("kl+", "k1+")), (_kl_abs, ("abs+",)), (_kl_k3, ("low_var_kl+", "k3+"))):
    KL_ESTIMATORS.add(_names[0], _straight_through(_base), *_names[1:])
KL_ESTIMATORS.add("mse+", _kl_k2, "k2+")  # k2's gradient is already the right one (verl returns k2 itself)

_DISTRIBUTION_ATOL = 1e-3


@KL_ESTIMATORS.register("full")
def _kl_full(log_prob: Tensor, ref_log_prob: Tensor) -> Tensor:
    """Exact ``KL(pi || ref)`` per position from full log-distributions ``(..., V)``; returns ``(...)``."""
    if log_prob.dim() < 2:
        raise ValueError("kl 'full' needs log-distributions over the vocabulary, shape (..., V)")
    total = torch.logsumexp(log_prob.detach().float(), dim=-1)
    if not torch.allclose(total, torch.zeros_like(total), atol=_DISTRIBUTION_ATOL):
        raise ValueError(
            "kl 'full' needs log_softmax over the vocabulary (..., V) for both policies; the last dimension of "
            "log_prob does not sum to probability 1 -- per-token log-probs (bs, T) belong to k1/k2/k3"
        )
    return (log_prob.exp() * (log_prob - ref_log_prob)).sum(dim=-1)


_kl_full.needs_full_vocab = True  # type: ignore[attr-defined]


def kl_needs_full_vocab(name: str) -> bool:
    """True for estimators (``full``) that take log-distributions ``(..., V)`` instead of token log-probs."""
    return bool(getattr(KL_ESTIMATORS.get(name), "needs_full_vocab", False))


def kl_penalty(log_prob: Tensor, ref_log_prob: Tensor, kl_penalty: str = "kl") -> Tensor:
    """Per-token KL estimate between the policy and the reference policy.

    Args:
        log_prob: ``(bs, T)`` log-probs of the sampled tokens under the policy (``(bs, T, V)``
            log-distributions for ``full``).
        ref_log_prob: the same under the reference model.
        kl_penalty: estimator name: ``kl``/``k1``, ``abs``, ``mse``/``k2``, ``low_var_kl``/``k3``, their
            straight-through ``+`` variants, ``full`` (or one registered in :data:`KL_ESTIMATORS`).

    Returns:
        ``(bs, T)`` per-token estimates (unmasked: callers apply the response mask).

    Raises:
        KeyError: unknown estimator (names the closest one).
    """
    return _estimate(log_prob, ref_log_prob, kl_penalty)


def _estimate(log_prob: Tensor, ref_log_prob: Tensor, name: str) -> Tensor:
    fn = KL_ESTIMATORS.get(name)
    check_same_shape(f"kl_penalty({name!r})", "log_prob", log_prob, ref_log_prob=ref_log_prob)
    return fn(log_prob, ref_log_prob)


def compute_kl_loss(
    log_prob: Tensor, ref_log_prob: Tensor, response_mask: Tensor, *, kl_loss_type: str = "low_var_kl",
    loss_agg_mode: str = "token-mean", **scale: Any,
) -> Tensor:
    """Actor-side KL loss (``actor.use_kl_loss``): ``agg(kl_penalty(log_prob, ref_log_prob))`` as a scalar with grad.

    Args: ``log_prob``, ``ref_log_prob`` are ``(bs, T)`` (``(bs, T, V)`` for ``full``), ``response_mask``
    ``(bs, T)``; ``scale`` is :func:`agg_loss`'s ``dp_size`` / ``batch_num_tokens`` / ``global_batch_size`` /
    ``loss_scale_factor``.
    """
    kld = kl_penalty(log_prob, ref_log_prob, kl_loss_type)
    return agg_loss(kld, response_mask, loss_agg_mode, **scale)


# --------------------------------------------------------------------------- controllers


class KLController(Protocol):
    """What the trainer needs from a KL coefficient controller."""

    value: float

    def update(self, current_kl: float, n_steps: int) -> None: ...


KL_CONTROLLERS: Registry[Callable[..., KLController]] = Registry("kl controller")


class FixedKLController:
    """Constant KL coefficient (``algorithm.kl_ctrl.type=fixed``)."""

    def __init__(self, kl_coef: float) -> None:
        self.value = float(kl_coef)

    def update(self, current_kl: float, n_steps: int) -> None:
        """No-op: the coefficient never changes."""

    def __repr__(self) -> str:
        return f"FixedKLController(value={self.value})"


class AdaptiveKLController:
    """Proportional controller steering the measured KL towards ``target_kl`` (Ziegler et al. 2019).

    After each batch: ``e = clip(current_kl / target_kl - 1, -0.2, 0.2)`` and
    ``value *= 1 + e * n_steps / horizon``: KL above target raises the penalty, below lowers it,
    by at most 20% per ``horizon`` samples.
    """

    def __init__(self, init_kl_coef: float, target_kl: float, horizon: int) -> None:
        if target_kl <= 0:
            raise ValueError(f"AdaptiveKLController: target_kl must be > 0, got {target_kl}")
        if horizon <= 0:
            raise ValueError(f"AdaptiveKLController: horizon must be > 0, got {horizon}")
        self.value = float(init_kl_coef)
        self.target = float(target_kl)
        self.horizon = int(horizon)

    def update(self, current_kl: float, n_steps: int) -> None:
        """Adjust ``value`` after a batch of ``n_steps`` samples whose mean KL was ``current_kl``."""
        error = min(max(float(current_kl) / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon

    def __repr__(self) -> str:
        return f"AdaptiveKLController(value={self.value}, target={self.target}, horizon={self.horizon})"


KL_CONTROLLERS.add("fixed", lambda kl_coef, target_kl, horizon: FixedKLController(kl_coef))
KL_CONTROLLERS.add("adaptive", AdaptiveKLController)


def get_kl_controller(
    type: str = "fixed", kl_coef: float = 0.001, target_kl: float = 0.1, horizon: int = 10000
) -> KLController:
    """Build the controller named by ``algorithm.kl_ctrl.type`` (``fixed`` | ``adaptive``).

    Raises:
        KeyError: unknown type (names the closest one).
    """
    factory = KL_CONTROLLERS.get(type)
    return factory(kl_coef, target_kl, horizon)


def apply_kl_penalty(
    token_level_scores: Tensor,
    old_log_prob: Tensor,
    ref_log_prob: Tensor,
    response_mask: Tensor,
    kl_ctrl: KLController,
    kl_penalty: str = "kl",
) -> tuple[Tensor, dict[str, float]]:
    """Turn scores into rewards with an in-reward KL penalty: ``rewards = scores - beta * kl``.

    The controller is *not* updated here; the trainer calls
    ``kl_ctrl.update(metrics["actor/reward_kl_penalty"], n_steps=batch_size)`` as verl does.

    Args:
        token_level_scores: ``(bs, T)`` reward-model / rule scores.
        old_log_prob: ``(bs, T)`` rollout policy log-probs.
        ref_log_prob: ``(bs, T)`` reference policy log-probs.
        response_mask: ``(bs, T)``.
        kl_ctrl: gives ``beta = kl_ctrl.value``.
        kl_penalty: estimator name (see :func:`kl_penalty`).

    Returns:
        ``(token_level_rewards (bs, T), metrics)`` with ``actor/reward_kl_penalty`` = mean over
        sequences of the per-sequence mean KL, and ``actor/reward_kl_penalty_coeff`` = ``beta``.
    """
    per_token = old_log_prob[..., 0] if kl_needs_full_vocab(kl_penalty) else old_log_prob
    check_same_shape("apply_kl_penalty", "token_level_scores", token_level_scores, response_mask=response_mask,
                     old_log_prob=per_token)
    kld = _estimate(old_log_prob, ref_log_prob, kl_penalty)
    kld = torch.where(response_mask != 0, kld, torch.zeros_like(kld)) * response_mask.to(kld.dtype)
    beta = float(kl_ctrl.value)
    rewards = token_level_scores - beta * kld
    current_kl = float(masked_mean(kld, response_mask, dim=-1).mean())
    return rewards, {"actor/reward_kl_penalty": current_kl, "actor/reward_kl_penalty_coeff": beta}
