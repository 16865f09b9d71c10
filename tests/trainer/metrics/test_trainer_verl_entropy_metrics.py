"""``actor/entropy`` and ``actor/entropy_loss`` are verl 0.9.1's, keys and values, for every loss_agg_mode.

verl logs ``actor/entropy`` from the old-log-prob pass: ``agg_loss(entropys, response_mask, loss_agg_mode,
loss_scale_factor=...)`` over the whole batch (``ray_trainer._compute_old_log_prob``), and
``actor/entropy_loss`` from the update loss when ``entropy_coeff != 0`` or ``calculate_entropy``
(``workers/utils/losses.ppo_loss``: each micro-batch's ``agg_loss`` with the mini-batch's counts, summed,
then averaged over mini-batches and epochs). The oracle runs verl's own ``entropy_from_logits``,
``agg_loss``, ``Metric`` and ``reduce_metrics`` in .venv-verl on the tiny model's logits. Before this
change ``actor/entropy`` was the token mean of the update's micro-batches (wrong for every seq-mean mode and
after the first optimizer step) and ``actor/entropy_loss`` was never logged.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import subprocess
from pathlib import Path

import pytest
import torch
from trainer_batches import mixed_length_batch, tiny_policy

from rlcockpit.algos import LOSS_AGG_MODES
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.models import forward_policy
from rlcockpit.trainer.update import ppo as update

VERL_PY = Path(__file__).resolve().parents[3] / ".venv-verl" / "bin" / "python"
MODES = sorted(LOSS_AGG_MODES.names())

ORACLE = """
import json, sys, torch
from verl.trainer.ppo.core_algos import agg_loss
from verl.utils.metric import AggregationType, Metric
from verl.utils.metric.utils import reduce_metrics
from verl.utils.torch_functional import entropy_from_logits
case = json.load(open(sys.argv[1]))
ent = entropy_from_logits(torch.tensor(case["logits"]))
mask = torch.tensor(case["mask"]).bool()
out = {}
for mode in case["modes"]:
    for lsf in case["scale_factors"]:
        # ray_trainer._compute_old_log_prob: actor/entropy over the whole batch
        out[f"{mode}|{lsf}|entropy"] = agg_loss(loss_mat=ent, loss_mask=mask, loss_agg_mode=mode,
                                               loss_scale_factor=lsf).item()
        # losses.ppo_loss per micro-batch (SUM), engine_workers: aggregate_dp, trainer: reduce_metrics (mean)
        per_mini = []
        for _ in range(case["epochs"]):
            for mini in case["minis"]:
                rows = [i for micro in mini for i in micro]
                info = dict(dp_size=1, batch_num_tokens=mask[rows].sum().item(), global_batch_size=len(rows),
                            loss_scale_factor=lsf)
                m = Metric(AggregationType.SUM)
                for micro in mini:
                    m.append(agg_loss(loss_mat=ent[micro], loss_mask=mask[micro], loss_agg_mode=mode, **info))
                per_mini.append(Metric.aggregate_dp([m]))
        out[f"{mode}|{lsf}|entropy_loss"] = float(reduce_metrics({"actor/entropy_loss": per_mini})["actor/entropy_loss"])
