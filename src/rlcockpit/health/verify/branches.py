"""Running the branches of ``rlcockpit diagnose --verify`` (see :mod:`rlcockpit.health.verify.verdict`).

Each branch is ``python -m rlcockpit train --config <the parent's stored config, adjusted> <fix overrides>`` in a
subprocess, so a crash of one is a failed branch in the report, never a failed verifier. Branches run one after
the other (the CPU count of a laptop is the usual budget), with the CPU time of each measured from the child's
rusage; ``--budget`` stops launching when the next branch would exceed it, and the report names what was not run.
"""

from __future__ import annotations

import copy
import json
import os
import re
import resource
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rlcockpit.health.verify.verdict import (
    CONFIRMED,
    DID_NOT_REPRODUCE,
    Plan,
    branch_findings,
    headline,
    judge,
    make_plan,
    summarise,
    try_report,
)
from rlcockpit.paths import confined, safe_filename

STEP_LINE = re.compile(r"^\[rlcockpit\] step (\d+)/(\d+) \|")  # the trainer's progress line (not its warm-up's)
Progress = Callable[[str], None]


def branch_config(plan: Plan, store_dir: Path, workdir: Path, name: str, role: str, seed: int) -> dict[str, Any]:
    """The parent's stored config, made a branch: its own name and checkpoint folder, the parent's checkpoint
    (or its start), the branch's end step and seed, no guardrail action (the failure must be allowed to happen),
    no preflight (the parent passed it) and only the embedded store as logger (no third-party pushes)."""
    cfg = copy.deepcopy({k: v for k, v in plan.config.items() if k != "framework"})
    tr = dict(cfg.get("trainer") or {})
    tr.update(experiment_name=name, group=plan.run_id, tags=[f"verify:{role}"], branch_of=plan.run_id,
              stop_at_step=plan.end_step, save_freq=-1, default_local_dir=str(branch_paths(workdir, name)[1]),
              rlcockpit_dir=str(store_dir), seed=seed, preflight="off", logger=["rlcockpit"], num_threads=1,
              resume_mode="resume_path" if plan.checkpoint else "disable", resume_from_path=plan.checkpoint)
    cfg["trainer"] = tr
    model = (cfg.get("actor_rollout_ref") or {}).get("model") or {}
    if model.get("path") == "tiny" and (model.get("tiny") or {}).get("seed") is None:  # the parent's starting model
        model["tiny"] = {**(model.get("tiny") or {}), "seed": int(plan.config["trainer"].get("seed") or 42)}
    cfg["health"] = {**(cfg.get("health") or {}), "on_critical": "warn"}
    cfg.pop("alerts", None)  # a branch sends no alerts
    return cfg


def branch_paths(workdir: Path, name: str) -> tuple[Path, Path]:
    """(config file, checkpoint folder) of branch ``name`` inside ``workdir``: the name carries the parent's
    stored run name, so it is made one safe path component and confined there."""
    stem = safe_filename(name, "branch")
    return (confined(workdir, f"{stem}.json", "verify branch config"),
            confined(workdir, stem, "verify branch checkpoints"))


