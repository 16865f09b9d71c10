"""Helpers for the sweep tests (a uniquely named module): sweep files people actually use, tiny programs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable

# The seed article's sweep file (docs/seeds/004, section 6.3), as a user pastes it.
ARTICLE_SWEEP = """\
program: ppo_main.py
method: bayes
metric:
  name: reward/mean
  goal: maximize
parameters:
  lr:
    min: 1e-6
    max: 1e-4
  kl_coef:
    values: [0.01, 0.02, 0.05]
  rollout_batch_size:
    values: [512, 1024, 2048]
"""

# W&B's own example sweep files (github.com/wandb/sweeps, examples/), verbatim.
WANDB_GRID = """\
description: sweep example using grid search

# Training script to run
program: train.py

# Project this sweep is part of
project: sweeps-examples

# Method can be bayes, random, grid
method: grid

# Metric to optimize
metric:
  name: loss_metric
  goal: minimize

# Parameter space to search
parameters:
  epochs:
    value: 5
  variance:
    value: 5
  sleep:
    value: 0.5
  base:
    values: [10,15,20]
  increment:
    values: [0.1,0.2,0.3]
  direction:
    values: [-1,0.1,1]
"""

WANDB_HYPERBAND = """\
description: sweep examples using local controller and hyperband

# Training script to run
program: train-local.py

# Project this sweep is part of
project: sweeps-examples

# Method can be bayes, random, grid
method: grid

# default is cloud based controller
controller:
  type: local

# Metric to optimize
metric:
  name: loss_metric
  goal: minimize

# Should we early terminate runs
early_terminate:
  type: hyperband
  max_iter: 10
  s: 2
  eta: 3

# Parameter space to search
parameters:
  epochs:
    value: 20
  variance:
    value: 5
  sleep:
    value: 2
  base:
    values: [10,15,20]
  increment:
    values: [0.1,0.2,0.3]
  direction:
    values: [-1,0.1,1]
"""

WANDB_NESTED = """\
description: sweep using nested params

# Training script to run
program: train-nested-cli.py

# Project this sweep is part of
project: nested-examples

# Method can be bayes, random, grid
method: grid

# Metric to optimize
metric:
  name: loss
  goal: minimize

# Parameter space to search
parameters:
  batch_size:
    values: [32, 64]
  optimizer:
    parameters:
      # lr parameter is nested behind "optimizer"
      lr:
        values: [0.001, 0.0001]
      nadam:
        parameters:
        # beta parameter is nested behind "opimizer.nadam"
          beta:
            values: [0.9, 0.95]
"""

# W&B's train-dummy.py, ported to rlcockpit (`import rlcockpit as wandb` is the only change besides
# the sleep and epochs defaults, shortened for the test machine).
TRAIN_DUMMY = """\
#!/usr/bin/env python
import argparse
import random
import time

import rlcockpit as wandb

parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--project", type=str, default="sweeps-examples", help="project")
parser.add_argument("--epochs", type=int, default=27, help="epochs")
parser.add_argument("--variance", type=float, default=1, help="param1")
parser.add_argument("--base", type=float, default=5, help="param2")
parser.add_argument("--increment", type=float, default=5, help="param2")
parser.add_argument("--direction", type=float, default=5, help="param2")
parser.add_argument("--sleep", type=float, default=5, help="param2")
args = parser.parse_args()

run = wandb.init(project=args.project, system_interval=None, health=False, capture_meta=False)
metric = args.base + random.random() * args.variance
for e, x in enumerate(range(args.epochs)):
    metric += args.increment * args.direction
    if metric < 0:
        metric = 0
    run.log({"loss_metric": metric})
    print("INFO:  %3d = %f" % (e, metric))
    time.sleep(args.sleep)
run.finish()
"""

# W&B's nested-params example program, ported the same way.
TRAIN_NESTED = """\
import argparse
import time

import rlcockpit as wandb

parser = argparse.ArgumentParser(formatter_class=argparse.ArgumentDefaultsHelpFormatter)
parser.add_argument("--project", type=str, default=None, help="project")
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch_size", type=int, default=16)
parser.add_argument("--optimizer", type=str, default=None)

if __name__ == "__main__":
    args = parser.parse_args()
    run = wandb.init(project=args.project, config=args, system_interval=None, health=False, capture_meta=False)
    for epoch in range(run.config["epochs"]):
        _batch_size = run.config["batch_size"]
        _lr = run.config["optimizer"]["lr"]
        _fake_loss = 1 - (epoch / run.config["epochs"]) * _lr * _batch_size
        run.log({"loss": _fake_loss})
    run.finish()
"""


def env(store: Path, **extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO / "src") + os.pathsep + out.get("PYTHONPATH", "")
    out["RLCOCKPIT_DIR"] = str(store)
    out["HF_HUB_OFFLINE"] = "1"
    out.update(extra)
    return out


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def cli(args: list[str], *, cwd: Path, store: Path, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
    """``rlcockpit ARGS`` in a real child process (niced: the test machine is shared)."""
    return subprocess.run(["nice", "-n", "10", PYTHON, "-m", "rlcockpit", *args], cwd=cwd, env=env(store, **extra),
                          capture_output=True, text=True, timeout=timeout)


def start_agent(sweep_id: str, *, cwd: Path, store: Path, count: int | None = None, **extra: str) -> subprocess.Popen:
    args = ["nice", "-n", "10", PYTHON, "-m", "rlcockpit", "agent", sweep_id]
    if count is not None:
        args += ["--count", str(count)]
    return subprocess.Popen(args, cwd=cwd, env=env(store, **extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)

# The trainer at test size (a 1-layer, 32-wide Qwen2; see tests/trainer/conftest.py): the base of every trial.
TINY_TRAIN = [
    "actor.model.tiny.hidden_size=32", "actor.model.tiny.num_layers=1", "actor.model.tiny.num_heads=2",
    "actor.model.tiny.intermediate_size=64", "actor.model.tiny.sft_steps=10", "actor.model.tiny.sft_batch_size=16",
    "actor.model.tiny.sft_slip_steps=2", "data.builtin.train_size=400", "data.builtin.val_size=16",
    "data.train_batch_size=4", "data.max_prompt_length=32", "data.max_response_length=4",
    "actor.ppo_mini_batch_size=4", "rollout.n=2", "trainer.total_training_steps=2", "trainer.test_freq=2",
    "trainer.logger=[rlcockpit]", "trainer.num_threads=1", "health.enable=false", "trainer.preflight=off",
]
