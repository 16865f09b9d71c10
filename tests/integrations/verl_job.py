"""A stand-in verl training job, run with .venv-verl's python by the verl integration tests.

It logs through verl's real ``verl.utils.tracking.Tracking`` (so the file log is written by verl's own
FileLogger, path from ``VERL_FILE_LOGGER_PATH``) — or, with ``--backend rlcockpit``, through the
in-process backend installed by ``rlcockpit.integrations.verl.install()``. The metrics follow a healthy
climb, then a reward cliff with a KL spike at ``--cliff``. Rollout dumps (``--rollout-dir``) use the
layout of verl's ``RayPPOTrainer._write_generations``. With ``--hold FILE`` the job stays alive after
its last step until FILE exists, so a test can check what was detected "while the job is running".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path


def metrics(step: int, cliff: int, rng: random.Random) -> dict:
    if step < cliff:
        r, kl, ent = 0.3 + 0.3 * step / cliff + rng.gauss(0, 0.01), 0.01 + rng.gauss(0, 0.001), 1.2 - 0.005 * step
    else:
        r, kl, ent = 0.05 + rng.gauss(0, 0.01), 0.6 + rng.gauss(0, 0.05), 0.2
    return {"critic/score/mean": r, "critic/rewards/mean": r, "actor/kl_loss": kl, "actor/entropy": ent,
            "actor/pg_loss": rng.gauss(0, 0.05), "actor/grad_norm": 0.5 + rng.random() * 0.1,
            "response_length/mean": 200 + rng.gauss(0, 5), "timing_s/step": 0.05}


def dump_rollouts(rollout_dir: str, step: int, score: float) -> None:
    os.makedirs(rollout_dir, exist_ok=True)
    n = 4
    base = {"input": [f"What is {i}+{step}?" for i in range(n)], "output": [f"{i + step}" for i in range(n)],
            "gts": [str(i + step) for i in range(n)], "score": [score] * n, "step": [step] * n,
            "acc": [score > 0.3] * n}
    with open(os.path.join(rollout_dir, f"{step}.jsonl"), "w") as f:
        for i in range(n):
            f.write(json.dumps({k: v[i] for k, v in base.items()}, ensure_ascii=False) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--cliff", type=int, default=40)
    ap.add_argument("--start", type=int, default=1)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--rollout-dir")
    ap.add_argument("--hold")
    ap.add_argument("--backend", default="file")
    ap.add_argument("--project", default="verl-it")
    ap.add_argument("--name", default="job")
    args = ap.parse_args()

    if args.backend == "rlcockpit":
        from rlcockpit.integrations.verl import install

        install()
    from omegaconf import OmegaConf
    from verl.utils.tracking import Tracking, ValidationGenerationsLogger

    config = OmegaConf.create({
        "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}, "entropy_coeff": 0.0, "use_kl_loss": True,
                                        "kl_loss_coef": 0.001}},
        "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"kl_coef": 0.001}},
        "trainer": {"logger": ["console", args.backend], "project_name": args.project,
                    "experiment_name": args.name, "wandb_api_key": "should-not-be-stored"},
    })
    tracker = Tracking(project_name=args.project, experiment_name=args.name, default_backend=[args.backend],
                       config=OmegaConf.to_container(config, resolve=True))
    rng = random.Random(0)
    for _ in range(1, args.start):
        metrics(0, args.cliff, rng)  # keep the random stream aligned with the step number
    for step in range(args.start, args.steps + 1):
        data = metrics(step, args.cliff, rng)
        if args.rollout_dir:
            dump_rollouts(args.rollout_dir, step, data["critic/score/mean"])
        tracker.log(data=data, step=step)
        time.sleep(args.delay)
    ValidationGenerationsLogger(args.project, args.name).log(
        [args.backend], [("val question", "val answer", 1.0)], args.steps)
    print(f"verl_job: logged steps {args.start}..{args.steps}", flush=True)
    if args.hold:
        deadline = time.time() + 120
        while not Path(args.hold).exists() and time.time() < deadline:
            time.sleep(0.05)
    tracker.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