print(json.dumps(out))
"""


def _cfg(mode: str, *, mini: int, micro: int | None = None, epochs: int = 1, coeff: float = 0.0,
         calculate: bool = False, lsf: int | None = None, T: int = 5):
    """``mini``/``micro``: rows (2 responses per prompt)."""
    args = [f"actor.loss_agg_mode={mode}", f"actor.ppo_mini_batch_size={mini // 2}", "rollout.n=2",
            "data.train_batch_size=4",
            f"actor.ppo_epochs={epochs}", f"actor.entropy_coeff={coeff}", f"actor.calculate_entropy={calculate}",
            f"data.max_response_length={T}"]  # verl pads responses to max_response_length (its default horizon)
    if micro:
        args.append(f"actor.ppo_micro_batch_size_per_gpu={micro}")
    if lsf:
        args.append(f"actor.loss_scale_factor={lsf}")
    return load_config(overrides=args, log=lambda *_: None)


def _logits(model, batch) -> torch.Tensor:
    """The plain forward's logits that predict the response tokens (what verl's old-log-prob pass scores)."""
    T = batch["responses"].shape[1]
    am = batch["attention_mask"]
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=am, position_ids=(am.cumsum(-1) - 1).clamp(min=0))
    return out.logits[:, -T - 1:-1].float()


def _update(cfg, model, batch, lr: float):
    m = copy.deepcopy(model)
    return update.update_actor(cfg, m, torch.optim.SGD(m.parameters(), lr=lr), batch, contextlib.nullcontext)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """verl's values for every mode, the default horizon and an explicit loss_scale_factor; 2 epochs of
    two mini-batches of 4 rows split into micro-batches of 3 and 1."""
    tok, model = tiny_policy()
    batch = mixed_length_batch(tok)
    case = {"logits": _logits(model, batch).tolist(), "mask": batch["response_mask"].tolist(), "modes": MODES,
            "scale_factors": [None, 7], "epochs": 2, "minis": [[[0, 1, 2], [3]], [[4, 5, 6], [7]]]}
    path = tmp_path_factory.mktemp("entropy") / "case.json"
    path.write_text(json.dumps(case))
    proc = subprocess.run([str(VERL_PY), "-c", ORACLE, str(path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tok, model, batch, json.loads(proc.stdout.strip().splitlines()[-1])


def _close(ours: float, theirs: float) -> bool:
    return math.isclose(ours, theirs, rel_tol=1e-5, abs_tol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "lsf"), [(m, None) for m in MODES] + [("seq-mean-token-sum-norm", 7)])
def test_actor_entropy_is_verls_old_pass_aggregate(oracle, mode, lsf):
    tok, model, batch, verl = oracle
    expected = verl[f"{mode}|{lsf}|entropy"]
    # the old-log-prob pass ran (several mini-batches, 2 epochs): its entropy, however the update moves the policy
    old = forward_policy(model, batch["input_ids"], batch["attention_mask"], 5, with_entropy="nograd")["entropy"]
    cfg = _cfg(mode, mini=4, micro=3, epochs=2, lsf=lsf)
    got = _update(cfg, model, {**batch, "old_log_probs": old.new_zeros(old.shape), "old_entropy": old}, lr=0.5)
    assert _close(got["actor/entropy"], expected), (got["actor/entropy"], expected)
    # a single on-policy pass (no old pass): the update's own first forward, micro-batch parts summed
    cfg = _cfg(mode, mini=8, micro=3, lsf=lsf)
    got = _update(cfg, model, batch, lr=0.5)
    assert _close(got["actor/entropy"], expected), (got["actor/entropy"], expected)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("coeff", "calculate"), [(0.01, False), (0.0, True)])
def test_actor_entropy_loss_is_verls_update_aggregate(oracle, mode, coeff, calculate):
    """lr=0 keeps the policy fixed, so verl's per-micro-batch entropies are the oracle's old-pass ones."""
    tok, model, batch, verl = oracle
    cfg = _cfg(mode, mini=4, micro=3, epochs=2, coeff=coeff, calculate=calculate)
    old = forward_policy(model, batch["input_ids"], batch["attention_mask"], 5, with_entropy="nograd")["entropy"]
    got = _update(cfg, model, {**batch, "old_log_probs": old.new_zeros(old.shape), "old_entropy": old}, lr=0.0)
    expected = verl[f"{mode}|None|entropy_loss"]
    assert _close(got["actor/entropy_loss"], expected), (got["actor/entropy_loss"], expected)


def test_no_entropy_loss_and_no_entropy_pass_in_the_update_without_coeff_or_calculate_entropy():
    """verl logs actor/entropy_loss only when the update computes the entropy; with the old pass's entropy at
    hand the update's forward does no vocabulary-wide entropy work at all."""
    tok, model = tiny_policy()
    batch = mixed_length_batch(tok)
    old = forward_policy(model, batch["input_ids"], batch["attention_mask"], 5, with_entropy="nograd")["entropy"]
    with_old = {**batch, "old_log_probs": old.detach().clone(), "old_entropy": old}
    cfg = _cfg("token-mean", mini=4, epochs=2)
    assert [update.entropy_mode(cfg, with_old, e) for e in (0, 1)] == ["none", "none"]
    assert [update.entropy_mode(cfg, batch, e) for e in (0, 1)] == ["nograd", "none"]  # epoch 0 gives actor/entropy
    assert update.entropy_mode(_cfg("token-mean", mini=4, coeff=0.01), with_old, 1) == "grad"
    assert update.entropy_mode(_cfg("token-mean", mini=4, calculate=True), with_old, 1) == "nograd"
    got = _update(cfg, model, with_old, lr=0.5)
    assert "actor/entropy_loss" not in got and math.isfinite(got["actor/entropy"])
    assert "actor/entropy_loss" in _update(_cfg("token-mean", mini=4, calculate=True), model, with_old, lr=0.5)


def test_entropy_counts_tokens_rollout_correction_rejected():
    """verl computes actor/entropy before rollout correction masks tokens out (``entropy_mask`` keeps them)."""
    tok, model = tiny_policy()
    batch = mixed_length_batch(tok)
    old = forward_policy(model, batch["input_ids"], batch["attention_mask"], 5, with_entropy="nograd")["entropy"]
    rejected = batch["response_mask"].clone()
    rejected[1] = 0
    cfg = _cfg("seq-mean-token-mean", mini=8)
    full = update.old_policy_entropy(cfg, {**batch, "old_entropy": old})
    kept = update.old_policy_entropy(cfg, {**batch, "old_entropy": old, "response_mask": rejected,
                                           "entropy_mask": batch["response_mask"]})
    assert full == kept
    assert update.old_policy_entropy(cfg, batch) is None


def test_calculate_entropy_is_a_real_key():
    cfg = load_config(overrides=["actor_rollout_ref.actor.calculate_entropy=true"])
    assert cfg.actor.calculate_entropy is True
    assert "actor_rollout_ref.actor.calculate_entropy" not in cfg.extras
