"""The trainer's per-step metric keys and their values are verl 0.9.1's for the same config.

Found missing before (2-step tiny runs against verl's key set, see verl_metric_keys.py): ``global_seqlen/*``,
``perf/mfu/{actor,critic,actor_infer}``, ``actor/loss``, ``critic/loss``, ``{actor,critic}/perf/*``,
``timing_s/{start,stop}_profile``; ``actor/kl_coef`` was logged without ``use_kl_loss`` (verl: only with it;
KL in the reward logs ``actor/reward_kl_penalty_coeff``); ``perf/throughput`` was not per rank. The oracles
run verl's own functions in .venv-verl."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
import torch
from verl_metric_keys import VERL_PY, verl_step_keys

from rlcockpit.trainer.distributed.group import Dist
from rlcockpit.trainer.observe.flops import mfu, peak_flops, train_flops
from rlcockpit.trainer.observe.metrics import global_seqlen_metrics, perf_metrics

# not in verl 0.9.1's step: rlcockpit's own names, perf/cpu_memory_used_gb (verl's before 0.9, same meaning) and
# the process's own resident memory (memory_growth judges it, not the shared machine's)
EXTRAS = {"reward/failures", "reward/failure_rate", "actor/nonfinite_skipped", "perf/cpu_memory_used_gb",
          "perf/proc_rss_gb"}
REF_EXTRAS = {"actor/ref_kl"}  # mean old - reference log-prob: with a reference model and an old-log-prob pass
# verl's, left out by design: the old-log-prob pass when the update's first pass scores the old policy
# (one epoch, one mini-batch, no KL in the reward: no extra pass; actor/entropy still comes from it)
NO_OLD_PASS = {"timing_s/old_log_prob", "perf/mfu/actor_infer"}

CASES = {  # config overrides, verl_step_keys flags, what rlcockpit leaves out there
    "grpo": (["algorithm.adv_estimator=grpo"], {"use_critic": False}, NO_OLD_PASS),
    "grpo_kl_loss": (["algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.use_kl_loss=true",
                      "actor_rollout_ref.actor.kl_loss_coef=0.002"], {"use_critic": False, "use_kl_loss": True},
                     NO_OLD_PASS),
    "gae": (["algorithm.adv_estimator=gae"], {"use_critic": True}, NO_OLD_PASS),
    "gae_kl_in_reward": (["algorithm.adv_estimator=gae", "algorithm.use_kl_in_reward=true"],
                         {"use_critic": True, "use_kl_in_reward": True}, set()),
}


def _step_row(store_dir, run_id: str, step: int) -> dict[str, float]:
    from rlcockpit.store import open_store

    store = open_store(store_dir)
    row = {}
    for key in store.keys(run_id):
        steps, values, _ = store.series(run_id, key, with_ts=False)
        for s, v in zip(steps, values):
            if int(s) == step:
                row[key] = float(v)
    return row


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_step_keys_are_verls(case, tiny_cfg):
    from rlcockpit.trainer.loop import train

    overrides, flags, absent = CASES[case]
    cfg = tiny_cfg(*overrides, "trainer.test_freq=0", "trainer.val_before_train=false")
    result = train(cfg, log=lambda *_: None)
    ours = _step_row(cfg.trainer.rlcockpit_dir, result.run_id, 2)
    verl = verl_step_keys(**flags)
    extras = EXTRAS | (REF_EXTRAS if not absent and flags.get("use_kl_in_reward") else set())
    assert sorted(verl - set(ours)) == sorted(absent), "verl logs these and we do not"
    assert sorted(set(ours) - verl) == sorted(extras), "we log these and verl does not"
    # the meanings that can be checked on a run: one rank holds every token; the objective's parts
    assert ours["global_seqlen/mean"] == ours["global_seqlen/balanced_max"] == ours["perf/total_num_tokens"]
    assert ours["global_seqlen/minmax_diff"] == 0.0
    assert 0 < ours["perf/mfu/actor"] < 1
    if flags.get("use_kl_loss"):
        assert ours["actor/kl_coef"] == 0.002
        assert ours["actor/loss"] == pytest.approx(ours["actor/pg_loss"] + 0.002 * ours["actor/kl_loss"], abs=1e-6)
    else:
        assert ours["actor/loss"] == pytest.approx(ours["actor/pg_loss"], abs=1e-7)
    if flags["use_critic"]:
        assert ours["critic/loss"] == ours["critic/vf_loss"] and 0 < ours["perf/mfu/critic"] < 1
    if not absent:
        assert 0 < ours["perf/mfu/actor_infer"] < 1


ORACLE = r"""
import json, sys, torch
from transformers import GPT2Config, LlamaConfig, Qwen2Config
from verl import DataProto
from verl.trainer.ppo.metric_utils import compute_throughout_metrics
from verl.utils.flops_counter import ESTIMATE_FUNC, _estimate_unknown_flops, get_device_flops
from verl.utils.seqlen_balancing import calculate_workload, get_seqlen_balanced_partitions, log_seqlen_unbalance

