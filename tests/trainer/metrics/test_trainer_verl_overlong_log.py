"""DAPO's ``overlong_buffer_cfg.log`` (``reward.overlong_buffer.log``) as verl 0.9.1's DAPO reward manager does it.

With ``log=True`` verl's manager puts each response's ``overlong_reward`` (the penalty, <= 0) and ``overlong``
(penalised or not) into ``reward_extra_info`` (a float result's info being ``{"acc": score}``); those reach the
samples, the DAPO filter metric and, through validation (same manager), ``val-aux/<src>/overlong*/mean@N``.
The oracle is verl's own ``experimental/reward_loop/reward_manager/dapo.DAPORewardManager.run_single`` in
.venv-verl. Before this change the key was accepted with no effect and validation scores had no penalty.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch
from trainer_batches import ByteTokenizer, EchoEngine

from rlcockpit.trainer.collect import apply_overlong, generate_once, validate
from rlcockpit.trainer.config import load_config
from rlcockpit.trainer.data import PromptRow
from rlcockpit.trainer.observe.filter_metric import reward_extra_info
from rlcockpit.trainer.observe.metrics import sample_rows
from rlcockpit.trainer.reward.rewards import RewardManager, load_custom_fn

VERL_PY = Path(__file__).resolve().parents[3] / ".venv-verl" / "bin" / "python"
RESPONSES = ["7", "xx7", "abcdef", "abc7efg", "abcdefgh", "7bcdefghij"]  # 1..10 tokens; 6 = the ramp's start
REWARDS = """
def as_float(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if ground_truth in solution_str else 0.0

def as_dict(data_source, solution_str, ground_truth, extra_info=None):
    ok = ground_truth in solution_str
    return {"score": 1.0 if ok else -1.0, "acc": ok, "pred": solution_str[-1:]}
"""
ORACLE = """
import importlib.util, json, sys
import numpy as np, torch
from omegaconf import OmegaConf
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.dapo import DAPORewardManager
case = json.load(open(sys.argv[1]))
spec = importlib.util.spec_from_file_location("rewards", case["reward_file"])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

class Tok:
    eos_token = "</s>"
    def decode(self, ids, skip_special_tokens=True):
        return bytes([int(i) for i in ids if int(i) > 0]).decode()

def plain(v):
    v = v.item() if hasattr(v, "item") else v
    return v

cfg = OmegaConf.create({"reward": {"reward_kwargs": {"max_resp_len": case["max_resp_len"],
                                                     "overlong_buffer_cfg": case["ob"]}}})
out = {}
T = case["max_resp_len"]
for name in ("as_float", "as_dict"):
    mgr = DAPORewardManager(cfg, Tok(), getattr(mod, name))
    rows = []
    for text in case["responses"]:
        ids = list(text.encode())
        resp = torch.tensor([ids + [0] * (T - len(ids))])
        mask = torch.tensor([[1] + [1] * len(ids) + [0] * (T - len(ids))])
        data = DataProto.from_dict(tensors={"prompts": torch.ones(1, 1, dtype=torch.long), "responses": resp,
                                            "attention_mask": mask},
                                   non_tensors={"data_source": np.array(["src"], dtype=object),
                                                "reward_model": np.array([{"ground_truth": "7"}], dtype=object)})
        r = mgr.loop.run_until_complete(mgr.run_single(data))
        rows.append({"reward": float(plain(r["reward_score"])),
                     "info": {k: plain(v) for k, v in r["reward_extra_info"].items()}})
    out[name] = rows
print(json.dumps(out))
"""
OB = {"enable": True, "len": 4, "penalty_factor": 0.5, "log": True}


def _rows() -> list[PromptRow]:
    return [PromptRow([], "7", "src", input_ids=list(f"q->{r}".encode()), text="q") for r in RESPONSES]


def _cfg(tmp_path: Path, fn: str, log: bool = True):
    f = tmp_path / "rewards.py"
    f.write_text(REWARDS)
    ob = "reward_model.reward_kwargs.overlong_buffer_cfg"  # the DAPO scripts' spelling
    return load_config(overrides=[f"custom_reward_function.path={f}", f"custom_reward_function.name={fn}",
                                  "data.max_response_length=10", "reward_model.reward_kwargs.max_resp_len=10",
                                  f"{ob}.enable=true", f"{ob}.len={OB['len']}",
                                  f"{ob}.penalty_factor={OB['penalty_factor']}", f"{ob}.log={log}"], log=None)


def _ours(cfg) -> tuple[list[float], list[dict]]:
    rows = _rows()
    manager = RewardManager.from_config(cfg)
    raw, extras = manager(rows, RESPONSES)
    mask = torch.tensor([[1] * len(r) + [0] * (10 - len(r)) for r in RESPONSES])
    scores, extras = apply_overlong(cfg, torch.tensor(raw), extras, mask)
    return scores.tolist(), reward_extra_info(raw, extras)


@pytest.mark.slow
def test_overlong_log_matches_verls_dapo_reward_manager(tmp_path):
    (tmp_path / "rewards.py").write_text(REWARDS)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"reward_file": str(tmp_path / "rewards.py"), "max_resp_len": 10, "ob": OB,
                                "responses": RESPONSES}))
    proc = subprocess.run([str(VERL_PY), "-c", ORACLE, str(case)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verl = json.loads(proc.stdout.strip().splitlines()[-1])
    for fn in ("as_float", "as_dict"):
        scores, infos = _ours(_cfg(tmp_path, fn))
        for i, (s, info, theirs) in enumerate(zip(scores, infos, verl[fn])):
            assert math.isclose(s, theirs["reward"], abs_tol=1e-6), (fn, i, s, theirs)
            # verl's keys (ours may add "score" for a float result: the filter metric accepts it too)
            assert set(theirs["info"]) <= set(info), (fn, i, info, theirs)
            for key, value in theirs["info"].items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):  # verl: int 0 when unpenalised
                    assert math.isclose(float(info[key]), value, abs_tol=1e-6), (fn, i, key, info[key], value)
                else:
                    assert info[key] == value and type(info[key]) is type(value), (fn, i, key, info[key], value)
    assert [x["info"]["overlong"] for x in verl["as_float"]] == [False, False, False, True, True, True]


def test_log_keys_reach_metrics_samples_and_validation(tmp_path):
    cfg = _cfg(tmp_path, "as_float")
    cfg.rollout.n = 1
    exp = generate_once(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows(), 0, {})
    penalties = [0.0, 0.0, 0.0, -0.125, -0.25, -0.5]  # 7, 8, 10 tokens past the ramp's start at 6, of 4, x 0.5
    assert exp.scores.tolist() == pytest.approx([float("7" in r) + p for r, p in zip(RESPONSES, penalties)])
    assert exp.metrics["reward_extra/overlong_reward/mean"] == pytest.approx(sum(penalties) / 6)
    assert exp.metrics["reward_extra/overlong/mean"] == pytest.approx(0.5)
    rows = sample_rows(exp, 6)
    assert [r["overlong"] for r in rows] == [False, False, False, True, True, True]
    assert rows[5]["overlong_reward"] == pytest.approx(-0.5) and rows[5]["reward"] == pytest.approx(0.5)
    metrics, samples = validate(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows())
    assert metrics["val-aux/src/overlong_reward/mean@1"] == pytest.approx(sum(penalties) / 6)
    assert metrics["val-aux/src/overlong/mean@1"] == pytest.approx(0.5)
    assert metrics["val-core/src/acc/mean@1"] == pytest.approx(4 / 6)  # acc: the score before the penalty
    assert metrics["val-aux/src/reward/mean@1"] == pytest.approx((4 + sum(penalties)) / 6)
    assert samples[5]["overlong"] is True


def test_without_log_no_keys_but_the_penalty_still_applies(tmp_path):
    cfg = _cfg(tmp_path, "as_float", log=False)
    assert cfg.reward.overlong_buffer.log is False and "reward.overlong_buffer.log" not in cfg.extras
    cfg.rollout.n = 1
    exp = generate_once(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows(), 0, {})
    assert not any(k.startswith("reward_extra/overlong") for k in exp.metrics)
    assert exp.scores[5].item() == pytest.approx(0.5)
    metrics, _ = validate(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows())
    assert "val-aux/src/overlong/mean@1" not in metrics
    assert metrics["val-aux/src/reward/mean@1"] == pytest.approx((4 - 0.875) / 6)


def test_filter_metric_can_group_on_overlong(tmp_path):
    """verl's DAPO trainer can filter groups on any reward_extra_info key: ``overlong`` included."""
    from rlcockpit.trainer.observe.filter_metric import filter_metric_values

    cfg = _cfg(tmp_path, "as_float")
    cfg.rollout.n = 1
    cfg.algorithm.filter_groups.metric = "overlong"
    exp = generate_once(cfg, EchoEngine(), ByteTokenizer(), RewardManager.from_config(cfg), _rows(), 0, {})
    assert filter_metric_values(cfg, exp).tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    cfg.algorithm.filter_groups.metric = "acc"  # a float result keeps verl's acc next to the log keys
    assert filter_metric_values(cfg, exp).tolist() == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]


def test_load_custom_fn_reads_both_functions(tmp_path):
    (tmp_path / "rewards.py").write_text(REWARDS)
    assert load_custom_fn(str(tmp_path / "rewards.py"), "as_dict")("s", "7", "7")["acc"] is True
