"""Collecting experience: sample n responses per prompt, score them, apply DAPO's filters; validation.

Scores are per sequence (rule rewards, reward models); the loop turns them into token-level rewards.
With ``algorithm.filter_groups.enable`` (DAPO dynamic sampling, verl's recipe/dapo trainer), groups whose n
responses all got the same value of ``algorithm.filter_groups.metric`` carry no learning signal under group
baselines, so they are dropped and more prompts are sampled until ``data.train_batch_size`` prompts are kept;
past ``max_num_gen_batches`` generation batches (``<= 0``: no limit) it raises, as verl does.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from rlcockpit.algos import dynamic_sampling_mask, overlong_penalty
from rlcockpit.trainer.algo_args import wants_rollout_log_probs
from rlcockpit.trainer.config import Config
from rlcockpit.trainer.data import PromptLoader, PromptRow
from rlcockpit.trainer.observe.filter_metric import filter_metric_values
from rlcockpit.trainer.observe.profiling import phase
from rlcockpit.trainer.observe.val_metrics import validation_metrics
from rlcockpit.trainer.reward.rewards import RewardManager, extra_metrics
from rlcockpit.trainer.rollout.engine import RolloutEngine, RolloutOutput, SamplingParams
from rlcockpit.trainer.vision.inputs import vl_batch


@dataclass
class Experience:
    rows: list[PromptRow]  # one per response (prompts repeated n times)
    uids: np.ndarray  # group id per response
    out: RolloutOutput
    texts: list[str]
    scores: torch.Tensor  # (bs,) final sequence scores (incl. overlong penalty)
    baselines: torch.Tensor | None = None  # (bs,) ReMax greedy-rollout scores
    metrics: dict[str, float] = field(default_factory=dict)
    extras: list[Any] = field(default_factory=list)  # per response: the reward function's extra dict or None
    raw_scores: torch.Tensor | None = None  # (bs,) the reward function's scores before the overlong penalty


def sampling_params(cfg: Config, *, greedy: bool = False) -> SamplingParams:
    r = cfg.rollout
    return SamplingParams(max_new_tokens=cfg.data.max_response_length, temperature=r.temperature,
                          top_p=r.top_p, top_k=r.top_k, greedy=greedy or not r.do_sample,
                          logprobs=not greedy and wants_rollout_log_probs(cfg))  # not for remax's baseline


def val_sampling_params(cfg: Config) -> SamplingParams:
    """``actor_rollout_ref.rollout.val_kwargs``: greedy unless do_sample with a temperature > 0, as verl."""
    v = cfg.rollout.val_kwargs
    greedy = not v.do_sample or v.temperature <= 0
    return SamplingParams(max_new_tokens=cfg.data.max_response_length, temperature=v.temperature or 1.0,
                          top_p=v.top_p, top_k=v.top_k, greedy=greedy)


def generate_rows(engine: RolloutEngine, rows: list[PromptRow], params: SamplingParams) -> RolloutOutput:
    """Sample the rows' prompts; rows with images hand their image tensors to the engine too (vision/inputs.py)."""
    mm = vl_batch(rows)
    return engine.generate([r.input_ids for r in rows], params, **({"mm": mm} if mm else {}))


def decode(tokenizer: Any, out: RolloutOutput) -> list[str]:
    ids = (out.responses * out.response_mask).tolist()
    lengths = out.response_mask.sum(-1).tolist()
    return tokenizer.batch_decode([row[:n] for row, n in zip(ids, lengths)], skip_special_tokens=True)


def pad_cat(outs: list[RolloutOutput], pad_id: int) -> RolloutOutput:
    """Concatenate rollouts of different widths (prompts are left-padded, responses right-padded)."""
    P = max(o.prompts.size(1) for o in outs)
    T = max(o.responses.size(1) for o in outs)

    def left(x: torch.Tensor, w: int, v: int) -> torch.Tensor:
        return torch.nn.functional.pad(x, (w - x.size(1), 0), value=v)

    def right(x: torch.Tensor, w: int, v: int) -> torch.Tensor:
        return torch.nn.functional.pad(x, (0, w - x.size(1)), value=v)

    logps = None
    if all(o.rollout_log_probs is not None for o in outs):
        logps = torch.cat([right(o.rollout_log_probs, T, 0.0) for o in outs])
    return RolloutOutput(torch.cat([left(o.prompts, P, pad_id) for o in outs]),
                         torch.cat([left(o.prompt_mask, P, 0) for o in outs]),
                         torch.cat([right(o.responses, T, pad_id) for o in outs]),
                         torch.cat([right(o.response_mask, T, 0) for o in outs]), logps)


