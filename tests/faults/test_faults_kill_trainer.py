"""SIGKILL ``rlcockpit train`` (tiny model, CPU) at seeded random points and resume it from its checkpoint
(``trainer.resume_mode=auto``) each time: what reads back is what an uninterrupted run of the same config
logs (same steps once each, same values for every key that is not a timing), one run, finished, and the CLI
readers work on the killed run. ``RLCOCKPIT_FAULT_TRIALS`` raises the number of kills (docs/qa/faults.md)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from faults_support import child_env

import rlcockpit
from rlcockpit.cli import main
from rlcockpit.trainer.checkpoints.checkpoint import list_checkpoints

pytestmark = [pytest.mark.faults, pytest.mark.slow]  # ~8 s per trainer process

TRIALS = max(2, int(os.environ.get("RLCOCKPIT_FAULT_TRIALS", "3")) // 2)
STEPS = 8
TINY = ["actor_rollout_ref.model.tiny.hidden_size=32", "actor_rollout_ref.model.tiny.num_layers=1",
        "actor_rollout_ref.model.tiny.num_heads=2", "actor_rollout_ref.model.tiny.intermediate_size=64",
        "actor_rollout_ref.model.tiny.sft_steps=2", "actor_rollout_ref.model.tiny.sft_batch_size=8",
        "actor_rollout_ref.model.tiny.sft_slip_steps=0", "data.builtin.train_size=64", "data.builtin.val_size=8",
        "data.train_batch_size=4", "data.max_prompt_length=32", "data.max_response_length=4",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4", "actor_rollout_ref.rollout.n=4",
        "trainer.logger=[rlcockpit]", "trainer.num_threads=1", "health.enable=false", "trainer.save_freq=2",
        "trainer.test_freq=4", "trainer.resume_mode=auto"]
# measurements of the machine, not results of training (verl's actor/perf/* and critic/perf/* are host memory)
NOT_REPRODUCIBLE = ("timing_s/", "timing_per_token_ms/", "perf/", "actor/perf/", "critic/perf/", "system/")


def _train(root: Path, name: str, steps: int = STEPS) -> list[str]:
    return [sys.executable, "-m", "rlcockpit.cli", "train", "--preset", "arith-grpo", *TINY,
            f"trainer.total_training_steps={steps}", f"trainer.rlcockpit_dir={root / name / 'store'}",
            f"trainer.default_local_dir={root / name / 'ckpt'}"]


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny model built once for the module by a one-step run (its SFT warm-up draws from the RNG): every
    run of every test after it loads the same model, so a reference and a killed run start equal. One trainer
    process for the module instead of one per test."""
    root = tmp_path_factory.mktemp("kill-trainer-warm")
    cache = str(root / "cache")
    subprocess.run(_train(root, "warm", 1), env=child_env(RLCOCKPIT_CACHE=cache), capture_output=True, check=True,
                   timeout=300)
    return cache


def _only_run(store: Path):  # noqa: ANN202
    runs = rlcockpit.Api(store).runs()
    assert len(runs) == 1, [r.id for r in runs]
    return runs[0]


