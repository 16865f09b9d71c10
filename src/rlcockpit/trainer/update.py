"""The PPO-style actor and critic updates: epochs x mini-batches x micro-batches (verl's layout).

Non-finite losses or gradients do not reach the optimizer: that mini-batch's update is skipped and
counted (``actor/nonfinite_skipped``); the loop stops the run after too many in a row.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch

from rlcockpit.algos import agg_loss, compute_kl_loss, compute_policy_loss, compute_value_loss, masked_mean
from rlcockpit.trainer.config import Config, micro_batch_size
from rlcockpit.trainer.models import forward_logprobs, forward_values

Batch = dict[str, torch.Tensor]


def _chunks(idx: torch.Tensor, size: int) -> list[torch.Tensor]:
    return [idx[i: i + size] for i in range(0, len(idx), size)]


def _select(batch: Batch, idx: torch.Tensor) -> Batch:
    return {k: v[idx] for k, v in batch.items()}


def update_actor(cfg: Config, actor: Any, optimizer: torch.optim.Optimizer, batch: Batch,
                 autocast: Callable[[], contextlib.AbstractContextManager]) -> dict[str, float]:
    """One training step of the policy. ``batch`` needs input_ids, attention_mask, responses,
    response_mask, advantages, and old_log_probs unless the update is a single on-policy pass
    (then the log-probs of this very forward pass, detached, are the old ones: no extra forward)."""
    a = cfg.actor
    bs = batch["responses"].size(0)
    T = batch["responses"].size(1)
    mini = max(1, min(bs, a.ppo_mini_batch_size * cfg.rollout.n))
    micro = min(mini, micro_batch_size(cfg) or mini)
    sums: dict[str, list[float]] = defaultdict(list)
    skipped, stopped_early = 0, False
    params = [p for p in actor.parameters() if p.requires_grad]
    actor.train()
    for epoch in range(a.ppo_epochs):
        for mb_idx in _chunks(torch.arange(bs), mini):
            optimizer.zero_grad(set_to_none=True)
            finite = True
            kls = []
            for mc_idx in _chunks(mb_idx, micro):
                mb = _select(batch, mc_idx)
                mask = mb["response_mask"].float()
                with autocast():
                    logp, ent = forward_logprobs(actor, mb["input_ids"], mb["attention_mask"], T,
                                                 temperature=cfg.rollout.temperature,
                                                 with_entropy="grad" if a.entropy_coeff != 0 else "nograd",
                                                 share_prefix=a.share_prefix)
                old = mb["old_log_probs"] if "old_log_probs" in mb else logp.detach()
                pg = compute_policy_loss(old, logp, mb["advantages"], mask, clip_ratio=a.clip_ratio,
                                         clip_ratio_low=a.clip_ratio_low, clip_ratio_high=a.clip_ratio_high,
                                         clip_ratio_c=a.clip_ratio_c, loss_agg_mode=a.loss_agg_mode,
                                         loss_name=a.policy_loss.loss_mode, norm_len=T)
                loss = pg["pg_loss"]
                if a.entropy_coeff != 0:
                    loss = loss - a.entropy_coeff * agg_loss(ent, mask, a.loss_agg_mode, norm_len=T)
                if a.use_kl_loss and "ref_log_prob" in mb:
                    kl_loss = compute_kl_loss(logp, mb["ref_log_prob"], mask, kl_loss_type=a.kl_loss_type,
                                              loss_agg_mode=a.loss_agg_mode, norm_len=T)
                    loss = loss + a.kl_loss_coef * kl_loss
                    sums["actor/kl_loss"].append(float(kl_loss.detach()))
                if not torch.isfinite(loss):
                    finite = False
                    break
                (loss * (len(mc_idx) / len(mb_idx))).backward()
                sums["actor/pg_loss"].append(float(pg["pg_loss"].detach()))
                sums["actor/entropy"].append(float(masked_mean(ent.detach(), mask)))
                for k in ("ppo_kl", "pg_clipfrac", "pg_clipfrac_lower"):
                    sums[f"actor/{k}"].append(float(pg[k]))
                kls.append(float(pg["ppo_kl"]))
            grad_norm = torch.nn.utils.clip_grad_norm_(params, a.grad_clip) if finite else torch.tensor(float("nan"))
            if not finite or not torch.isfinite(grad_norm):
                optimizer.zero_grad(set_to_none=True)
                skipped += 1
                continue
            optimizer.step()
            sums["actor/grad_norm"].append(float(grad_norm))
            if a.target_kl is not None and a.early_stopping and kls and abs(sum(kls) / len(kls)) > a.target_kl:
                stopped_early = True
                break
        if stopped_early:
            sums["actor/early_stop_epoch"].append(float(epoch))
            break
    optimizer.zero_grad(set_to_none=True)
    metrics = {k: sum(v) / len(v) for k, v in sums.items() if v}
    metrics["actor/nonfinite_skipped"] = float(skipped)
    metrics["actor/lr"] = float(optimizer.param_groups[0]["lr"])
    return metrics


def update_critic(cfg: Config, critic: Any, optimizer: torch.optim.Optimizer, batch: Batch,
                  autocast: Callable[[], contextlib.AbstractContextManager]) -> dict[str, float]:
    c = cfg.critic
    bs, T = batch["responses"].shape
    mini = max(1, min(bs, cfg.actor.ppo_mini_batch_size * cfg.rollout.n))
    micro = min(mini, micro_batch_size(cfg) or mini)
    sums: dict[str, list[float]] = defaultdict(list)
    critic.train()
    for _ in range(c.ppo_epochs or cfg.actor.ppo_epochs):
        for mb_idx in _chunks(torch.arange(bs), mini):
            optimizer.zero_grad(set_to_none=True)
            ok = True
            for mc_idx in _chunks(mb_idx, micro):
                mb = _select(batch, mc_idx)
                with autocast():
                    vpreds = forward_values(critic, mb["input_ids"], mb["attention_mask"], T)
                vf_loss, clipfrac = compute_value_loss(vpreds, mb["returns"], mb["values"], mb["response_mask"].float(),
                                                       cliprange_value=c.cliprange_value, loss_agg_mode=c.loss_agg_mode,
                                                       norm_len=T)
                if not torch.isfinite(vf_loss):
                    ok = False
                    break
                (vf_loss * (len(mc_idx) / len(mb_idx))).backward()
                sums["critic/vf_loss"].append(float(vf_loss.detach()))
                sums["critic/vf_clipfrac"].append(float(clipfrac))
            norm = torch.nn.utils.clip_grad_norm_(critic.parameters(), c.grad_clip) if ok else None
            if norm is None or not math.isfinite(float(norm)):
                optimizer.zero_grad(set_to_none=True)
                continue
            optimizer.step()
            sums["critic/grad_norm"].append(float(norm))
    optimizer.zero_grad(set_to_none=True)
    metrics = {k: sum(v) / len(v) for k, v in sums.items() if v}
    metrics["critic/lr"] = float(optimizer.param_groups[0]["lr"])
    return metrics