case = json.load(open(sys.argv[1]))
out = {"seqlen": {}, "flops": {}, "peaks": {}}
mask = torch.tensor(case["attention_mask"])
seqlens = mask.sum(-1)
for k in case["ranks"]:
    parts = get_seqlen_balanced_partitions(calculate_workload(seqlens), k_partitions=k, equal_size=True)
    out["seqlen"][k] = {key: float(v) for key, v in
                        log_seqlen_unbalance(seqlen_list=seqlens.tolist(), partitions=parts, prefix="global_seqlen").items()}
configs = {"qwen2": Qwen2Config(**case["qwen2"]), "llama": LlamaConfig(**case["llama"]), "gpt2": GPT2Config()}
for name, cfg in configs.items():
    # FlopsCounter.estimate_flops without its device lookup (torch.cuda, which fails on a CPU-only torch)
    func = ESTIMATE_FUNC.get(cfg.model_type, _estimate_unknown_flops)
    lens = case["flop_seqlens"]
    out["flops"][name] = float(func(cfg, sum(lens), lens, 2.0))  # TFLOP/s over 2 s
for dev in case["devices"]:
    out["peaks"][dev] = get_device_flops(unit="B", device_name=dev)  # FLOP/s ("B": no scaling); inf when unknown
b = DataProto.from_dict({"attention_mask": mask, "responses": mask[:, :2].clone()})
b.meta_info["global_token_num"] = seqlens.tolist()
out["throughput"] = compute_throughout_metrics(b, {"step": 2.0}, n_gpus=3)
print(json.dumps(out))
"""

QWEN2 = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 300}
LLAMA = {"hidden_size": 96, "intermediate_size": 200, "num_hidden_layers": 3, "num_attention_heads": 6,
         "num_key_value_heads": 3, "head_dim": 32, "vocab_size": 500}
DEVICES = ["CPU", "NVIDIA H200", "NVIDIA H20", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S",
           "NVIDIA L40", "Tesla T4"]


def _mask(seed: int, bs: int = 6, width: int = 9) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, width + 1, (bs,), generator=g)
    return (torch.arange(width)[None] < lengths[:, None]).long()


@pytest.mark.slow
def test_seqlen_flops_and_throughput_match_verl(tmp_path):
    from transformers import GPT2Config, LlamaConfig, Qwen2Config

    mask = _mask(4)  # verl balances equal-sized parts: 6 rows for 1, 2 and 3 ranks
    flop_seqlens = [17, 3, 40, 9]
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"attention_mask": mask.tolist(), "ranks": [1, 2, 3], "qwen2": QWEN2, "llama": LLAMA,
                                "flop_seqlens": flop_seqlens, "devices": DEVICES}))
    proc = subprocess.run([str(VERL_PY), "-c", ORACLE, str(case)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verl = json.loads(proc.stdout.strip().splitlines()[-1])
    for k in (1, 2, 3):
        ours = global_seqlen_metrics(mask, _rank_rows(len(mask), k))
        expected = verl["seqlen"][str(k)]
        assert set(ours) == set(expected)
        # before balancing and the mean are verl's; the per-rank sums are what our ranks really get (no reorder)
        for key in ("global_seqlen/min", "global_seqlen/max", "global_seqlen/minmax_diff", "global_seqlen/mean"):
            assert ours[key] == pytest.approx(expected[key]), (k, key)
        if k == 1:
            assert ours == pytest.approx(expected)
    ours_flops = {"qwen2": train_flops(Qwen2Config(**QWEN2), flop_seqlens),
                  "llama": train_flops(LlamaConfig(**LLAMA), flop_seqlens), "gpt2": train_flops(GPT2Config(), [5])}
    assert ours_flops["qwen2"] / 2.0 / 1e12 == pytest.approx(verl["flops"]["qwen2"], rel=1e-12)
    assert ours_flops["llama"] / 2.0 / 1e12 == pytest.approx(verl["flops"]["llama"], rel=1e-12)
    assert ours_flops["gpt2"] is None and verl["flops"]["gpt2"] == 0.0  # verl: "MFU will always be zero"
    for dev, peak in verl["peaks"].items():
        assert (peak_flops(dev) is None) if math.isinf(peak) else peak_flops(dev) == pytest.approx(peak), dev
    ours_perf = perf_metrics(int(mask.sum()), 2.0, torch.device("cpu"), n_gpus=3)
    for key, value in verl["throughput"].items():
        assert ours_perf[key] == pytest.approx(value), key


def _rank_rows(bs: int, k: int) -> list[torch.Tensor]:
    return [torch.arange(*Dist(rank=r, world_size=k).bounds(bs)) for r in range(k)]


def test_global_seqlen_balanced_is_what_each_rank_gets():
    mask = torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    m = global_seqlen_metrics(mask, [torch.tensor([0, 2]), torch.tensor([1, 3, 4])])
    assert (m["global_seqlen/balanced_min"], m["global_seqlen/balanced_max"]) == (6.0, 8.0)
    # verl's "before balancing": contiguous parts of len // k rows, the remainder a part of its own
    assert (m["global_seqlen/min"], m["global_seqlen/max"], m["global_seqlen/mean"]) == (4.0, 5.0, 7.0)


def test_rank_rows_follow_the_update_split(tiny_cfg):
    from rlcockpit.trainer.update.ppo import rank_rows

    cfg = tiny_cfg("actor_rollout_ref.actor.ppo_mini_batch_size=2")  # 2 prompts x n=4: mini-batches of 8 rows
    rows = rank_rows(cfg, 16, Dist(rank=0, world_size=2))
    assert [r.tolist() for r in rows] == [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]]


def test_mfu_is_left_out_where_verl_cannot_estimate_it():
    from transformers import GPT2Config, GPT2LMHeadModel, Qwen2Config, Qwen2ForCausalLM

    qwen = Qwen2ForCausalLM(Qwen2Config(**QWEN2))
    cpu = torch.device("cpu")
    train = mfu(qwen, [10, 20], 0.5, cpu, world_size=2)
    assert train == pytest.approx(train_flops(qwen.config, [10, 20]) / 0.5 / 448e9 / 2)
    assert mfu(qwen, [10, 20], 0.5, cpu, world_size=2, forward_only=True) == pytest.approx(train / 3)
    assert mfu(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2)), [10], 0.5, cpu) is None
    assert mfu(qwen, [10], 0.0, cpu) is None
    assert peak_flops("Tesla T4") is None and peak_flops("NVIDIA H20") == 148e12  # H200's key must not shadow H20
