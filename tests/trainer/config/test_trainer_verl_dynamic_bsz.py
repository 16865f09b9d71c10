"""A mini-batch larger than the step's batch is an error in verl only without ``use_dynamic_bsz``: rlcockpit refuses
and accepts the same command lines, judged by verl 0.9.1's own ``ActorConfig.validate`` in .venv-verl.

Found by hand with a public verl GRPO script (LoRA on Qwen3-14B, ``data.train_batch_size=64``,
``actor_rollout_ref.actor.use_dynamic_bsz=True``, ``ppo_mini_batch_size`` left at verl's 256): verl trains it with
one mini-batch per step, and ``rlcockpit train`` stopped with "zero mini-batches per step".
"""

from __future__ import annotations

import json
import subprocess

import pytest
from verl_metric_keys import VERL_PY

from rlcockpit.preflight.checks import check_batch
from rlcockpit.trainer.config import ConfigError, load_config

VERL_VALIDATE = r"""
import json, sys
from verl.workers.config.actor import FSDPActorConfig
out = {}
for case, (dynamic, mini, micro, batch) in json.loads(sys.argv[1]).items():
    try:
        cfg = FSDPActorConfig(strategy="fsdp", rollout_n=2, use_dynamic_bsz=dynamic, ppo_mini_batch_size=mini,
                              ppo_micro_batch_size_per_gpu=micro, ppo_max_token_len_per_gpu=5000)
        cfg.validate(n_gpus=1, train_batch_size=batch)
        out[case] = "ok"
    except (ValueError, AssertionError) as exc:
        out[case] = str(exc) or type(exc).__name__
print(json.dumps(out))
"""
# case: (use_dynamic_bsz, ppo_mini_batch_size, ppo_micro_batch_size_per_gpu, data.train_batch_size)
CASES = {
    "dynamic, mini 256 > batch 64": (True, 256, None, 64),
    "static, mini 256 > batch 64": (False, 256, 4, 64),
    "dynamic, micro 8 > mini 1 x n 2": (True, 1, 8, 4),
    "static, mini 16 <= batch 64": (False, 16, 4, 64),
}


def _overrides(dynamic: bool, mini: int, micro: int | None, batch: int) -> list[str]:
    out = [f"actor_rollout_ref.actor.use_dynamic_bsz={dynamic}", f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}",
           f"data.train_batch_size={batch}", "actor_rollout_ref.rollout.n=2"]
    return out + ([f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={micro}"] if micro is not None else [])


@pytest.fixture(scope="module")
def verl_verdicts() -> dict[str, str]:
    proc = subprocess.run([str(VERL_PY), "-c", VERL_VALIDATE, json.dumps(CASES)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", CASES)
def test_rlcockpit_refuses_exactly_what_verl_refuses(case: str, verl_verdicts: dict[str, str]) -> None:
    overrides = _overrides(*CASES[case])
    try:
        cfg = load_config(overrides=overrides, log=None)
        ours = "ok"
    except ConfigError as exc:
        ours = str(exc)
    assert (ours == "ok") == (verl_verdicts[case] == "ok"), (case, ours, verl_verdicts[case])
    if ours == "ok":  # preflight agrees with the trainer
        assert check_batch(cfg)[0].status != "fail", check_batch(cfg)[0].message


def test_dynamic_batching_trains_one_mini_batch_of_the_whole_step() -> None:
    from rlcockpit.trainer.update.ppo import mini_batch_size

    cfg = load_config(overrides=_overrides(True, 256, None, 64), log=None)
    assert mini_batch_size(cfg, 64 * 2) == 128
    assert check_batch(cfg)[0].data["mini_batches_per_epoch"] == 1
