"""A W&B user's sweep analysis (docs/qa/outsider-inputs.md): trials that rename themselves
(``wandb.run.name = ...``, W&B's sweep programs), ``wandb.run.sweep_id``, then W&B's public API on the sweep:
``api.sweep("entity/project/id")``, ``sweep.runs``, ``sweep.best_run()``, ``run.sweep``. Before: the names were
lost, ``sweep_id`` and ``Api.sweep`` were AttributeErrors."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlcockpit as wandb


def test_public_api_sweep_runs_best_run_and_trial_names(ws: Path) -> None:
    config = {"method": "grid", "metric": {"name": "val_acc", "goal": "maximize"},
              "parameters": {"batch_size": {"values": [16, 32, 64]}}}
    sweep_id = wandb.sweep(sweep=config, project="sweep-api", entity="me")
    seen = []

    def main():
        run = wandb.init(system_interval=None)
        wandb.run.name = f"bs-{wandb.config.batch_size}"
        seen.append(wandb.run.sweep_id)
        run.log({"val_acc": 1 - abs(wandb.config.batch_size - 32) / 64})
        run.finish()

    wandb.agent(sweep_id, function=main, count=3)
    assert seen == [sweep_id] * 3
    api = wandb.Api()
    sweep = api.sweep(f"me/sweep-api/{sweep_id}")
    assert sweep.id == sweep_id and sweep.state in ("RUNNING", "FINISHED") and sweep.config["method"] == "grid"
    assert sorted(r.name for r in sweep.runs) == ["bs-16", "bs-32", "bs-64"]
    ranked = sorted(sweep.runs, key=lambda r: r.summary.get("val_acc", 0), reverse=True)
    assert sweep.best_run().name == "bs-32" == ranked[0].name
    assert sweep.best_run(order="+summary_metrics.val_acc").summary["val_acc"] == 0.5
    assert ranked[0].sweep.id == sweep_id
    assert wandb.Api().run(ranked[0].id).sweep is not None
    with pytest.raises(KeyError, match="no sweep 'nope'"):
        api.sweep("me/sweep-api/nope")
    other = wandb.init(project="sweep-api", group="not-a-sweep", system_interval=None)
    other.finish()
    assert api.run(other.id).sweep is None


def test_sweep_values_win_over_config_defaults_yaml(ws: Path) -> None:
    # W&B: ./config-defaults.yaml gives every run its defaults; a sweep's values override them
    (ws / "config-defaults.yaml").write_text("lr:\n  value: 0.5\nepochs:\n  value: 7\n")
    sweep_id = wandb.sweep({"method": "grid", "parameters": {"lr": {"values": [0.1, 0.01]}}}, project="defaults")
    seen = []

    def main():
        run = wandb.init(system_interval=None)
        seen.append((wandb.config.lr, wandb.config.epochs))
        run.finish()

    wandb.agent(sweep_id, function=main, count=2)
    assert seen == [(0.1, 7), (0.01, 7)]


# W&B's cross-validation sweep example (wandb/examples examples/wandb-sweeps/sweeps-cross-validation, @369ac57):
# the program forks its fold workers *before* its own wandb.init(), so every worker inherits the trial's
# environment; the workers clear W&B's variables and log runs of their own in group=sweep_id. Written here in
# the same shape (not copied), with `import rlcockpit as wandb`.
CV_PROGRAM = """\
import collections, multiprocessing, os, random
import rlcockpit as wandb

Init = collections.namedtuple("Init", ("num", "sweep_id", "sweep_run_name", "config"))

def worker(results, inbox):
    for k in [k for k in os.environ if k.startswith("WANDB_")]:
        del os.environ[k]
    job = inbox.get()
    run = wandb.init(group=job.sweep_id, job_type=job.sweep_run_name, name=f"{job.sweep_run_name}-{job.num}",
                     config=job.config, system_interval=None, health=False)
    acc = 0.1 * (job.num + 1)
    run.log({"val_accuracy": acc})
    wandb.join()
    results.put(acc)

if __name__ == "__main__":
    results, boxes, procs = multiprocessing.Queue(), [], []
    for num in range(3):
        box = multiprocessing.Queue()
        proc = multiprocessing.Process(target=worker, args=(results, box))
        proc.start()
        boxes.append(box)
        procs.append(proc)
    sweep_run = wandb.init(system_interval=None, health=False)
    sweep_run.notes = f"{sweep_run.get_project_url()}/groups/{sweep_run.sweep_id}"
    sweep_run.save()
    accs = []
    for num in range(3):
        boxes[num].put(Init(num, sweep_run.sweep_id, sweep_run.name, dict(sweep_run.config)))
        accs.append(results.get(timeout=60))
        procs[num].join()
    sweep_run.log({"val_accuracy": sum(accs) / len(accs)})
    wandb.join()
"""


def test_wandb_cross_validation_example_forks_workers_before_init(ws: Path) -> None:
    # Before: each forked worker's init claimed the trial too and died on `UNIQUE constraint failed: runs.id`;
    # the parent then waited for results forever and the trial was killed (and get_project_url was missing)
    from rlcockpit.sweeps import Agent

    (ws / "train-cv.py").write_text(CV_PROGRAM)
    sweep_id = wandb.sweep({"program": "train-cv.py", "method": "random",
                            "metric": {"name": "val_accuracy", "goal": "maximize"},
                            "parameters": {"batch_size": {"distribution": "int_uniform", "min": 32, "max": 128}}},
                           project="cv")
    Agent(sweep_id, count=1).run()
    api = wandb.Api()
    sweep = api.sweep(sweep_id)
    (trial,) = sweep.runs
    assert trial.status == "finished" and trial.summary["val_accuracy"] == pytest.approx(0.2)
    assert trial.notes.endswith(f"/groups/{sweep_id}")
    folds = sorted((r for r in api.runs("cv") if r.id != trial.id), key=lambda r: r.name)
    assert [r.name for r in folds] == [f"{trial.name}-{i}" for i in range(3)]
    assert all(r.group == sweep_id and r.job_type == trial.name and r.status == "finished" for r in folds)
    assert [r.summary["val_accuracy"] for r in folds] == pytest.approx([0.1, 0.2, 0.3])
    assert all(r.config["batch_size"] == trial.config["batch_size"] for r in folds)
