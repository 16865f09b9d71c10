"""Our trainer as a sweep program: the article's sweep file unchanged, and a sweep by verl key, each with
two agents in parallel (real processes, real training steps of the tiny model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweeps_support import ARTICLE_SWEEP, TINY_TRAIN, cli, start_agent, write

from rlcockpit.store import open_store
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps.state import SweepState

pytestmark = pytest.mark.slow


def stored(config: dict, key: str):
    """The value the trainer stored for ``key`` (an alias or short key resolved to its verl path)."""
    from rlcockpit.trainer.config import canonical

    node = config
    for part in canonical(key).split("."):
        node = node[part]
    return node


def run_two_agents(sweep_id: str, ws: Path, store: Path, cache: Path) -> list[str]:
    agents = [start_agent(sweep_id, cwd=ws, store=store, RLCOCKPIT_CACHE=str(cache)) for _ in range(2)]
    outs = [a.communicate(timeout=900)[0] for a in agents]
    assert all(a.returncode == 0 for a in agents), "\n".join(o[-3000:] for o in outs)
    return outs


def test_sweep_by_verl_key_with_the_trainer_command(tmp_path: Path) -> None:
    store, cache = tmp_path / "store", tmp_path / "cache"
    write(tmp_path / "sweep.yaml", """\
        program: rlcockpit
        method: bayes
        metric:
          name: critic/score/mean
          goal: maximize
        command: [${env}, rlcockpit, train, --preset, arith-grpo, ${args_no_hyphens}]
        parameters:
          actor.optim.lr:
            distribution: log_uniform_values
            min: 1e-5
            max: 1e-3
          algorithm.kl_ctrl.kl_coef:
            values: [0.01, 0.05]
          rollout.n:
            values: [2, 4]
        run_cap: 4
        """)
    made = cli(["sweep", "sweep.yaml", "--project", "arith-sweep", "--seed", "3", *TINY_TRAIN], cwd=tmp_path,
               store=store)
    assert made.returncode == 0, made.stderr
    sweep_id = made.stdout.strip()
    outs = run_two_agents(sweep_id, tmp_path, store, cache)
    trials = SweepState(open_database(store)).trials(sweep_id)
    assert len(trials) == 4 and all(t["state"] == "finished" for t in trials), outs
    assert len({t["agent_id"] for t in trials}) == 2
    db = open_store(store)
    for t in trials:
        run = db.get_run(t["run_id"])
        assert run["group"] == sweep_id and run["project"] == "arith-sweep"
        for key, value in t["params"].items():  # the trainer applied each parameter at its verl path
            assert stored(run["config"], key) == pytest.approx(value), key
        assert t["best"] is not None and t["n_values"] == 2  # two training steps logged the metric


def test_article_sweep_file_runs_unchanged_against_the_trainer(tmp_path: Path) -> None:
    """seeds/004 §6.3: `program: ppo_main.py`, bayes over lr, kl_coef, rollout_batch_size, `wandb agent ID`."""
    store, cache = tmp_path / "store", tmp_path / "cache"
    (tmp_path / "sweep.yaml").write_text(ARTICLE_SWEEP)
    # one training step a trial: the file's rollout_batch_size (up to 2048 prompts x n) makes a step ~4 s of CPU,
    # and every assertion below holds after one (a logged metric is a best; the config is stored at the start)
    base = [o for o in TINY_TRAIN if not o.startswith(("data.builtin.train_size", "trainer.total_training_steps"))] + [
        "data.builtin.train_size=2048", "trainer.total_training_steps=1"]
    made = cli(["sweep", "sweep.yaml", "--project", "verl-article", "--preset", "arith-grpo", *base], cwd=tmp_path,
               store=store)
    assert made.returncode == 0, made.stderr
    assert "verl's PPO entry point" in made.stderr
    sweep_id = made.stdout.strip()
    cap = SweepState(open_database(store))
    # the file has no run_cap: each agent runs two trials, as `wandb agent --count 2`
    agents = [start_agent(sweep_id, cwd=tmp_path, store=store, count=2, RLCOCKPIT_CACHE=str(cache)) for _ in range(2)]
    outs = [a.communicate(timeout=1200)[0] for a in agents]
    assert all(a.returncode == 0 for a in agents), "\n".join(o[-3000:] for o in outs)
    trials = cap.trials(sweep_id)
    assert len(trials) == 4 and all(t["state"] == "finished" for t in trials), "\n".join(o[-3000:] for o in outs)
    assert any("metric reward/mean is logged as critic/score/mean" in o for o in outs)
    db = open_store(store)
    for t in trials:
        p = t["params"]
        assert 1e-6 <= p["lr"] <= 1e-4 and p["kl_coef"] in (0.01, 0.02, 0.05)
        assert p["rollout_batch_size"] in (512, 1024, 2048)
        run = db.get_run(t["run_id"])
        assert run["group"] == sweep_id and run["config"]["lr"] == p["lr"]
        assert stored(run["config"], "rollout_batch_size") == p["rollout_batch_size"]  # the alias reached the trainer
        assert stored(run["config"], "lr") == pytest.approx(p["lr"]) and stored(run["config"], "kl_coef") == p["kl_coef"]
        assert t["best"] is not None
