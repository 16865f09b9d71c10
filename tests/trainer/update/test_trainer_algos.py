"""verl 0.9's algorithms inside the trainer: micro-batch invariant aggregation, Dr.GRPO's constant, rollout
correction from the engine's log-probs, the extra inputs some estimators need, and every verl name
accepted by the config and trained for a couple of steps on the tiny model."""

from __future__ import annotations

import contextlib
import copy
import json
import math
from pathlib import Path

import pytest
import torch
from trainer_batches import PROMPTS, mixed_length_batch, tiny_policy

import rlcockpit
from rlcockpit.algos import ADV_ESTIMATORS, KL_ESTIMATORS, LOSS_AGG_MODES, POLICY_LOSSES, agg_loss
from rlcockpit.trainer.config import ConfigError, load_config
from rlcockpit.trainer.loop import train
from rlcockpit.trainer.models import forward_logprobs
from rlcockpit.trainer.rollout.engine import ROLLOUT_ENGINES, SamplingParams
from rlcockpit.trainer.update import ppo as update

FIXTURE = Path(__file__).parents[2] / "algos" / "verl_oracle" / "fixture.npz"


def _step(cfg, model, batch):
    m = copy.deepcopy(model)
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    metrics = update.update_actor(cfg, m, opt, batch, contextlib.nullcontext)
    return metrics, {k: p.detach().clone() for k, p in m.named_parameters()}


@pytest.mark.parametrize("mode", sorted(LOSS_AGG_MODES.names()))
@pytest.mark.parametrize("loss", ["vanilla", "gspo", "cispo", "sapo", "geo_mean"])
def test_micro_batches_take_the_same_step_as_one_batch(mode, loss):
    """verl normalises by the mini-batch's token/sequence counts: the split into micro-batches changes nothing."""
    tok, model = tiny_policy()
    batch = mixed_length_batch(tok)
    with torch.no_grad():
        batch["old_log_probs"] = forward_logprobs(model, batch["input_ids"], batch["attention_mask"], 5)[0] + 0.1
    results = {}
    for micro in (8, 3, 1):
        cfg = load_config(overrides=["data.train_batch_size=2", "actor.ppo_mini_batch_size=2", "rollout.n=4",
                                     f"actor.ppo_micro_batch_size={micro}", f"actor.loss_agg_mode={mode}",
                                     f"actor.policy_loss.loss_mode={loss}", "actor.entropy_coeff=0.01",
                                     "data.max_response_length=7", "actor.grad_clip=1e9"])
        results[micro] = _step(cfg, model, batch)
    (m_one, p_one) = results[8]
    for micro in (3, 1):
        m, p = results[micro]
        assert m["actor/pg_loss"] == pytest.approx(m_one["actor/pg_loss"], rel=1e-4, abs=1e-6), micro
        for name in p_one:
            torch.testing.assert_close(p[name], p_one[name], atol=1e-5, rtol=1e-4, msg=f"{micro}: {name}")


def test_token_mean_over_micro_batches_is_not_the_mean_of_micro_means():
    """The old weighting (each micro-batch mean weighted by its row share) differs on ragged batches."""
    tok, _ = tiny_policy()
    batch = mixed_length_batch(tok)
    loss = torch.arange(8.0)[:, None].expand(8, 5)  # rows of different lengths carry different losses
    mask = batch["response_mask"]
    whole = agg_loss(loss, mask, "token-mean")
    old_way = sum(agg_loss(loss[i:i + 2], mask[i:i + 2], "token-mean") * 2 / 8 for i in range(0, 8, 2))
    info = update.global_batch_info(mask, 5)
    new_way = sum(agg_loss(loss[i:i + 2], mask[i:i + 2], "token-mean", **info) for i in range(0, 8, 2))
    assert abs(float(old_way - whole)) > 0.05
    assert float(new_way) == pytest.approx(float(whole), abs=1e-6)


