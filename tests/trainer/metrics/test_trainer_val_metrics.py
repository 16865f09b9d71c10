"""Validation statistics with val_kwargs.n > 1 are verl's: std@n, best@k, worst@k, maj@k (found by qa-verl:
rlcockpit logged mean@n only). verl 0.9.1's own ``process_validation_metrics`` (run in .venv-verl) is the oracle;
the val-core / val-aux split follows ``RayPPOTrainer._val_metrics_update``."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from rlcockpit.trainer.observe.val_metrics import subset_sizes, validation_metrics

REPO = Path(__file__).parents[3]
VERL_PY = REPO / ".venv-verl" / "bin" / "python"

ORACLE = """
import json, sys
from verl.trainer.ppo.metric_utils import process_validation_metrics
case = json.load(open(sys.argv[1]))
out = process_validation_metrics(case["sources"], case["uids"], case["infos"])
print(json.dumps({s: {v: {k: float(x) for k, x in d.items()} for v, d in vd.items()} for s, vd in out.items()}))
"""


def _case(seed: int) -> dict:
    """Three data sources, prompts with 1, 3, 4 or 8 responses, a binary acc, a graded reward, a numeric extra
    with gaps, and predictions for majority voting on one source only."""
    rnd = random.Random(seed)
    sources, uids, acc, reward, fmt, pred = [], [], [], [], [], []
    for p in range(12):
        src = ("gsm8k", "math", "aime")[p % 3]
        n = (1, 3, 4, 8)[p % 4]
        for _ in range(n):
            ok = rnd.random() < 0.4
            sources.append(src)
            uids.append(f"u{p}")
            acc.append(float(ok))
            reward.append(round((1.0 if ok else -0.5) + rnd.random() * 0.1, 3))
            fmt.append(None if rnd.random() < 0.2 else float(rnd.random() < 0.8))
            pred.append(rnd.choice("ABC") if src == "math" else None)
    return {"sources": sources, "uids": uids, "infos": {"acc": acc, "reward": reward, "fmt": fmt, "pred": pred}}


def _verl_names(nested: dict) -> dict[str, float]:
    """verl's section rule (``_val_metrics_update``) over its nested result."""
    out = {}
    for src, var2 in nested.items():
        core = "acc" if "acc" in var2 else "reward"
        for var, stats in var2.items():
            n_max = max(int(name.split("@")[-1].split("/")[0]) for name in stats)
            for stat, value in stats.items():
                is_core = var == core and stat.startswith(("mean", "maj", "best")) and f"@{n_max}" in stat
                out[f"{'val-core' if is_core else 'val-aux'}/{src}/{var}/{stat}"] = value
    return out


def test_subset_sizes_are_powers_of_two_then_n():
    assert subset_sizes(1) == [] and subset_sizes(2) == [2] and subset_sizes(5) == [2, 4, 5]
    assert subset_sizes(8) == [2, 4, 8]


def test_one_response_per_prompt_keeps_the_mean_only():
    m = validation_metrics(["s", "s"], [0, 1], {"acc": [1.0, 0.0], "reward": [1.0, 0.0]})
    assert m == {"val-core/s/acc/mean@1": 0.5, "val-aux/s/reward/mean@1": 0.5}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_statistics_equal_verls(tmp_path, seed):
    if not VERL_PY.exists():
        pytest.skip(".venv-verl is absent: run scripts/setup_verl_env.sh (make test does) to check the oracle")
    case = _case(seed)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    env = {**os.environ, "PYTHONPATH": "", "HF_HUB_OFFLINE": "1"}  # the oracle must not see rlcockpit
    proc = subprocess.run([str(VERL_PY), "-c", ORACLE, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = _verl_names(json.loads(proc.stdout.strip().splitlines()[-1]))
    ours = validation_metrics(case["sources"], case["uids"], case["infos"])
    assert sorted(ours) == sorted(expected)
    assert any("/maj@8/" in k for k in ours) and any(k.startswith("val-core/math/acc/best@") for k in ours)
    differ = {k: (ours[k], expected[k]) for k in ours if abs(ours[k] - expected[k]) > 1e-12}
    assert not differ, differ


def test_aborted_responses_are_counted_as_verl_does():
    """``response/aborted_ratio`` and ``response_length_non_aborted/*`` (verl's compute_data_metrics; found by
    qa-verl: the trainer did not log them). A response with no token is aborted."""
    import torch

    from rlcockpit.trainer.observe.metrics import data_metrics

    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 0]])
    zeros = torch.zeros(4, 4)
    batch = {"response_mask": mask, "prompt_mask": torch.ones(4, 3), "token_level_scores": zeros,
             "token_level_rewards": zeros, "advantages": zeros, "returns": zeros}
    m = data_metrics(batch, max_response_length=4, max_prompt_length=8)
    assert m["response/aborted_ratio"] == 0.25
    assert m["response_length_non_aborted/mean"] == pytest.approx(7 / 3) and m["response_length_non_aborted/min"] == 1
    assert m["response_length_non_aborted/clip_ratio"] == pytest.approx(1 / 3) and m["response_length/min"] == 0.0
    none = data_metrics({**batch, "response_mask": torch.zeros(4, 4, dtype=torch.long)}, 4, 8)
    assert none["response/aborted_ratio"] == 1.0 and none["response_length_non_aborted/mean"] != \
        none["response_length_non_aborted/mean"]  # NaN: every response aborted