def _select(exp: Experience, keep: torch.Tensor) -> Experience:
    idx = keep.nonzero().squeeze(-1)
    o = exp.out
    return Experience(
        rows=[exp.rows[i] for i in idx.tolist()], uids=exp.uids[idx.numpy()],
        out=RolloutOutput(o.prompts[idx], o.prompt_mask[idx], o.responses[idx], o.response_mask[idx],
                          None if o.rollout_log_probs is None else o.rollout_log_probs[idx]),
        texts=[exp.texts[i] for i in idx.tolist()], scores=exp.scores[idx],
        baselines=None if exp.baselines is None else exp.baselines[idx],
        extras=[exp.extras[i] for i in idx.tolist()] if exp.extras else [],
        raw_scores=None if exp.raw_scores is None else exp.raw_scores[idx])


def generate_once(cfg: Config, engine: RolloutEngine, tokenizer: Any, reward: RewardManager,
                  prompts: list[PromptRow], uid_offset: int, timing: dict[str, float]) -> Experience:
    n = cfg.rollout.n
    rows = [r for r in prompts for _ in range(n)]
    uids = np.repeat(np.arange(uid_offset, uid_offset + len(prompts)), n)
    t0 = time.perf_counter()
    with phase("timing_s/gen"):  # a named range in profiler traces
        out = generate_rows(engine, rows, sampling_params(cfg))
    texts = decode(tokenizer, out)
    baselines = None
    if cfg.algorithm.adv_estimator == "remax":  # greedy rollout of each prompt = the baseline
        greedy = generate_rows(engine, prompts, sampling_params(cfg, greedy=True))
        base_scores, _ = reward(prompts, decode(tokenizer, greedy))
        baselines = torch.tensor(base_scores, dtype=torch.float32).repeat_interleave(n)
    timing["gen"] = timing.get("gen", 0.0) + time.perf_counter() - t0
    t0 = time.perf_counter()
    raw_scores, extras = reward(rows, texts)
    raw = torch.tensor(raw_scores, dtype=torch.float32)
    scores, extras = apply_overlong(cfg, raw, extras, out.response_mask)
    timing["reward"] = timing.get("reward", 0.0) + time.perf_counter() - t0
    return Experience(rows, uids, out, texts, scores, baselines, metrics=extra_metrics(extras), extras=extras,
                      raw_scores=raw)


def apply_overlong(cfg: Config, raw: torch.Tensor, extras: list[Any],
                   response_mask: torch.Tensor) -> tuple[torch.Tensor, list[Any]]:
    """Scores with DAPO's overlong penalty (``reward.overlong_buffer.enable``), and the extras with verl's
    ``overlong_buffer_cfg.log`` keys: each response's ``overlong_reward`` (the penalty, <= 0) and
    ``overlong`` (whether it was penalised), as verl's DAPO reward manager puts them in reward_extra_info (there
    a float result's info is ``{"acc": score}``, which is what a float result gets here then too)."""
    ob = cfg.reward.overlong_buffer
    if not ob.enable:
        return raw, extras
    penalty = overlong_penalty(response_mask.sum(-1).float().cpu(), ob.max_resp_len or cfg.data.max_response_length,
                               ob.len, ob.penalty_factor)
    if ob.log:
        extras = [{**(ex if isinstance(ex, dict) else {"acc": s}), "overlong_reward": r, "overlong": r < 0}
                  for ex, s, r in zip(extras, raw.tolist(), penalty.tolist())]
    return raw + penalty, extras


class DynamicSamplingExhausted(ValueError):
    """``max_num_gen_batches`` generation batches did not give ``train_batch_size`` informative prompts
    (verl's DAPO trainer raises a ValueError here too)."""


