"""Importance on a real sweep of the demo task: 12 GRPO trials over lr x kl_coef x rollout.n.

The known effects: the learning rate sets how far 8 steps move the policy from where it started (its KL to
the reference, ``actor/kl_loss`` with ``use_kl_loss``: 0 at lr 1e-6, ~0.1 at 1e-2), while
``algorithm.kl_ctrl.kl_coef`` does nothing at all here (it weighs a KL in the reward, which this run does not
use; verl's ``use_kl_loss`` path reads ``actor.kl_loss_coef``) — importance must put lr first and give kl_coef
next to nothing. (The entropy this test read before moved by a few hundredths either way in 8 steps: which
parameter "mattered" for it depended on the sampling RNG's path, and a fix to that path flipped it.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sweeps_support import cli, start_agent, write

from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.state import SweepState

pytestmark = pytest.mark.slow

PARTIAL_CREDIT = """\
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    got, want = solution_str.strip(), str(ground_truth)
    return sum(a == b for a, b in zip(got, want)) / len(want)
"""

BASE = [
    "actor.model.tiny.hidden_size=32", "actor.model.tiny.num_layers=1", "actor.model.tiny.num_heads=2",
    "actor.model.tiny.intermediate_size=64", "actor.model.tiny.sft_steps=60", "actor.model.tiny.sft_batch_size=32",
    "actor.model.tiny.sft_slip_steps=2", "data.builtin.train_size=400", "data.builtin.val_size=16",
    "data.train_batch_size=8", "data.max_prompt_length=32", "data.max_response_length=4",
    "actor.ppo_mini_batch_size=8", "trainer.total_training_steps=8", "trainer.test_freq=0",
    "trainer.logger=[rlcockpit]", "trainer.num_threads=1", "health.enable=false", "trainer.preflight=off",
    "actor.use_kl_loss=true",
]


def test_importance_of_a_real_demo_sweep(tmp_path: Path) -> None:
    store, cache = tmp_path / "store", tmp_path / "cache"
    write(tmp_path / "partial.py", PARTIAL_CREDIT)
    write(tmp_path / "sweep.yaml", """\
        program: rlcockpit
        method: grid
        metric: {name: actor/kl_loss, goal: minimize}
        command: [${env}, rlcockpit, train, --preset, arith-grpo, ${args_no_hyphens}]
        parameters:
          actor.optim.lr: {values: [1.0e-6, 3.0e-3, 1.0e-2]}
          algorithm.kl_ctrl.kl_coef: {values: [0.001, 0.1]}
          rollout.n: {values: [2, 4]}
        """)
    made = cli(["sweep", "sweep.yaml", "--project", "demo", *BASE, f"reward.custom_fn={tmp_path / 'partial.py'}:compute_score"],
               cwd=tmp_path, store=store)
    assert made.returncode == 0, made.stderr
    sweep_id = made.stdout.strip()
    first = start_agent(sweep_id, cwd=tmp_path, store=store, count=1, RLCOCKPIT_CACHE=str(cache))  # builds the model
    assert first.wait(timeout=600) == 0, first.stdout.read()
    agents = [start_agent(sweep_id, cwd=tmp_path, store=store, RLCOCKPIT_CACHE=str(cache)) for _ in range(2)]
    outs = [a.communicate(timeout=1200)[0] for a in agents]
    trials = SweepState(open_database(store)).trials(sweep_id)
    assert len(trials) == 12 and all(t["state"] == "finished" for t in trials), "\n".join(o[-2000:] for o in outs)
    res = cli(["importance", "--project", "demo", "--sweep", sweep_id, "--metric", "actor/kl_loss", "--goal", "min",
               "--json"], cwd=tmp_path, store=store)
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    rows = {r["key"]: r for r in result["parameters"]}
    assert result["n_used"] == 12 and result["excluded_missing_metric"] == 0
    lr = rows["actor.optim.lr"]
    assert result["parameters"][0]["key"] == "actor.optim.lr", result["parameters"]
    assert lr["correlation"] > 0.3 and lr["direction"] == "lower is better"  # higher lr -> further from the start
    assert rows["algorithm.kl_ctrl.kl_coef"]["permutation"] < 0.25 * lr["permutation"]
    table = cli(["importance", "--project", "demo", "--sweep", sweep_id, "--metric", "actor/kl_loss", "--goal", "min"],
                cwd=tmp_path, store=store)
    assert "actor.optim.lr" in table.stdout.splitlines()[2]
    print(table.stdout)  # shown with -s; BENCHMARKS.md quotes one
