"""Data-parallel training on CPU (gloo): the same config on 1 and on 2 processes trains the same way, and
a checkpoint written by 2 ranks resumes on 1.

Why the curves can be compared tightly: rows draw their samples from per-row seeds (rollout/seeds.py),
so both runs generate the very same responses; advantages are computed on the whole gathered batch;
each rank's loss is aggregated with the whole mini-batch's token counts and the gradients are summed,
so the 2-rank gradient is the 1-rank one up to float summation order (fp32: ~1e-7 relative per
operation).  Over 3 steps of AdamW that stays below ~1e-5 on the losses and the gradient norm; the
tolerance (2e-4 absolute + 1e-3 relative) leaves room for that while any real mistake — a gradient
averaged instead of summed (x1/2, visible in ``actor/grad_norm``), a rank training on other samples,
local instead of global token counts — moves these figures by percents.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rlcockpit

REWARD = '''
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """A varied reward a random model can earn: it depends on the response's characters."""
    return (sum(map(ord, solution_str)) % 5) / 4.0
'''

COMPARED = ("actor/pg_loss", "actor/grad_norm", "actor/ppo_kl", "critic/score/mean", "response_length/mean",
            "actor/entropy", "actor/entropy_loss", "actor/loss")  # the old pass's entropy gathered; parts summed


def _overrides(hf_assets: dict, tmp: Path, name: str, *extra: str) -> list[str]:
    reward = tmp / "reward_fn.py"
    reward.write_text(REWARD)
    return [f"data.train_files={hf_assets['train']}", f"data.val_files={hf_assets['val']}",
            f"actor_rollout_ref.model.path={hf_assets['models']['qwen2']}", "data.train_batch_size=4",
            "data.max_response_length=6", "actor_rollout_ref.actor.ppo_mini_batch_size=2",
            "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.optim.lr=1e-3", "algorithm.adv_estimator=grpo",
            "actor_rollout_ref.actor.grad_clip=1000", f"custom_reward_function.path={reward}",
            "trainer.total_training_steps=3", "trainer.test_freq=0", "trainer.val_before_train=false",
            "trainer.save_freq=2", "trainer.logger=[rlcockpit]", "trainer.num_threads=1", "trainer.preflight=off",
            "health.enable=false", "trainer.device=cpu", f"trainer.experiment_name={name}",
            "actor_rollout_ref.actor.calculate_entropy=true", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
            f"trainer.rlcockpit_dir={tmp / 'store'}", f"trainer.default_local_dir={tmp / name}", *extra]


def _train(overrides: list[str], timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(rlcockpit.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "rlcockpit", "train", *overrides], env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


def _history(store: Path, name: str):
    (run,) = [r for r in rlcockpit.Api(str(store)).runs() if r.name == name]
    return run, run.history()


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 2e-4 + 1e-3 * abs(a)


@pytest.mark.slow
def test_two_gloo_ranks_match_one_process_and_their_checkpoint_resumes_on_one(hf_assets, tmp_path):
    _train(_overrides(hf_assets, tmp_path, "dp1"))
    out = _train(_overrides(hf_assets, tmp_path, "dp2", "trainer.n_gpus_per_node=2"))
    assert "launching 2 CPU processes (gloo)" in out.stdout
    run1, h1 = _history(tmp_path / "store", "dp1")
    run2, h2 = _history(tmp_path / "store", "dp2")  # one run: only rank 0 tracks
    assert {1, 2, 3} <= set(h1.index) and set(h1.index) == set(h2.index)
    for key in COMPARED:
        for step in (1, 2, 3):
            a, b = float(h1.loc[step, key]), float(h2.loc[step, key])
            assert _close(a, b), f"{key} at step {step}: 1 process {a}, 2 processes {b}"
    assert float(h1.loc[1, "actor/grad_norm"]) > 0  # a real learning signal, not a trivially equal zero
    assert "system/rank1/proc_rss_gb" in run2.keys() and "system/rank0/step_s" in run2.keys()
    for step in (1, 2, 3):  # verl's per-rank statistics: two ranks share the step's tokens
        tokens = float(h2.loc[step, "perf/total_num_tokens"])
        assert tokens == float(h1.loc[step, "perf/total_num_tokens"]) == float(h1.loc[step, "global_seqlen/mean"])
        assert float(h2.loc[step, "global_seqlen/mean"]) == tokens / 2
        assert float(h2.loc[step, "global_seqlen/balanced_min"]) + float(h2.loc[step, "global_seqlen/balanced_max"]) \
            == tokens
        assert _close(float(h2.loc[step, "perf/throughput"]),
                      tokens / (float(h2.loc[step, "perf/time_per_step"]) * 2))  # tokens/s per rank
    assert not any(k.startswith("system/rank") for k in run1.keys())

    # the 2-rank checkpoint of step 2 resumes in one process and continues exactly like the 1-process run
    ckpt2 = tmp_path / "dp2" / "global_step_2"
    assert (ckpt2 / "actor" / "config.json").is_file()
    _train(_overrides(hf_assets, tmp_path, "dp2", "trainer.resume_mode=resume_path",
                      f"trainer.resume_from_path={ckpt2}"))
    (resumed,) = [r for r in rlcockpit.Api(str(tmp_path / "store")).runs() if r.name == "dp2"]
    h3 = resumed.history()
    for key in COMPARED:
        a, b = float(h1.loc[3, key]), float(h3.loc[3, key])
        assert _close(a, b), f"{key} at step 3 after resuming the 2-rank checkpoint: {b}, 1 process: {a}"
