"""The per-step data and timing metrics of a GAE/PPO run are verl's, names and values: verl 0.9.1's own
``compute_data_metrics`` and ``compute_timing_metrics`` (run in .venv-verl) are the oracle. Found missing or
different before: ``timing_per_token_ms/*`` was not logged, score/reward statistics counted aborted (empty)
responses, and ``critic/vf_explained_var`` raised on a batch with one valid token (verl: NaN)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import torch

from rlcockpit.trainer.observe.metrics import data_metrics, timing_per_token, value_metrics

REPO = Path(__file__).parents[3]
VERL_PY = REPO / ".venv-verl" / "bin" / "python"

ORACLE = """
import json, sys, torch
from verl import DataProto
from verl.trainer.ppo.metric_utils import compute_data_metrics, compute_timing_metrics
case = json.load(open(sys.argv[1]))
batch = DataProto.from_dict({k: torch.tensor(v) for k, v in case["batch"].items()})
out = compute_data_metrics(batch, use_critic=True)
out.update(compute_timing_metrics(batch, case["timing"]))
print(json.dumps({k: float(v) for k, v in out.items()}))
"""

TIMING = {"gen": 0.5, "ref": 0.1, "values": 0.2, "adv": 0.01, "update_critic": 0.3, "update_actor": 0.4,
          "reward": 0.05, "old_log_prob": 0.1}


def _batch(seed: int, bs: int = 6, P: int = 5, T: int = 7) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    prompt_len = torch.randint(1, P + 1, (bs,), generator=g)
    resp_len = torch.randint(0, T + 1, (bs,), generator=g)
    resp_len[0], resp_len[1] = 0, T  # one aborted (empty) response, one at the length limit
    cols = torch.arange(T)
    response_mask = (cols[None] < resp_len[:, None]).long()
    prompt_mask = (torch.arange(P)[None] >= (P - prompt_len)[:, None]).long()  # left-padded
    scores = torch.zeros(bs, T)
    scores[torch.arange(bs), (resp_len - 1).clamp(min=0)] = torch.rand(bs, generator=g) * 2 - 1
    scores[0] = 0.0
    scores[0, 0] = 5.0  # an aborted response's score must not count (verl leaves it out)
    values = torch.randn(bs, T, generator=g) * response_mask
    returns = torch.randn(bs, T, generator=g) * response_mask
    return {"prompts": torch.randint(3, 50, (bs, P), generator=g), "responses": torch.randint(3, 50, (bs, T), generator=g),
            "attention_mask": torch.cat([prompt_mask, response_mask], 1), "response_mask": response_mask,
            "prompt_mask": prompt_mask, "token_level_scores": scores, "token_level_rewards": scores - 0.1 * response_mask,
            "advantages": torch.randn(bs, T, generator=g) * response_mask, "returns": returns, "values": values}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_data_and_timing_metrics_match_verl(seed, tmp_path):
    batch = _batch(seed)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"batch": {k: v.tolist() for k, v in batch.items() if k != "prompt_mask"},
                                "timing": TIMING}))
    proc = subprocess.run([str(VERL_PY), "-c", ORACLE, str(case)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = data_metrics(batch, max_response_length=batch["responses"].shape[1],
                        max_prompt_length=batch["prompts"].shape[1], timing=TIMING)
    ours.update({f"timing_s/{k}": v for k, v in TIMING.items()})  # the loop logs these
    shared = {k for k in expected if not k.startswith("num_turns/")}  # multi-turn only
    missing = sorted(shared - set(ours))
    assert not missing, f"verl logs these and we do not: {missing}"
    differ = {k: (ours[k], expected[k]) for k in shared
              if not (math.isclose(ours[k], expected[k], rel_tol=1e-5, abs_tol=1e-6)
                      or (math.isnan(ours[k]) and math.isnan(expected[k])))}
    assert not differ, differ


def test_explained_variance_edge_cases_do_not_raise():
    one = torch.tensor([[1, 0, 0]])
    m = value_metrics(torch.tensor([[0.5, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0]]), one)
    assert m["critic/values/mean"] == 0.5 and math.isnan(m["critic/vf_explained_var"])
    none = value_metrics(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3, dtype=torch.long))
    assert all(math.isnan(v) for v in none.values())
    # a perfect value function explains (almost) all variance
    r = torch.tensor([[1.0, 2.0, 3.0]])
    assert value_metrics(r, r, torch.ones(1, 3))["critic/vf_explained_var"] == pytest.approx(1.0)


def test_timing_per_token_units():
    resp = torch.tensor([[1, 1, 0], [1, 0, 0]])
    prompt = torch.ones(2, 2)
    m = timing_per_token({"gen": 0.3, "update_actor": 0.7, "reward": 1.0}, resp, prompt)
    assert m == {"timing_per_token_ms/gen": pytest.approx(100.0), "timing_per_token_ms/update_actor": pytest.approx(100.0)}


VARIANCE_ORACLE = """
import json, sys, torch
from verl import DataProto
from verl.trainer.ppo.metric_utils import compute_variance_proxy_metrics
case = json.load(open(sys.argv[1]))
batch = DataProto.from_dict({k: torch.tensor(v) for k, v in case["batch"].items()})
print(json.dumps({k: float(v) for k, v in compute_variance_proxy_metrics(batch, case["grad_norm"]).items()}))
"""


def _variance_batch(seed: int, with_is: bool) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    bs, T = 6, 7
    mask = (torch.arange(T)[None] < torch.randint(1, T + 1, (bs,), generator=g)[:, None]).float()
    batch = {"response_mask": mask, "advantages": torch.randn(bs, T, generator=g) * mask,
             "old_log_probs": -torch.rand(bs, T, generator=g) * 3, "sum_pi_squared": torch.rand(bs, T, generator=g)}
    if with_is:
        batch["rollout_is_weights"] = torch.rand(bs, T, generator=g) * 2
    return batch


@pytest.mark.slow
@pytest.mark.parametrize(("with_is", "grad_norm"), [(False, 0.7), (True, 0.3), (False, None)])
def test_variance_proxy_metrics_match_verl(with_is, grad_norm, tmp_path):
    """verl logs variance_proxy/* whenever the batch holds sum_pi_squared (calculate_sum_pi_squared or the
    optimal-token-baseline estimators); rlcockpit did not log them at all before."""
    from rlcockpit.trainer.observe.metrics import variance_proxy_metrics

    batch = _variance_batch(3, with_is)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"batch": {k: v.tolist() for k, v in batch.items()}, "grad_norm": grad_norm}))
    proc = subprocess.run([str(VERL_PY), "-c", VARIANCE_ORACLE, str(case)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = variance_proxy_metrics(batch, grad_norm)
    assert set(ours) == set(expected)
    differ = {k: (ours[k], expected[k]) for k in expected if not math.isclose(ours[k], expected[k], rel_tol=1e-5,
                                                                              abs_tol=1e-6)}
    assert not differ, differ
    assert variance_proxy_metrics({k: v for k, v in batch.items() if k != "sum_pi_squared"}, grad_norm) == {}
