"""The PPO-style actor and critic updates: epochs x mini-batches x micro-batches (verl's layout).

Micro-batch losses are *summed* into the mini-batch gradient, each aggregated with the mini-batch's
global counts (verl's ``global_batch_info``: ``batch_num_tokens`` for ``token-mean``,
``global_batch_size`` for the ``seq-mean-*`` modes, ``loss_scale_factor`` for Dr.GRPO's constant): the
gradient is then the same however the mini-batch is split (``actor.ppo_micro_batch_size``).

Entropy, as verl 0.9 logs it: ``actor/entropy`` is the policy's entropy *before* the update, aggregated over
the whole batch with ``actor.loss_agg_mode`` (verl's ``agg_loss`` in ``ray_trainer``, from the old-log-prob
pass: ``old_entropy`` when that pass ran, else the update's own first pass, which then is the old policy);
``actor/entropy_loss`` is the entropy term of the loss (``entropy_coeff != 0`` or ``calculate_entropy``),
each micro-batch's part with the mini-batch's counts, summed per mini-batch and averaged over mini-batches
(verl's ``ppo_loss`` with ``AggregationType.SUM``). The update's forward skips the entropy when neither
needs it: the metric must not cost another pass over the vocabulary.

Non-finite losses or gradients do not reach the optimizer: that mini-batch's update is skipped and
counted (``actor/nonfinite_skipped``); the loop stops the run after too many in a row.

Data-parallel (``dist``, :mod:`rlcockpit.trainer.distributed.group`): every rank holds the whole batch, takes
its share of each mini-batch, aggregates with the whole mini-batch's counts and sums gradients over the
ranks before the step, so the update is the single-process one.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch

from rlcockpit.algos import (
    POLICY_LOSSES,
    accepted_params,
    agg_loss,
    compute_kl_loss,
    compute_policy_loss,
    compute_value_loss,
    kl_needs_full_vocab,
    masked_mean,
)
from rlcockpit.trainer.algo_args import loss_scale_factor, policy_loss_kwargs, policy_loss_name
from rlcockpit.trainer.config import Config, micro_batch_size
from rlcockpit.trainer.distributed.group import SINGLE, Dist
from rlcockpit.trainer.models import forward_policy, forward_values, reference_context
from rlcockpit.trainer.observe.flops import mfu
from rlcockpit.trainer.observe.metrics import variance_proxy_metrics, worker_memory_metrics
from rlcockpit.trainer.update.packing import forward_packed
from rlcockpit.trainer.vision.inputs import vl_scoring_pass

Batch = dict[str, torch.Tensor]


def _chunks(idx: torch.Tensor, size: int) -> list[torch.Tensor]:
    return [idx[i: i + size] for i in range(0, len(idx), size)]


def mini_batch_size(cfg: Config, bs: int) -> int:
    """Rows per mini-batch: ``ppo_mini_batch_size`` prompts x ``rollout.n`` responses (verl's)."""
    return max(1, min(bs, cfg.actor.ppo_mini_batch_size * cfg.rollout.n))


def rank_rows(cfg: Config, bs: int, dist: Dist) -> list[torch.Tensor]:
    """The batch rows each data-parallel rank trains on: its share of every mini-batch."""
    minis = _chunks(torch.arange(bs), mini_batch_size(cfg, bs))
    out = []
    for r in range(dist.world_size):
        out.append(torch.cat([m[slice(*dist.bounds(len(m), rank=r))] for m in minis]))
    return out


def _micro(cfg: Config, mini: int, dist: Dist) -> int:
    """Per-rank micro-batch: ``ppo_micro_batch_size_per_gpu``, or verl's global form split over the ranks."""
    size = micro_batch_size(cfg)
    if size is not None and cfg.actor.ppo_micro_batch_size_per_gpu is None:
        size = max(1, size // dist.world_size)
    return min(mini, size or mini)


def _forward(cfg: Config, mb: Batch) -> Any:
    """The scoring pass: packed rows with ``model.use_remove_padding``, else the padded one (same log-probs);
    a micro-batch with images scores with them (vision/inputs.py)."""
    return vl_scoring_pass(mb) or (forward_packed if cfg.model.use_remove_padding else forward_policy)


def _select(batch: Batch, idx: torch.Tensor) -> Batch:
    return {k: v[idx] for k, v in batch.items()}


def global_batch_info(response_mask: torch.Tensor, scale_len: int) -> dict[str, float]:
    """verl's ``global_batch_info`` of one mini-batch: its valid tokens and non-empty sequences."""
    m = response_mask.float()
    return {"batch_num_tokens": float(m.sum()), "global_batch_size": float((m.sum(-1) > 0).sum()),
            "loss_scale_factor": float(scale_len)}


def _takes_global_info(loss_name: str) -> bool:
    """A loss that aggregates with ``global_batch_info`` gives micro-batch partial sums; one that does not
    gives its own micro-batch mean, which the update weights by the micro-batch's share instead."""
    params = accepted_params(POLICY_LOSSES.get(loss_name))
    return params is None or "global_batch_info" in params


def _kl_loss(cfg: Config, actor: Any, ref: Any, mb: Batch, out: dict[str, torch.Tensor], mask: torch.Tensor,
             info: dict[str, float], autocast: Callable[[], contextlib.AbstractContextManager]) -> torch.Tensor:
    a = cfg.actor
    if kl_needs_full_vocab(a.kl_loss_type):  # the reference's full distribution, for this micro-batch only
        model, ctx = reference_context(actor, ref)
        with torch.no_grad(), ctx, autocast():
            ref_full = _forward(cfg, mb)(model, mb["input_ids"], mb["attention_mask"], mask.shape[1], full_log_probs=True,
                                      temperature=cfg.rollout.temperature, share_prefix=a.share_prefix)
        return compute_kl_loss(out["full_log_probs"], ref_full["full_log_probs"], mask, kl_loss_type=a.kl_loss_type,
                               loss_agg_mode=a.loss_agg_mode, **info)
    return compute_kl_loss(out["log_probs"], mb["ref_log_prob"], mask, kl_loss_type=a.kl_loss_type,
                           loss_agg_mode=a.loss_agg_mode, **info)


def entropy_mode(cfg: Config, batch: Batch, epoch: int) -> str:
    """What the update's forward computes of the entropy (``grad|nograd|none``): a gradient for the bonus,
    the value for ``actor/entropy_loss`` (``calculate_entropy``) or, in the first epoch, for ``actor/entropy``
    when the old-policy pass did not compute it; nothing otherwise (no vocabulary-wide work)."""
    a = cfg.actor
    if a.entropy_coeff != 0:
        return "grad"
    return "nograd" if a.calculate_entropy or (epoch == 0 and "old_entropy" not in batch) else "none"


def _micro_step(cfg: Config, actor: Any, ref: Any, mb: Batch, info: dict[str, float], share: float,
                autocast: Callable[[], contextlib.AbstractContextManager], with_entropy: str = "nograd",
                entropy_info: dict[str, float] | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of one micro-batch (already scaled to its part of the mini-batch) and its metrics.
    ``entropy_info``: the whole batch's counts when this pass also gives ``actor/entropy`` (its part of it)."""
    a = cfg.actor
    mask = mb["response_mask"].float()
    T = mask.shape[1]
    full_kl = a.use_kl_loss and kl_needs_full_vocab(a.kl_loss_type)
    with autocast():
        out = _forward(cfg, mb)(actor, mb["input_ids"], mb["attention_mask"], T, temperature=cfg.rollout.temperature,
                             with_entropy=with_entropy, share_prefix=a.share_prefix, full_log_probs=full_kl)
    logp, ent = out["log_probs"], out.get("entropy")
    old = mb["old_log_probs"] if "old_log_probs" in mb else logp.detach()
    pg = compute_policy_loss(old, logp, mb["advantages"], mask, loss_name=policy_loss_name(cfg),
                             global_batch_info=info, rollout_is_weights=mb.get("rollout_is_weights"),
                             **policy_loss_kwargs(cfg))
    loss = pg["pg_loss"] * share
    m: dict[str, float] = {"actor/pg_loss": float(loss.detach())}
    if entropy_info is not None and ent is not None:
        m["actor/entropy"] = float(agg_loss(ent.detach(), mask, a.loss_agg_mode, **entropy_info))
    if ent is not None and (a.entropy_coeff != 0 or a.calculate_entropy):
        entropy_loss = agg_loss(ent, mask, a.loss_agg_mode, **info)
        loss = loss - a.entropy_coeff * entropy_loss
        m["actor/entropy_loss"] = float(entropy_loss.detach())
    if a.use_kl_loss and ("ref_log_prob" in mb or full_kl):
        kl_loss = _kl_loss(cfg, actor, ref, mb, out, mask, info, autocast)
        loss = loss + a.kl_loss_coef * kl_loss
        m["actor/kl_loss"] = float(kl_loss.detach())
    for key, value in pg.items():
        if key != "pg_loss":
            m[key if "/" in key else f"actor/{key}"] = float(value)
    m["actor/loss"] = float(loss.detach())  # verl: the whole objective (policy + KL + entropy terms)
    return loss, m


def old_policy_entropy(cfg: Config, batch: Batch) -> float | None:
    """verl's ``actor/entropy``: the old-log-prob pass's entropy over the whole batch, ``agg_loss`` with
    ``actor.loss_agg_mode`` (and Dr.GRPO's constant), before rollout correction rejects any token
    (``entropy_mask``); ``None`` when that pass did not compute it."""
    if "old_entropy" not in batch:
        return None
    mask = batch.get("entropy_mask", batch["response_mask"]).float()
    return float(agg_loss(batch["old_entropy"], mask, cfg.actor.loss_agg_mode,
                          loss_scale_factor=loss_scale_factor(cfg)))


# summed over the micro-batches of a mini-batch (partial sums of one loss), the rest are averaged
_SUMMED = ("actor/pg_loss", "actor/kl_loss", "actor/entropy_loss", "actor/entropy", "actor/loss")


def update_actor(cfg: Config, actor: Any, optimizer: torch.optim.Optimizer, batch: Batch,
                 autocast: Callable[[], contextlib.AbstractContextManager], ref: Any = None,
                 dist: Dist = SINGLE) -> dict[str, float]:
    """One training step of the policy. ``batch`` needs input_ids, attention_mask, responses,
    response_mask, advantages, and old_log_probs unless the update is a single on-policy pass
    (then the log-probs of this very forward pass, detached, are the old ones: no extra forward).
    ``ref`` is the frozen reference model (``None`` with LoRA), used by the exact ``full`` KL loss.
    ``dist``: the data-parallel group (this rank trains on its share of each mini-batch)."""
    a = cfg.actor
    bs = batch["responses"].size(0)
    mini = mini_batch_size(cfg, bs)
    micro = _micro(cfg, mini, dist)
    global_ok = _takes_global_info(policy_loss_name(cfg))
    scale_len = loss_scale_factor(cfg)
    sums: dict[str, list[float]] = defaultdict(list)
    skipped, stopped_early = 0, False
    params = [p for p in actor.parameters() if p.requires_grad]
    old_entropy = old_policy_entropy(cfg, batch)
    # without the old pass's entropy, epoch 0's forwards give actor/entropy: their parts, with whole-batch counts
    entropy_info = global_batch_info(batch["response_mask"], scale_len) if old_entropy is None else None
    entropy_parts: list[float] = []
    mfus: list[float | None] = []
    seqlens = batch["attention_mask"].sum(-1).tolist()  # tokens per row, for perf/mfu/actor
    minis = _chunks(torch.arange(bs), mini)
    actor.train()
    for epoch in range(a.ppo_epochs):
        with_entropy = entropy_mode(cfg, batch, epoch)
        for mb_idx in minis:
            t_mini = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            info = global_batch_info(batch["response_mask"][mb_idx], scale_len)
            finite, per_mini = True, defaultdict(list)
            for mc_idx in _chunks(dist.part(mb_idx), micro):
                share = 1.0 if global_ok else len(mc_idx) / len(mb_idx)
                loss, m = _micro_step(cfg, actor, ref, _select(batch, mc_idx), info, share, autocast, with_entropy,
                                      entropy_info if epoch == 0 else None)
                if not torch.isfinite(loss):
                    finite = False
                    break
                loss.backward()
                for k, v in m.items():
                    per_mini[k].append(v)
            finite = dist.all_true(finite)  # one rank's non-finite loss skips the step on every rank
            if finite:
                dist.all_reduce_grads(params)
            grad_norm = torch.nn.utils.clip_grad_norm_(params, a.grad_clip) if finite else torch.tensor(float("nan"))
            if not finite or not torch.isfinite(grad_norm):
                optimizer.zero_grad(set_to_none=True)
                skipped += 1
                continue
            optimizer.step()
            mfus.append(_mini_batch_mfu(actor, seqlens, mb_idx, time.perf_counter() - t_mini, dist))
            reduced = dist.reduce_metrics(per_mini, _SUMMED)
            if "actor/entropy" in reduced:
                entropy_parts.append(reduced.pop("actor/entropy"))
            for k, v in reduced.items():
                sums[k].append(v)
            sums["actor/grad_norm"].append(float(grad_norm))
            kl = reduced.get("actor/ppo_kl")
            if a.target_kl is not None and a.early_stopping and kl is not None and abs(kl) > a.target_kl:
                stopped_early = True
                break
        if stopped_early:
            sums["actor/early_stop_epoch"].append(float(epoch))
            break
    optimizer.zero_grad(set_to_none=True)
    metrics = {k: sum(v) / len(v) for k, v in sums.items() if v}
    if old_entropy is not None:
        metrics["actor/entropy"] = old_entropy
    elif entropy_parts and len(entropy_parts) == len(minis):  # every row of epoch 0 was scored (none skipped)
        metrics["actor/entropy"] = sum(entropy_parts)
    metrics["actor/nonfinite_skipped"] = float(skipped)
    metrics["actor/lr"] = float(optimizer.param_groups[0]["lr"])
    metrics.update(_mean_mfu("perf/mfu/actor", mfus))
    metrics.update(worker_memory_metrics("actor", _device(actor)))
    metrics.update(variance_proxy_metrics(batch, metrics.get("actor/grad_norm")))  # with sum_pi_squared, as verl
    return metrics


def _device(model: Any) -> torch.device:
    return next(model.parameters()).device


def _mini_batch_mfu(model: Any, seqlens: list[int], mb_idx: torch.Tensor, seconds: float,
                    dist: Dist) -> float | None:
    """verl's per-mini-batch MFU: the whole mini-batch's sequence lengths (every rank's), this rank's time.
    ``seqlens``: the batch's, read to the host once per update (no device sync per mini-batch)."""
    return mfu(model, [seqlens[i] for i in mb_idx.tolist()], seconds, _device(model), world_size=dist.world_size)


def _mean_mfu(key: str, parts: list[float | None]) -> dict[str, float]:
    """The mean over the mini-batches that stepped (verl's ``reduce_metrics``); nothing where verl's estimate
    is undefined (an architecture or device its formula and table do not cover)."""
    if not parts or any(p is None for p in parts):
        return {}
    return {key: sum(parts) / len(parts)}  # type: ignore[arg-type]


def update_critic(cfg: Config, critic: Any, optimizer: torch.optim.Optimizer, batch: Batch,
                  autocast: Callable[[], contextlib.AbstractContextManager], dist: Dist = SINGLE) -> dict[str, float]:
    c = cfg.critic
    bs, T = batch["responses"].shape
    mini = mini_batch_size(cfg, bs)
    micro = _micro(cfg, mini, dist)
    scale_len = loss_scale_factor(cfg)
    sums: dict[str, list[float]] = defaultdict(list)
    mfus: list[float | None] = []
    seqlens = batch["attention_mask"].sum(-1).tolist()  # tokens per row, for perf/mfu/critic
    critic.train()
    for _ in range(c.ppo_epochs or cfg.actor.ppo_epochs):
        for mb_idx in _chunks(torch.arange(bs), mini):
            t_mini = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            info = global_batch_info(batch["response_mask"][mb_idx], scale_len)
            ok, vf_total, clipfracs, vpred_means = True, 0.0, [], []
            for mc_idx in _chunks(dist.part(mb_idx), micro):
                mb = _select(batch, mc_idx)
                with autocast():
                    vpreds = forward_values(critic, mb["input_ids"], mb["attention_mask"], T)
                vf_loss, clipfrac = compute_value_loss(vpreds, mb["returns"], mb["values"], mb["response_mask"].float(),
                                                       cliprange_value=c.cliprange_value, loss_agg_mode=c.loss_agg_mode,
                                                       **info)
                if not torch.isfinite(vf_loss):
                    ok = False
                    break
                vf_loss.backward()
                vf_total += float(vf_loss.detach())
                clipfracs.append(float(clipfrac))
                vpred_means.append(float(masked_mean(vpreds.detach(), mb["response_mask"].float())))  # verl's
            ok = dist.all_true(ok)
            if ok:
                dist.all_reduce_grads([p for p in critic.parameters() if p.requires_grad])
            norm = torch.nn.utils.clip_grad_norm_(critic.parameters(), c.grad_clip) if ok else None
            if norm is None or not math.isfinite(float(norm)):
                optimizer.zero_grad(set_to_none=True)
                continue
            optimizer.step()
            mfus.append(_mini_batch_mfu(critic, seqlens, mb_idx, time.perf_counter() - t_mini, dist))
            # verl's critic/loss is the summed micro-batch objective, which for the critic is the value loss
            reduced = dist.reduce_metrics({"critic/vf_loss": [vf_total], "critic/loss": [vf_total],
                                           "critic/vf_clipfrac": clipfracs, "critic/vpred_mean": vpred_means},
                                          ("critic/vf_loss", "critic/loss"))
            for key in ("critic/vf_loss", "critic/loss", "critic/vf_clipfrac", "critic/vpred_mean"):
                sums[key].append(reduced[key])
            sums["critic/grad_norm"].append(float(norm))
    optimizer.zero_grad(set_to_none=True)
    metrics = {k: sum(v) / len(v) for k, v in sums.items() if v}
    metrics["critic/lr"] = float(optimizer.param_groups[0]["lr"])
    metrics.update(_mean_mfu("perf/mfu/critic", mfus))
    metrics.update(worker_memory_metrics("critic", _device(critic)))
    return metrics
