"""QA with W&B's own sweep programs (docs/qa/wandb-trl-inputs.md): the Sweeps walkthrough's Python flow and a
Hydra-style sweep file (``!!float``, ``${args_no_hyphens}``), run the way W&B's docs say."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
from sweeps_support import write

import rlcockpit as wandb
from rlcockpit.store.sql import open_database
from rlcockpit.sweeps import Agent
from rlcockpit.sweeps.config import load_yaml
from rlcockpit.sweeps.state import SweepState


def test_sweeps_walkthrough_python_flow(ws: Path) -> None:
    # docs.wandb.ai/guides/sweeps/walkthrough: wandb.sweep(sweep=..., project=...), wandb.config.<name>, wandb.agent
    sweep_configuration = {
        "method": "random",
        "name": "sweep",
        "metric": {"goal": "maximize", "name": "val_acc"},
        "parameters": {
            "batch_size": {"values": [16, 32, 64]},
            "epochs": {"values": [5, 10, 15]},
            "lr": {"max": 0.1, "min": 0.0001},
        },
    }
    sweep_id = wandb.sweep(sweep=sweep_configuration, project="my-first-sweep", entity="me")
    seen = []

    def main() -> None:
        wandb.init(system_interval=None)
        lr, bs, epochs = wandb.config.lr, wandb.config.batch_size, wandb.config.epochs
        seen.append((lr, bs, epochs))
        for epoch in np.arange(1, epochs):
            wandb.log({"epoch": epoch, "val_acc": 0.1 + epoch / 20 + random.random() / 10, "lr_seen": lr})

    wandb.agent(f"me/my-first-sweep/{sweep_id}", function=main, count=3, project="my-first-sweep")
    runs = wandb.Api().runs("me/my-first-sweep")
    assert len(runs) == 3 and {r.state for r in runs} == {"finished"}
    for r in runs:
        assert r.group == sweep_id and 0.0001 <= r.config["lr"] <= 0.1 and r.config["batch_size"] in (16, 32, 64)
        assert r.summary["lr_seen"] == r.config["lr"]
    assert len(seen) == 3
    with pytest.raises(TypeError, match="needs the sweep config"):
        wandb.sweep(project="p")


HYDRA_SWEEP = """\
program: main.py
metric:
  name: val_loss
  goal: minimize
method: bayes
parameters:
  optimizer.config.learning_rate:
    min: !!float 1e-5
    max: 0.1
  optimizer:
    values: [sgd, adam]
command:
- ${env}
- ${interpreter}
- ${program}
- ${args_no_hyphens}
"""

HYDRA_MAIN = """\
import sys
import rlcockpit as wandb
kv = dict(a.split("=", 1) for a in sys.argv[1:])
run = wandb.init(project="hydra", system_interval=None)
lr = float(kv["optimizer.config.learning_rate"])
run.log({"val_loss": abs(lr - 0.01) + (0.1 if kv["optimizer"] == "sgd" else 0.0)})
run.finish()
"""


def test_hydra_style_sweep_file_with_float_tag_and_args_no_hyphens(ws: Path) -> None:
    # wandb/examples examples/minimal-hydra-example/wandb_sweep.yaml (its shape: !!float, a command list)
    write(ws / "main.py", HYDRA_MAIN)
    sweep_id = wandb.sweep(load_yaml(HYDRA_SWEEP), project="hydra", seed=3)
    out = io.StringIO()
    assert Agent(sweep_id, out=out, poll_s=0.2, count=2).run() == 2
    trials = SweepState(open_database()).trials(sweep_id)
    assert [t["state"] for t in trials] == ["finished", "finished"], out.getvalue()
    for t in trials:
        lr = t["params"]["optimizer.config.learning_rate"]
        assert isinstance(lr, float) and 1e-5 <= lr <= 0.1
        assert t["best"] == pytest.approx(abs(lr - 0.01) + (0.1 if t["params"]["optimizer"] == "sgd" else 0.0))
    assert f"optimizer.config.learning_rate={trials[0]['params']['optimizer.config.learning_rate']}" in out.getvalue()