def collect(cfg: Config, engine: RolloutEngine, tokenizer: Any, reward: RewardManager, loader: PromptLoader,
            step: int, timing: dict[str, float]) -> Experience:
    """One step's experience. With dynamic sampling: generation batches of ``data.gen_batch_size`` prompts
    until ``train_batch_size`` prompts whose filter metric varies within the group are kept (verl's loop;
    ``train/num_gen_batches`` counts the batches), then trimmed to ``train_batch_size`` whole groups."""
    bsz = cfg.data.train_batch_size
    fg = cfg.algorithm.filter_groups
    gen_bsz = cfg.data.gen_batch_size or bsz if fg.enable else bsz
    exp = generate_once(cfg, engine, tokenizer, reward, loader.next_batch(gen_bsz), step * 1_000_000, timing)
    if not fg.enable:
        return exp
    kept: list[Experience] = []
    n_kept_groups, rounds, total_groups = 0, 0, 0
    while True:
        rounds += 1
        total_groups += len(set(exp.uids.tolist()))
        keep = dynamic_sampling_mask(filter_metric_values(cfg, exp), exp.uids)
        if keep.any():
            part = _select(exp, keep)
            kept.append(part)
            n_kept_groups += len(set(part.uids.tolist()))
        if n_kept_groups >= bsz:
            break
        if 0 < fg.max_num_gen_batches <= rounds:
            raise DynamicSamplingExhausted(
                f"step {step}: {rounds} generation batches (algorithm.filter_groups.max_num_gen_batches="
                f"{fg.max_num_gen_batches}) kept {n_kept_groups} of data.train_batch_size={bsz} prompts whose "
                f"{fg.metric or 'seq_reward'!r} differs within the group: the data may be too easy or too hard "
                "for the model; set algorithm.filter_groups.max_num_gen_batches=0 to keep generating (no limit)")
        print(f"[rlcockpit] step {step}: dynamic sampling kept {n_kept_groups} < data.train_batch_size={bsz} "
              f"prompts after {rounds} generation batch(es); generating more")
        exp = generate_once(cfg, engine, tokenizer, reward, loader.next_batch(gen_bsz),
                            step * 1_000_000 + rounds * gen_bsz, timing)
    metrics = {"train/num_gen_batches": float(rounds), "train/kept_group_ratio": n_kept_groups / max(1, total_groups)}
    # trim to the batch size in whole groups, as verl does
    merged_rows, merged_uids, outs, texts, scores, raws, bases, extras = [], [], [], [], [], [], [], []
    for part in kept:
        merged_rows += part.rows
        extras += part.extras or [None] * len(part.rows)
        merged_uids.append(part.uids)
        outs.append(part.out)
        texts += part.texts
        scores.append(part.scores)
        raws.append(part.scores if part.raw_scores is None else part.raw_scores)
        if part.baselines is not None:
            bases.append(part.baselines)
    uids = np.concatenate(merged_uids)
    out = pad_cat(outs, tokenizer.pad_token_id)
    merged = Experience(merged_rows, uids, out, texts, torch.cat(scores), torch.cat(bases) if bases else None,
                        extras=extras, raw_scores=torch.cat(raws))
    groups = list(dict.fromkeys(uids.tolist()))[:bsz]
    merged = _select(merged, torch.from_numpy(np.isin(uids, groups)))
    merged.metrics = {**metrics, **extra_metrics(merged.extras)}
    return merged


@torch.no_grad()
def validate(cfg: Config, engine: RolloutEngine, tokenizer: Any, reward: RewardManager, rows: list[PromptRow],
             max_samples: int = 8) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Validation metrics per data source under verl's names: ``val-core/<src>/acc/mean@<n>`` (the
    function's ``acc`` when it returns one, else the score, as verl 0.9's reward loop sets it),
    ``val-aux/<src>/reward/mean@<n>`` (with DAPO's overlong penalty: verl validates with the same reward
    manager), and ``val-aux/<src>/<key>/mean@<n>`` for its other numeric keys (``overlong_reward`` and
    ``overlong`` with ``reward.overlong_buffer.log``); with ``n`` = ``val_kwargs.n`` > 1 also verl's std@n, best@k, worst@k and (with a ``pred``) maj@k estimates
    (:mod:`rlcockpit.trainer.observe.val_metrics`). Greedy unless ``val_kwargs.do_sample``."""
    if not rows:
        return {}, []
    params = val_sampling_params(cfg)
    n = max(1, cfg.rollout.val_kwargs.n)
    sources: list[str] = []
    uids: list[int] = []
    infos: dict[str, list[Any]] = defaultdict(list)
    samples: list[dict[str, Any]] = []
    batch = cfg.data.val_batch_size or 256
    for i in range(0, len(rows), batch):
        chunk = [r for r in rows[i: i + batch] for _ in range(n)]
        out = generate_rows(engine, chunk, params)
        texts = decode(tokenizer, out)
        raw, extras = reward(chunk, texts)
        penalised, extras = apply_overlong(cfg, torch.tensor(raw, dtype=torch.float32), extras, out.response_mask)
        for j, (row, text, s, r, ex) in enumerate(zip(chunk, texts, raw, penalised.tolist(), extras)):
            at = len(sources)  # every variable's list is as long as the responses (None where a row lacks it)
            sources.append(row.data_source)
            uids.append(i + j // n)
            infos["acc"].append(float(ex["acc"]) if isinstance(ex, dict) and "acc" in ex else float(s))
            infos["reward"].append(float(r))  # verl's validation uses the same (DAPO) reward manager
            for k, v in (ex or {}).items():
                if k != "acc" and (isinstance(v, (bool, int, float)) or k == "pred"):
                    infos[k].extend([None] * (at - len(infos[k])))
                    infos[k].append(v if k == "pred" else float(v))
            if len(samples) < max_samples:
                samples.append({"prompt": row.text, "response": text, "reward": float(r),
                                "ground_truth": str(row.ground_truth), "data_source": row.data_source,
                                **{k: v for k, v in (ex or {}).items() if isinstance(v, (str, bool, int, float))}})
    for values in infos.values():
        values.extend([None] * (len(sources) - len(values)))
    return validation_metrics(sources, uids, infos), samples