def launch(cmd: list[str], label: str, progress: Progress) -> tuple[int, str, float]:
    """Run ``cmd``; report its step lines through ``progress``; (exit code, last output line, CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    tail: deque[str] = deque(maxlen=5)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                errors="replace")
    except OSError as exc:
        return -1, f"could not start: {exc}", 0.0
    seen = -1
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.append(line.rstrip())
        m = STEP_LINE.search(line)
        if m and int(m.group(1)) != seen:
            seen = int(m.group(1))
            progress(f"  {label}: step {m.group(1)}/{m.group(2)}")
    rc = proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = next((x for x in reversed(tail) if x.strip()), "")
    return rc, last, cpu


def run_branch(store: Any, store_dir: Path, plan: Plan, role: str, seed: int, overrides: list[str],
               progress: Progress) -> dict[str, Any]:
    """One branch, start to end: launched, found in the store, its headline read. Never raises for the branch's
    own failure: ``status`` is finished | failed | not started, ``error`` says why."""
    workdir = confined(store_dir, f"verify/{plan.run_id}", "verify folder")
    workdir.mkdir(parents=True, exist_ok=True)
    name = f"{plan.run_name}-verify-{role}-s{seed}-{uuid.uuid4().hex[:6]}"
    cfg_path = branch_paths(workdir, name)[0]
    cfg_path.write_text(json.dumps(branch_config(plan, store_dir, workdir, name, role, seed), default=str))
    cmd = [sys.executable, "-m", "rlcockpit", "train", "--config", str(cfg_path), *overrides]
    progress(f"[verify] {role} branch, seed {seed}: steps {plan.start_step + 1}-{plan.end_step}"
             + (f" with {' '.join(overrides)}" if overrides else ""))
    rc, last, cpu = launch(cmd, f"{role} seed {seed}", progress)
    out: dict[str, Any] = {"role": role, "seed": seed, "overrides": overrides, "run_id": None, "cpu_s": round(cpu, 1),
                           "status": "finished" if rc == 0 else "failed", "error": None if rc == 0 else last,
                           "headline": None}
    try:
        out["run_id"] = store.get_run(name)["id"]
    except (KeyError, LookupError, ValueError):
        out["status"], out["error"] = "not started", last or f"exit code {rc}"
        return out
    out["headline"] = headline(store, out["run_id"])[1]
    return out


class Budget:
    """CPU seconds spent and whether the next branch fits: its cost is estimated as the mean of those run
    so far (the first branch always runs unless the budget is spent)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds, self.spent, self.costs = seconds, 0.0, []

    def fits(self) -> bool:
        if self.seconds is None:
            return True
        estimate = sum(self.costs) / len(self.costs) if self.costs else 0.0
        return self.spent + estimate <= self.seconds

    def add(self, cpu_s: float) -> None:
        self.spent += cpu_s
        self.costs.append(cpu_s)


def _findings(store: Any, plan: Plan, branches: list[dict[str, Any]]) -> list[list[Any]]:
    return [branch_findings(store, plan.run_id, b["run_id"], plan.start_step) for b in branches
            if b["run_id"] is not None and b["status"] != "not started"]


def verify_run(store: Any, store_dir: str | Path, run_id: str, diagnosis: Mapping[str, Any], *,
               steps: int | None = None, seeds: int = 2, tries: int = 3, budget: float | None = None,
               progress: Progress = lambda line: print(line, file=sys.stderr, flush=True)) -> dict[str, Any]:
    """Verify ``diagnosis``'s fix for ``run_id`` (see :mod:`rlcockpit.health.verify.verdict`); the report dict."""
    if seeds < 1 or tries < 1:
        raise ValueError(f"--seeds and --tries must be >= 1 (got {seeds}, {tries})")
    t0, plan = time.time(), make_plan(store, run_id, diagnosis, steps)
    if not plan.actions:
        raise ValueError(f"run {plan.run_id}: the root cause has no fix with overrides to verify")
    base = int((plan.config.get("trainer") or {}).get("seed") or 42)
    seed_list, spend, store_dir = [base + i for i in range(seeds)], Budget(budget), Path(store_dir)
    unchanged: dict[int, dict[str, Any]] = {}
    reports, not_run = [], []
    for action in plan.actions[:tries]:
        fixed = []
        for seed in seed_list:
            for role in ("unchanged", "fixed"):
                if role == "unchanged" and seed in unchanged:
                    continue
                if not spend.fits():
                    not_run.append(f"try {action['rank']} {role} branch, seed {seed} (budget)")
                    continue
                b = run_branch(store, store_dir, plan, role, seed, [] if role == "unchanged" else action["overrides"],
                               progress)
                spend.add(b["cpu_s"])
                if role == "unchanged":
                    unchanged[seed] = b
                else:
                    fixed.append(b)
        base_runs = [unchanged[s] for s in seed_list if s in unchanged]
        verdict, rows = judge(plan, _findings(store, plan, base_runs), _findings(store, plan, fixed))
        reports.append(try_report(action, base_runs + fixed, verdict, rows))
        progress(f"[verify] try {action['rank']} ({action['title']}): {verdict}")
        if verdict in (CONFIRMED, DID_NOT_REPRODUCE) or not spend.fits():
            break
    not_run += [f"try {a['rank']}: {a['title']}" for a in plan.actions[len(reports):tries]]
    metric = headline(store, next((b["run_id"] for b in unchanged.values() if b["run_id"]), plan.run_id))[0]
    return summarise(plan, reports, not_run, spend.spent, time.time() - t0, budget, seed_list, metric)
