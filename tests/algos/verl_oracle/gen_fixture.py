"""Generate the verl 0.9.1 oracle fixture: verl's outputs on seeded inputs, for rlcockpit's parity tests.

Run with the verl environment's python (it imports verl, never rlcockpit)::

    .venv-verl/bin/python tests/algos/verl_oracle/gen_fixture.py [OUT.npz]

The fixture holds, per case, the inputs, verl's outputs (tensors, metrics, gradients w.r.t.
``log_prob``, or the exception verl raised) and a JSON manifest; plus the names verl registers,
enumerated from verl itself (its registries, and the string choices its ``agg_loss`` /
``kl_penalty_forward`` / rollout-correction code dispatches on).  The main test suite compares
rlcockpit against it without verl installed; ``test_algos_verl_fixture_current.py`` reruns this script in
the verl environment and checks the checked-in fixture is what verl computes today.

Inputs cover what breaks implementations: ragged masks, masks with holes (multi-turn observation
tokens), an empty row, singleton groups, string uids, all-equal rewards, log-ratios big enough for
dual clip and for the +-20 clamps.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

warnings.filterwarnings("ignore")

from verl.trainer.config.algorithm import RolloutCorrectionConfig  # noqa: E402
from verl.trainer.ppo import core_algos, rollout_corr_helper  # noqa: E402
from verl.workers.config import ActorConfig  # noqa: E402
from verl.workers.config.actor import PolicyLossConfig  # noqa: E402

OUT = Path(__file__).with_name("fixture.npz")
BS, T = 8, 9
INT_UIDS = [0, 0, 0, 1, 1, 2, 3, 3]  # group 2 is a singleton
STR_UIDS = ["9f1c-a", "9f1c-a", "9f1c-a", "0b7e-b", "0b7e-b", "77d2-c", "c3a0-d", "c3a0-d"]
PAIR_UIDS = ["p0", "p0", "p1", "p1", "p1", "p2", "p2", "p2"]  # every group >= 2 (grpo_passk)
LOSS_SEED = 1234  # torch.manual_seed before each loss call (clip_cov draws with torch.randperm)


class Cases:
    """Collects manifest entries and their arrays, each distinct array stored once (cases share inputs)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self._keys: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self.manifest: list[dict[str, Any]] = []

    def _store(self, t: torch.Tensor) -> str:
        a = np.array(t.detach().cpu().numpy(), order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
        key = (a.dtype.str, a.shape, hashlib.sha1(a.tobytes()).digest())
        if key not in self._keys:
            self._keys[key] = f"a{len(self._keys)}"
            self.arrays[self._keys[key]] = a
        return self._keys[key]

    def add(self, kind: str, name: str, inputs: dict[str, torch.Tensor], kwargs: dict[str, Any],
            outputs: dict[str, torch.Tensor] | None = None, metrics: dict[str, float] | None = None,
            raises: str | None = None, **extra: Any) -> None:
        self.manifest.append({
            "id": f"c{len(self.manifest):04d}", "kind": kind, "name": name, "kwargs": kwargs,
            "inputs": {k: self._store(v) for k, v in sorted(inputs.items())},
            "outputs": {k: self._store(v) for k, v in sorted((outputs or {}).items())},
            "metrics": metrics or {}, "raises": raises, **extra})


# ------------------------------------------------------------------------------------------ inputs


def masks(g: torch.Generator) -> dict[str, torch.Tensor]:
    lengths = torch.tensor([9, 3, 6, 1, 7, 5, 2, 8])
    ragged = (torch.arange(T) < lengths[:, None]).float()
    holes = ragged.clone()
    for row, (a, b) in enumerate([(2, 4), (1, 2), (3, 5), (0, 0), (1, 3), (2, 3), (0, 0), (4, 7)]):
        holes[row, a:b] = 0.0
    empty_row = ragged.clone()
    empty_row[3] = 0.0
    return {"ragged": ragged, "holes": holes, "empty_row": empty_row}


def last_valid(mask: torch.Tensor) -> torch.Tensor:
    pos = torch.arange(T).expand_as(mask)
    return torch.where(mask > 0, pos, torch.full_like(pos, -1)).max(-1).values


def outcome_rewards(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(BS, T)
    last = last_valid(mask)
    rows = torch.nonzero(last >= 0).squeeze(-1)
    out[rows, last[rows]] = scores[rows]
    return out


def reward_sets(g: torch.Generator, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    return {
        "binary": outcome_rewards((torch.rand(BS, generator=g) > 0.5).float(), mask),
        "continuous": outcome_rewards(torch.randn(BS, generator=g), mask),
        "all_equal": outcome_rewards(torch.full((BS,), 0.7), mask),
        "dense": torch.randn(BS, T, generator=g) * mask,
    }


def log_probs(g: torch.Generator, scale: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(old_log_prob, log_prob): close policies, far ones, or far with tokens past the +-20 clamp."""
    old = torch.log(torch.rand(BS, T, generator=g) * 0.9 + 0.05)
    if scale == "near":
        new = old + 0.05 * torch.randn(BS, T, generator=g)
    else:
        new = torch.log(torch.rand(BS, T, generator=g) * 0.95 + 0.01)
        if scale == "clamp":
            tiny = torch.log(torch.full((BS, T), 1e-11))
            pick = torch.rand(BS, T, generator=g)
            new = torch.where(pick < 0.15, tiny, new)
            old = torch.where(pick > 0.85, tiny, old)
    return old, torch.minimum(new, torch.zeros_like(new))


# ------------------------------------------------------------------------------------- estimators


def estimator_cases(c: Cases, g: torch.Generator) -> None:
    for mask_kind, mask in masks(g).items():
        if mask_kind == "empty_row":
            continue
        rewards = reward_sets(g, mask)
        old_lp = torch.log(torch.rand(BS, T, generator=g) * 0.9 + 0.05)
        spp = torch.rand(BS, T, generator=g) * 0.8 + 0.1
        isw = torch.rand(BS, T, generator=g) * 1.5 + 0.25
        values = torch.randn(BS, T, generator=g)
        baselines = torch.randn(BS, generator=g)
        for r_kind, tlr in rewards.items():
            for uid_kind, uids in (("int", INT_UIDS), ("str", STR_UIDS)):
                base = {"token_level_rewards": tlr, "response_mask": mask}
                runs: list[tuple[str, dict[str, torch.Tensor], dict[str, Any]]] = []
                for norm in (True, False):
                    runs += [("grpo", {}, {"norm_adv_by_std_in_grpo": norm}),
                             ("grpo_vectorized", {}, {"norm_adv_by_std_in_grpo": norm})]
                runs += [("rloo", {}, {}), ("rloo_vectorized", {}, {}), ("opo", {}, {}), ("gpg", {}, {}),
                         ("reinforce_plus_plus_baseline", {}, {}), ("reinforce_plus_plus", {}, {"gamma": 0.9}),
                         ("reinforce_plus_plus", {}, {"gamma": 1.0}), ("remax", {"reward_baselines": baselines}, {}),
                         ("gae", {"values": values}, {"gamma": 0.95, "lam": 0.9}), ("gdpo", {}, {})]
                for tail in (True, False):
                    for with_is in (False, True):
                        extra = {"old_log_probs": old_lp, "sum_pi_squared": spp}
                        if with_is:
                            extra["rollout_is_weights"] = isw
                        runs += [("optimal_token_baseline", extra, {"handle_zero_tail": tail}),
                                 ("tir_optimal_token_baseline", extra, {"handle_zero_tail": tail})]
                for name, extra, kwargs in runs:
                    run_estimator(c, name, {**base, **extra}, kwargs, uids, f"{mask_kind}/{r_kind}/{uid_kind}")
            for norm in (True, False):
                run_estimator(c, "grpo_passk", {"token_level_rewards": tlr, "response_mask": mask},
                              {"norm_adv_by_std_in_grpo": norm}, PAIR_UIDS, f"{mask_kind}/{r_kind}/pairs")
            gdpo_cases(c, g, mask, tlr, f"{mask_kind}/{r_kind}")
        run_estimator(c, "grpo_passk", {"token_level_rewards": rewards["binary"], "response_mask": mask}, {},
                      INT_UIDS, f"{mask_kind}/binary/singleton")


def run_estimator(c: Cases, name: str, inputs: dict[str, torch.Tensor], kwargs: dict[str, Any], uids: list,
                  tag: str, non_tensor_batch: dict[str, list] | None = None, config: dict | None = None) -> None:
    fn = core_algos.get_adv_estimator_fn(name)
    call = {k: v.clone() for k, v in inputs.items()}
    index = np.array(uids, dtype=object)
    verl_kwargs = dict(kwargs)
    if name in ("reinforce_plus_plus", "grpo_passk"):
        verl_kwargs = {}  # verl reads these from the config
        config = {**(config or {}), **kwargs}
    if name != "gae":
        call["index"] = index
    if name in ("gae",):
        call["gamma"], call["lam"] = kwargs["gamma"], kwargs["lam"]
        verl_kwargs = {}
    if config is not None:
        call["config"] = OmegaConf.create(config)  # verl reads AlgoConfig fields as attributes
    if non_tensor_batch is not None:
        prompts = torch.zeros(BS, 3, dtype=torch.long)
        attn = torch.cat([torch.ones(BS, 3), inputs["response_mask"]], dim=1).long()
        call.update(non_tensor_batch={k: np.asarray(v) for k, v in non_tensor_batch.items()},
                    batch={"prompts": prompts, "attention_mask": attn})
    try:
        adv, ret = fn(**call, **verl_kwargs)
    except Exception as exc:  # noqa: BLE001  the oracle says "verl raises" and we check we do too
        c.add("adv", name, inputs, kwargs, raises=type(exc).__name__, index=uids, tag=tag,
              non_tensor_batch=non_tensor_batch, gdpo=config)
        return
    c.add("adv", name, inputs, kwargs, {"advantages": adv, "returns": ret}, index=uids, tag=tag,
          non_tensor_batch=non_tensor_batch, gdpo=config)


def gdpo_cases(c: Cases, g: torch.Generator, mask: torch.Tensor, tlr: torch.Tensor, tag: str) -> None:
    comps = {"acc": (torch.rand(BS, generator=g) > 0.4).float().tolist(),
             "fmt": torch.rand(BS, generator=g).round(decimals=2).tolist()}
    for weights in (None, [1.0, 0.5]):
        cfg: dict[str, Any] = {"gdpo_reward_keys": ["acc", "fmt"]}
        if weights is not None:
            cfg["gdpo_reward_weights"] = weights
        run_estimator(c, "gdpo", {"token_level_rewards": tlr, "response_mask": mask}, dict(cfg), STR_UIDS,
                      f"{tag}/components", non_tensor_batch=comps, config=cfg)


# ---------------------------------------------------------------------------------- policy losses


def actor_config(kwargs: dict[str, Any]) -> ActorConfig:
    """verl's actor config carrying the loss's fields (rlcockpit passes the same fields as keyword arguments)."""
    pl = {k: kwargs[k] for k in ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub", "kl_cov_ratio", "ppo_kl_coef",
                                 "dro_beta") if k in kwargs}
    rc = {k: kwargs[k] for k in ("loss_type", "rollout_is", "rollout_is_threshold", "rollout_is_batch_normalize",
                                 "rollout_rs", "rollout_rs_threshold") if k in kwargs}
    if rc:
        pl["rollout_correction"] = RolloutCorrectionConfig(**rc)
    cfg = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, policy_loss=PolicyLossConfig(**pl),
                      clip_ratio=kwargs.get("clip_ratio", 0.2), clip_ratio_low=kwargs.get("clip_ratio_low"),
                      clip_ratio_high=kwargs.get("clip_ratio_high"), clip_ratio_c=kwargs.get("clip_ratio_c", 3.0),
                      tau_pos=kwargs.get("tau_pos", 1.0), tau_neg=kwargs.get("tau_neg", 1.05))
    cfg.global_batch_info.update(kwargs.get("global_batch_info") or {})
    return cfg


def run_loss(c: Cases, name: str, inputs: dict[str, torch.Tensor], kwargs: dict[str, Any], tag: str) -> None:
    lp = inputs["log_prob"].clone().requires_grad_(True)
    torch.manual_seed(LOSS_SEED)
    try:
        cfg = actor_config(kwargs)
        if name == "reinforce":
            fn = core_algos.compute_policy_loss_reinforce
            loss, metrics = fn(rollout_log_prob=inputs["old_log_prob"], log_prob=lp, advantages=inputs["advantages"],
                               response_mask=inputs["response_mask"], loss_agg_mode=kwargs["loss_agg_mode"],
                               config=cfg, rollout_is_weights=inputs.get("rollout_is_weights"))
        else:
            fn = core_algos.get_policy_loss_fn(name)
            loss, metrics = fn(old_log_prob=inputs["old_log_prob"], log_prob=lp, advantages=inputs["advantages"],
                               response_mask=inputs["response_mask"], loss_agg_mode=kwargs.get("loss_agg_mode",
                                                                                                 "token-mean"),
                               config=cfg, rollout_is_weights=inputs.get("rollout_is_weights"))
        loss.backward()
    except Exception as exc:  # noqa: BLE001
        c.add("loss", name, inputs, kwargs, raises=type(exc).__name__, tag=tag)
        return
    grad = lp.grad if lp.grad is not None else torch.zeros_like(lp)
    c.add("loss", name, inputs, kwargs, {"pg_loss": loss.detach().reshape(()), "grad_log_prob": grad},
          {k.removeprefix("actor/"): float(v) for k, v in metrics.items()}, tag=tag)


AGG_MODES_ALL = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def loss_cases(c: Cases, g: torch.Generator) -> None:
    for mask_kind, mask in masks(g).items():
        for scale in ("near", "far", "clamp"):
            old, new = log_probs(g, scale)
            adv = torch.randn(BS, T, generator=g) * 1.5
            seq_adv = torch.randn(BS, 1, generator=g).expand(BS, T).contiguous()
            isw = torch.rand(BS, T, generator=g) * 1.5 + 0.25
            tag = f"{mask_kind}/{scale}"
            for weights in (None, isw):
                base = {"old_log_prob": old, "log_prob": new, "advantages": adv, "response_mask": mask}
                if weights is not None:
                    base["rollout_is_weights"] = weights
                for mode in AGG_MODES_ALL:
                    for name in ("vanilla", "gspo", "gpg", "reinforce", "cispo", "dppo_tv", "dppo_kl", "kl_cov",
                                 "clip_cov"):
                        run_loss(c, name, base, {"loss_agg_mode": mode}, tag)
                    run_loss(c, "dro", base, {"loss_agg_mode": mode, "dro_beta": 0.1}, tag)
                run_loss(c, "vanilla", base, {"loss_agg_mode": "token-mean", "clip_ratio_low": 0.2,
                                              "clip_ratio_high": 0.28, "clip_ratio_c": 10.0}, tag)
                run_loss(c, "gspo", base, {"loss_agg_mode": "seq-mean-token-mean", "clip_ratio_low": 3e-4,
                                           "clip_ratio_high": 4e-4}, tag)
                run_loss(c, "dppo_tv", base, {"loss_agg_mode": "token-mean", "clip_ratio_c": 20.0}, tag)
                for tau in ((1.0, 1.05), (2.0, 3.0)):
                    run_loss(c, "sapo", base, {"tau_pos": tau[0], "tau_neg": tau[1]}, tag)
                for inputs in (base, {**base, "advantages": seq_adv}):
                    run_loss(c, "geo_mean", inputs, {"clip_ratio_low": 0.4, "clip_ratio_high": 0.4}, tag)
                    run_loss(c, "geo_mean", inputs, {}, tag)
                run_loss(c, "clip_cov", base, {"loss_agg_mode": "token-mean", "clip_cov_ratio": 0.2,
                                               "clip_cov_lb": 0.2, "clip_cov_ub": 3.0}, tag)
                run_loss(c, "kl_cov", base, {"loss_agg_mode": "token-mean", "kl_cov_ratio": 0.1, "ppo_kl_coef": 1.0},
                         tag)
            global_info_cases(c, old, new, adv, mask, tag)
            bypass_cases(c, old, new, adv, mask, tag)
        run_loss(c, "dro", {"old_log_prob": old, "log_prob": new, "advantages": adv, "response_mask": mask},
                 {"loss_agg_mode": "token-mean"}, f"{mask_kind}/no_beta")


def global_info_cases(c: Cases, old: torch.Tensor, new: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                      tag: str) -> None:
    info = {"dp_size": 2, "batch_num_tokens": 50, "global_batch_size": 12, "loss_scale_factor": 16}
    base = {"old_log_prob": old, "log_prob": new, "advantages": adv, "response_mask": mask}
    for mode in AGG_MODES_ALL:
        for name in ("vanilla", "gspo", "gpg", "cispo", "reinforce"):
            run_loss(c, name, base, {"loss_agg_mode": mode, "global_batch_info": info}, f"{tag}/global")
    run_loss(c, "sapo", base, {"global_batch_info": info}, f"{tag}/global")


def bypass_cases(c: Cases, old: torch.Tensor, new: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor,
                 tag: str) -> None:
    if mask.sum() == 0:
        return
    base = {"old_log_prob": old, "log_prob": new, "advantages": adv, "response_mask": mask}
    for loss_type in ("ppo_clip", "reinforce"):
        for rc in ({"rollout_is": None}, {"rollout_is": "token", "rollout_is_threshold": 2.0},
                   {"rollout_is": "sequence", "rollout_is_threshold": 5.0, "rollout_is_batch_normalize": True},
                   {"rollout_is": "token", "rollout_rs": "token_k1", "rollout_rs_threshold": "0.5_2.0"},
                   {"rollout_is": None, "rollout_rs": "seq_mean_k3", "rollout_rs_threshold": 0.3}):
            run_loss(c, "bypass_mode", base, {"loss_agg_mode": "token-mean", "loss_type": loss_type, **rc},
                     f"{tag}/bypass")


# ------------------------------------------------------------------------------ agg, KL, value loss


def agg_cases(c: Cases, g: torch.Generator) -> None:
    for mask_kind, mask in masks(g).items():
        loss_mat = torch.randn(BS, T, generator=g)
        for mode in AGG_MODES_ALL:
            for info in ({}, {"loss_scale_factor": 16}, {"dp_size": 2, "batch_num_tokens": 50, "global_batch_size": 12}):
                out = core_algos.agg_loss(loss_mat, mask, mode, **info)
                c.add("agg", mode, {"loss_mat": loss_mat, "loss_mask": mask}, info, {"loss": out.reshape(())},
                      tag=mask_kind)


def kl_names() -> list[str]:
    """The estimator names verl's ``kl_penalty`` accepts: the choices its forward dispatches on, plus ``+``."""
    base = sorted(string_choices(core_algos.kl_penalty_forward, "kl_penalty"))
    # "+" means k2's gradient on the sampled token's log-prob: it has no meaning for "full" (verl raises for both)
    return base + [f"{n}+" for n in base if n != "full"]


def kl_cases(c: Cases, g: torch.Generator) -> None:
    mask = masks(g)["holes"]
    for scale in ("near", "far", "clamp"):
        ref, lp = log_probs(g, scale)
        if scale == "clamp":
            lp = torch.where(torch.rand(BS, T, generator=g) < 0.2, ref + 25.0, lp)  # d > 20: k3's clamp
        upstream = torch.randn(BS, T, generator=g)
        for name in kl_names():
            x = lp.clone().requires_grad_(True)
            try:
                kld = core_algos.kl_penalty(x, ref, name)
            except NotImplementedError:
                c.add("kl", name, {"log_prob": lp, "ref_log_prob": ref}, {}, raises="NotImplementedError", tag=scale)
                continue
            (kld * upstream).sum().backward()
            c.add("kl", name, {"log_prob": lp, "ref_log_prob": ref, "upstream": upstream}, {},
                  {"kl": kld.detach(), "grad_log_prob": x.grad}, tag=scale)
        value_loss_case(c, g, mask, scale)


def value_loss_case(c: Cases, g: torch.Generator, mask: torch.Tensor, tag: str) -> None:
    vpreds, values, returns = (torch.randn(BS, T, generator=g) for _ in range(3))
    for mode in AGG_MODES_ALL:
        for info in ({}, {"batch_num_tokens": 50, "global_batch_size": 12, "loss_scale_factor": 16}):
            x = vpreds.clone().requires_grad_(True)
            loss, clipfrac = core_algos.compute_value_loss(x, returns, values, mask, cliprange_value=0.5,
                                                           loss_agg_mode=mode, **info)
            loss.backward()
            c.add("value", mode, {"vpreds": vpreds, "returns": returns, "values": values, "response_mask": mask},
                  {"cliprange_value": 0.5, "loss_agg_mode": mode, **info},
                  {"vf_loss": loss.detach().reshape(()), "vf_clipfrac": clipfrac.reshape(()), "grad_vpreds": x.grad},
                  tag=tag)


# ---------------------------------------------------------------------------------- rollout correction


RS_CASES: list[tuple[str, Any]] = [
    ("token_k1", "0.5_2.0"), ("token_k1", 1.5), ("token_k2", 0.2), ("token_k3", 0.2), ("seq_sum_k1", "0.2_5.0"),
    ("seq_sum_k2", 1.0), ("seq_sum_k3", 1.0), ("seq_mean_k1", 1.3), ("seq_mean_k2", 0.1), ("seq_mean_k3", 0.1),
    ("seq_max_k2", 0.5), ("seq_max_k3", 0.5), ("token_k1,seq_mean_k3", "0.5_2.0,0.1"),
    ("seq_sum_k2,seq_max_k3,token_k3", 0.4), ("token_k2,token_k2", 0.2),
]
IS_CASES: list[dict[str, Any]] = [
    {"rollout_is": None}, {"rollout_is": "token", "rollout_is_threshold": 2.0},
    {"rollout_is": "token", "rollout_is_threshold": "0.5_5.0"},
    {"rollout_is": "token", "rollout_is_threshold": 2.0, "rollout_is_batch_normalize": True},
    {"rollout_is": "sequence", "rollout_is_threshold": 2.0},
    {"rollout_is": "sequence", "rollout_is_threshold": "0.2_20"},
    {"rollout_is": "sequence", "rollout_is_threshold": 10.0, "rollout_is_batch_normalize": True},
]
BAD_RC: list[dict[str, Any]] = [
    {"rollout_is": "tokens"}, {"rollout_is": "token", "rollout_is_threshold": "5_0.5"},
    {"rollout_is": "token", "rollout_is_threshold": -1.0}, {"rollout_rs": "token_k4", "rollout_rs_threshold": 1.0},
    {"rollout_rs": "token_k2"}, {"rollout_rs": "token_k2", "rollout_rs_threshold": "0.1_0.2"},
    {"rollout_rs": "token_k1,token_k2", "rollout_rs_threshold": "1,2,3"},
]


def rollout_corr_cases(c: Cases, g: torch.Generator) -> None:
    for mask_kind, mask in masks(g).items():
        for scale in ("near", "far", "clamp"):
            rollout, train = log_probs(g, scale)
            base = {"old_log_prob": train, "rollout_log_prob": rollout, "response_mask": mask}
            configs = [*IS_CASES, *({"rollout_is": "token", "rollout_rs": rs, "rollout_rs_threshold": thr}
                                    for rs, thr in RS_CASES)]
            for kwargs in configs:
                run_rollout_corr(c, base, kwargs, f"{mask_kind}/{scale}")
            metrics = rollout_corr_helper.compute_rollout_corr_metrics_from_logprobs(train, rollout, mask)
            c.add("rc_metrics", "compute_rollout_corr_metrics_from_logprobs", base, {}, {}, metrics,
                  tag=f"{mask_kind}/{scale}")
    for kwargs in BAD_RC:
        run_rollout_corr(c, base, kwargs, "bad")


def run_rollout_corr(c: Cases, inputs: dict[str, torch.Tensor], kwargs: dict[str, Any], tag: str) -> None:
    try:
        weights, mask, metrics = rollout_corr_helper.compute_rollout_correction_and_rejection_mask(**inputs, **kwargs)
    except Exception as exc:  # noqa: BLE001
        c.add("rc", "compute_rollout_correction_and_rejection_mask", inputs, kwargs, raises=type(exc).__name__,
              tag=tag)
        return
    outputs = {"response_mask": mask}
    if weights is not None:
        outputs["rollout_is_weights"] = weights.batch["rollout_is_weights"]
    c.add("rc", "compute_rollout_correction_and_rejection_mask", inputs, kwargs, outputs, metrics, tag=tag)


# -------------------------------------------------------------------------------------- verl's names


def string_choices(fn: Any, var: str) -> set[str]:
    """String constants ``fn`` compares ``var`` with (``var == "x"``, ``var in ("x", "y")``)."""
    tree = ast.parse(inspect.getsource(fn).lstrip())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == var:
            for comp in node.comparators:
                for const in ast.walk(comp):
                    if isinstance(const, ast.Constant) and isinstance(const.value, str):
                        found.add(const.value)
    return found


def verl_names() -> dict[str, list[str]]:
    import verl

    helper = rollout_corr_helper
    return {
        "verl_version": [verl.__version__],
        "adv_estimators": sorted(core_algos.ADV_ESTIMATOR_REGISTRY),
        # compute_policy_loss_reinforce is not in verl's registry but is the loss bypass mode's
        # loss_type=reinforce runs; rlcockpit registers it as "reinforce"
        "policy_losses": sorted(core_algos.POLICY_LOSS_REGISTRY) + ["reinforce"],
        "loss_agg_modes": sorted(string_choices(core_algos.agg_loss, "loss_agg_mode")),
        "kl_estimators": kl_names(),
        "rollout_is": sorted(string_choices(helper.compute_rollout_correction_weights, "rollout_is")),
        "rollout_rs": sorted(helper.SUPPORTED_ROLLOUT_RS_OPTIONS),
        "bypass_loss_types": sorted(string_choices(core_algos.compute_policy_loss_bypass_mode, "loss_type")),
    }


def main(out: Path = OUT) -> Path:
    torch.use_deterministic_algorithms(True)
    c = Cases()
    for seed, builder in enumerate((estimator_cases, loss_cases, agg_cases, kl_cases, rollout_corr_cases)):
        builder(c, torch.Generator().manual_seed(1000 + seed))
    meta = {"names": verl_names(), "cases": c.manifest, "loss_seed": LOSS_SEED}
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, __manifest__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **c.arrays)
    print(f"wrote {out}: {len(c.manifest)} cases, {out.stat().st_size / 1e6:.2f} MB")
    return out


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