def _wait_for_checkpoint(root: Path, proc: subprocess.Popen, timeout: float = 600.0) -> None:
    """Until a complete checkpoint is under ``root``. A kill before the first one restarts the run from scratch as
    a new run (verl's resume_mode=auto: nothing to resume), which is not what this test is about; at load
    average ~15 a kill drawn at step 2 landed between step 2's rows and its checkpoint (issue 25, finding 13)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None and not list_checkpoints(root):
        time.sleep(0.05)


def _wait_for_step(store: Path, step: int, proc: subprocess.Popen, timeout: float = 600.0) -> None:
    """Until the store holds ``step`` (a kill point measured in training progress, not wall time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if (store / "rlcockpit.db").exists():
            runs = rlcockpit.Api(store).runs()
            if runs and (runs[0].last_step or -1) >= step:
                return
        time.sleep(0.05)


def check_against(ref, got) -> set[int]:  # noqa: ANN001
    """Every stored key of ``got`` holds steps of ``ref`` once each with ``ref``'s values; returns the training
    steps missing before the last one stored (a gap) for ``critic/score/mean``."""
    gap: set[int] = set()
    for key in got.keys():
        s2, v2, _ = got.series(key)
        assert len(np.unique(s2)) == len(s2), f"{key}: a step was stored twice"
        if key.startswith(NOT_REPRODUCIBLE):
            continue
        s1, v1, _ = ref.series(key)
        at = np.searchsorted(s1, s2)
        assert np.all(at < len(s1)) and np.array_equal(s1[np.minimum(at, len(s1) - 1)], s2), \
            f"{key}: steps {s2.tolist()} are not steps the uninterrupted run logged ({s1.tolist()})"
        assert np.allclose(v1[at], v2, equal_nan=True, rtol=1e-6), f"{key}: a value is not the logged one"
        if key == "critic/score/mean" and len(s2):
            gap = set(s1[s1 <= s2[-1]].tolist()) - set(s2.tolist())
    return gap


def test_sigkill_the_trainer_and_resume_from_its_checkpoint(tmp_path: Path, tiny_cache: str, capsys) -> None:
    env = child_env(RLCOCKPIT_CACHE=tiny_cache)  # built once (tiny_cache): the reference and killed runs start equal
    subprocess.run(_train(tmp_path, "ref"), env=env, capture_output=True, check=True, timeout=300)
    ref = _only_run(tmp_path / "ref" / "store")
    rng = random.Random(77)
    store = tmp_path / "kill" / "store"
    reached, gaps = [], set()
    for _ in range(TRIALS):
        proc = subprocess.Popen(_train(tmp_path, "kill"), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # anywhere inside a step after the first checkpoint and before the last: rollout, update, checkpoint, logging
        _wait_for_checkpoint(tmp_path / "kill" / "ckpt", proc)
        _wait_for_step(store, rng.randrange(STEPS - 2), proc)
        time.sleep(rng.uniform(0.0, 0.15))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        if not (store / "rlcockpit.db").exists():
            continue
        got = _only_run(store)
        gaps |= check_against(ref, got)
        reached.append(got.last_step or -1)
        assert main(["runs", "--dir", str(store)]) == 0
        assert main(["export", got.id, "--dir", str(store), "--output", str(tmp_path / "k.csv")]) == 0
        assert main(["diagnose", got.id, "--dir", str(store), "--json"]) == 0
        capsys.readouterr()
    done = subprocess.run(_train(tmp_path, "kill"), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = _only_run(store)
    gaps |= check_against(ref, got)
    assert got.status == "finished" and got.last_step == STEPS
    assert sorted(got.keys()) == sorted(ref.keys())
    assert any(r >= 1 for r in reached), f"no kill landed after the first step ({reached}): the test tested nothing"
    # a kill after a checkpoint but before its steps reached the store would leave them out for good
    # (the resume continues after the checkpoint): checkpoints flush the store first (loop.save_and_note)
    assert not gaps, f"training steps {sorted(gaps)} missing, {len(got.events('data_lost'))} data_lost events"


def test_resuming_from_the_last_checkpoint_stores_no_step_twice(tmp_path: Path, tiny_cache: str) -> None:
    """A run killed after its last checkpoint (or simply started again) resumes at the final step; the final
    validation ran again and its rows were stored a second time at that step, until the checkpoint carried
    the step of its validation (``last_val``) and the last step validated before saving, as verl does."""
    env = child_env(RLCOCKPIT_CACHE=tiny_cache)
    for _ in range(2):
        subprocess.run(_train(tmp_path, "again", 4), env=env, capture_output=True, check=True, timeout=300)
    got = _only_run(tmp_path / "again" / "store")
    twice = [k for k in got.keys() if len(np.unique(got.series(k)[0])) != len(got.series(k)[0])]
    assert twice == [], f"stored twice at one step: {twice}"


def test_steps_stored_after_the_last_checkpoint_are_rerun_not_stored_twice(tmp_path: Path, tiny_cache: str) -> None:
    """A kill while step 4's checkpoint is written (the store is flushed first, so it holds step 4) resumes
    from step 2's: steps 3-4 run again. Step 3 was rejected as lower than the last stored step and step 4 was
    stored a second time at the same step (seen in this file's SIGKILL test)."""
    env = child_env(RLCOCKPIT_CACHE=tiny_cache)
    subprocess.run(_train(tmp_path, "once", 4), env=env, capture_output=True, check=True, timeout=300)
    first = _only_run(tmp_path / "once" / "store")
    before = {k: first.series(k)[:2] for k in first.keys()}
    ckpts = sorted((tmp_path / "once" / "ckpt").rglob("global_step_4"))
    assert ckpts, list((tmp_path / "once" / "ckpt").rglob("global_step_*"))
    for c in ckpts:
        shutil.rmtree(c)  # as if killed while writing it
    again = subprocess.run(_train(tmp_path, "once", 4), env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "steps 3-4 were stored before the stop" in again.stdout + again.stderr
    assert "lower than the last logged step" not in again.stdout + again.stderr
    got = _only_run(tmp_path / "once" / "store")
    twice = [k for k in got.keys() if len(np.unique(got.series(k)[0])) != len(got.series(k)[0])]
    assert twice == [], f"stored twice at one step: {twice}"
    for key, (steps, vals) in before.items():
        s2, v2, _ = got.series(key)
        assert np.array_equal(steps, s2) and np.array_equal(vals, v2, equal_nan=True), key


def test_a_resume_that_reruns_a_validated_step_continues_as_the_uninterrupted_run(tmp_path: Path, tiny_cache: str) -> None:
    """Killed while step 4's checkpoint was written (step 4 and its validation stored): the resume runs steps
    3-4 again from step 2's checkpoint and skips the validation already stored. The steps after it must still
    be the uninterrupted run's: a validation that moved the training RNG made them differ (seen as
    ``actor/entropy`` differing from step 5 on in the SIGKILL test above, on a loaded machine)."""
    env = child_env(RLCOCKPIT_CACHE=tiny_cache)  # built once (tiny_cache): both runs start equal
    constant = ["actor_rollout_ref.actor.optim.lr_scheduler_type=constant"]  # 4 and 6 steps: the same lr
    subprocess.run(_train(tmp_path, "ref", 6) + constant, env=env, capture_output=True, check=True, timeout=300)
    subprocess.run(_train(tmp_path, "cut", 4) + constant, env=env, capture_output=True, check=True, timeout=300)
    for c in (tmp_path / "cut" / "ckpt").rglob("global_step_4"):
        shutil.rmtree(c)  # as if killed while writing it
    again = subprocess.run(_train(tmp_path, "cut", 6) + constant, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "steps 3-4 were stored before the stop" in again.stdout + again.stderr
    ref, got = _only_run(tmp_path / "ref" / "store"), _only_run(tmp_path / "cut" / "store")
    assert check_against(ref, got) == set()
    assert got.last_step == 6 and set(got.series("actor/entropy")[0].tolist()) >= {5, 6}