def test_dr_grpo_divides_by_the_configured_response_length():
    tok, model = tiny_policy()
    batch = mixed_length_batch(tok)  # padded to 5 tokens
    for max_len, factor in ((7, None), (7, 11)):
        over = ["actor.loss_agg_mode=seq-mean-token-sum-norm", "actor.policy_loss.loss_mode=gpg",
                f"data.max_response_length={max_len}", "data.train_batch_size=2", "actor.ppo_mini_batch_size=2",
                "rollout.n=4"] + ([f"actor.loss_scale_factor={factor}"] if factor else [])
        metrics, _ = _step(load_config(overrides=over), model, batch)
        with torch.no_grad():
            lp = forward_logprobs(model, batch["input_ids"], batch["attention_mask"], 5)[0]
        per_seq = (-batch["advantages"] * lp * batch["response_mask"]).sum(-1)
        assert metrics["actor/pg_loss"] == pytest.approx(float(per_seq.mean()) / (factor or max_len), rel=1e-4)


def test_hf_engine_reports_the_log_probs_the_training_pass_computes():
    tok, model = tiny_policy()
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS for _ in range(3)]
    engine = ROLLOUT_ENGINES.get("hf")(model, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                                        device="cpu")
    out = engine.generate(rows, SamplingParams(max_new_tokens=5, temperature=0.8, logprobs=True))
    assert engine.generate(rows, SamplingParams(max_new_tokens=5)).rollout_log_probs is None
    train_lp = forward_logprobs(model, out.input_ids, out.attention_mask, out.responses.size(1), temperature=0.8)[0]
    valid = out.response_mask.bool()
    torch.testing.assert_close(out.rollout_log_probs[valid], train_lp.detach()[valid], atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------------- config validation


def test_config_accepts_every_verl_name_and_rejects_typos():
    names = json.loads(__import__("numpy").load(FIXTURE)["__manifest__"].tobytes())["names"]
    for est in names["adv_estimators"]:
        extra = ["algorithm.gdpo_reward_keys=[acc]"] if est == "gdpo" else []
        assert load_config(overrides=[f"algorithm.adv_estimator={est}", *extra]).algorithm.adv_estimator == est
    for loss in names["policy_losses"]:
        extra = ["actor.policy_loss.dro_beta=0.1"] if loss == "dro" else []
        assert load_config(overrides=[f"actor.policy_loss.loss_mode={loss}", *extra]).actor.policy_loss.loss_mode == loss
    for mode in names["loss_agg_modes"]:
        load_config(overrides=[f"actor.loss_agg_mode={mode}", f"critic.loss_agg_mode={mode}"])
    for kl in names["kl_estimators"]:
        if kl in KL_ESTIMATORS:
            load_config(overrides=[f"actor.kl_loss_type={kl}", f"algorithm.kl_penalty={kl}"])
    assert load_config(overrides=["actor.policy_loss=gspo"]).actor.policy_loss.loss_mode == "gspo"  # shorthand
    for bad, match in (("algorithm.adv_estimator=grpo_passkk", "grpo_passk"), ("actor.loss_agg_mode=token_sum",
                       "token-sum"), ("actor.kl_loss_type=k3++", "kl"), ("algorithm.rollout_correction.rollout_is=tok",
                       "rollout_is"), ("actor.policy_loss.loss_mode=dro", "dro_beta"),
                       ("algorithm.adv_estimator=gdpo", "gdpo_reward_keys")):
        with pytest.raises(ConfigError, match=match):
            load_config(overrides=[bad])
    with pytest.raises(ConfigError, match="rollout_rs"):
        load_config(overrides=["algorithm.rollout_correction.rollout_rs=token_k9",
                               "algorithm.rollout_correction.rollout_rs_threshold=2.0"])


# ----------------------------------------------------------------------------- training end to end


def _hist(tmp_path, result):
    return rlcockpit.Api(str(tmp_path / "store")).run(result.run_id).history()


def _finite(hist, key):
    values = hist[key].dropna()
    return len(values) > 0 and all(math.isfinite(v) for v in values)


GDPO_REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    acc = float(solution_str.strip() == str(ground_truth).strip())
    short = float(len(solution_str.strip()) <= 3)
    return {"score": acc + 0.1 * short, "acc": acc, "short": short}
'''


def _extra_for(kind: str, name: str, tmp_path: Path) -> list[str]:
    if kind == "adv":
        extra = [f"algorithm.adv_estimator={name}"]
        if name == "gae":
            extra.append("critic.optim.lr=1e-3")
        if name == "gdpo":
            (tmp_path / "reward.py").write_text(GDPO_REWARD)
            extra += [f"reward.custom_fn={tmp_path / 'reward.py'}:compute_score", "algorithm.gdpo_reward_keys=[acc,short]",
                      "algorithm.gdpo_reward_weights=[1.0,0.5]"]
        return extra
    if kind == "loss":
        extra = [f"actor.policy_loss.loss_mode={name}", "actor.ppo_mini_batch_size=2", "actor.ppo_micro_batch_size=3"]
        return extra + (["actor.policy_loss.dro_beta=0.1"] if name == "dro" else [])
    if kind == "agg":
        return [f"actor.loss_agg_mode={name}", "actor.ppo_micro_batch_size=3"]
    return ["actor.use_kl_loss=true", f"actor.kl_loss_type={name}", "algorithm.use_kl_in_reward=true",
            f"algorithm.kl_penalty={name}"]


CASES = ([("adv", n) for n in ADV_ESTIMATORS.names()] + [("loss", n) for n in POLICY_LOSSES.names()]
         + [("agg", n) for n in LOSS_AGG_MODES.names()] + [("kl", n) for n in KL_ESTIMATORS.names()])


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), CASES, ids=lambda x: str(x))
def test_every_algorithm_trains_two_steps(tiny_cfg, tmp_path, kind, name):
    result = train(tiny_cfg("trainer.test_freq=0", *_extra_for(kind, name, tmp_path)))
    assert result.status == "finished" and result.steps == 2, result.reason
    hist = _hist(tmp_path, result)
    assert _finite(hist, "actor/pg_loss") and _finite(hist, "actor/grad_norm")
    if kind == "kl":
        assert _finite(hist, "actor/kl_loss") and _finite(hist, "actor/reward_kl_penalty")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["decoupled", "bypass_ppo_clip", "bypass_reinforce"])
def test_rollout_correction_trains_and_logs_verls_metrics(tiny_cfg, tmp_path, mode):
    rc = "algorithm.rollout_correction"
    extra = [f"{rc}.rollout_is=token", f"{rc}.rollout_is_threshold=2.0", f"{rc}.rollout_rs=seq_mean_k3",
             f"{rc}.rollout_rs_threshold=0.5", "trainer.test_freq=0"]
    if mode != "decoupled":
        extra += [f"{rc}.bypass_mode=true", f"{rc}.loss_type={mode.split('_', 1)[1]}"]
    result = train(tiny_cfg(*extra))
    assert result.status == "finished", result.reason
    hist = _hist(tmp_path, result)
    for key in ("kl", "k3_kl", "chi2_token", "ppl_ratio", "rollout_is_mean", "rollout_is_eff_sample_size",
                "rollout_rs_masked_fraction", "training_ppl", "rollout_ppl"):
        assert _finite(hist, f"rollout_corr/{key}"), key
    # the engine samples from the model being trained: on-policy up to float rounding
    assert hist["rollout_corr/kl"].dropna().abs().max() < 1e-3
    assert hist["rollout_corr/rollout_is_mean"].dropna().sub(1).abs().max() < 1e-2
    if mode == "decoupled":
        assert "timing_s/old_log_prob" in hist.columns


@pytest.mark.slow
def test_calculate_log_probs_logs_mismatch_metrics_without_correcting(tiny_cfg, tmp_path):
    result = train(tiny_cfg("rollout.calculate_log_probs=true", "trainer.test_freq=0"))
    hist = _hist(tmp_path, result)
    assert _finite(hist, "rollout_corr/kl") and "rollout_corr/rollout_is_mean" not in hist.columns
