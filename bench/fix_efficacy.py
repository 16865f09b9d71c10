"""Fix efficacy: does the fix ``rlcockpit diagnose`` proposes avoid the failure when it is rerun? (issue 24)

For each failure (the failure presets, plus failures made by changing one setting of the healthy arith-grpo
preset) and each seed: train the failing run, diagnose it, and ``diagnose --verify`` it (branches from the last
checkpoint before the onset, unchanged and with each ranked fix, up to ``--tries``). Per failure it reports the
share of (failure, seed) pairs where

* ``reproduced``: the unchanged branch reproduces the root-cause finding;
* ``first fix``: the first proposed fix avoids it (try 1 confirmed);
* ``within N``: some fix within ``--tries`` avoids it (a try confirmed);
* ``headline up``: try 1's fixed branch ends with a higher headline (validation accuracy, else reward) than the
  unchanged one;

and the CPU time (parent + branches, from the children's rusage). A run the detectors find healthy has nothing to
verify and is counted as ``no failure``.

    python bench/fix_efficacy.py --seeds 3                         # everything (hours on a 2-core CPU)
    python bench/fix_efficacy.py --seeds 1 --failures collapse lr-x10 --parent-steps 30 --steps 8
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlcockpit.health.diagnosis.diagnose import diagnose_run
from rlcockpit.health.verify.branches import verify_run
from rlcockpit.health.verify.verdict import CONFIRMED
from rlcockpit.store import open_store

HEALTHY = "arith-grpo"
# failure -> (preset, overrides): every failure preset, then one setting of the healthy preset changed
FAILURES: dict[str, tuple[str, list[str]]] = {
    "collapse": ("arith-collapse", []),
    "entropy-collapse": ("arith-entropy-collapse", []),
    "hacking": ("arith-hacking", []),
    # no KL blow-up preset ships: the healthy preset with the PPO clip off and 8 epochs per batch
    "kl-blowup": (HEALTHY, ["actor_rollout_ref.actor.clip_ratio_low=10", "actor_rollout_ref.actor.clip_ratio_high=10",
                            "actor_rollout_ref.actor.ppo_epochs=8"]),
    "lr-x10": (HEALTHY, ["actor_rollout_ref.actor.optim.lr=5e-4"]),
    "temperature-0.3": (HEALTHY, ["actor_rollout_ref.rollout.temperature=0.3"]),
    # the arith reward has no length bonus; the lenient reward with a per-character bonus is the one that does
    "length-bonus": (HEALTHY, ["reward.name=arith_lenient_length_bonus", "reward.val_name=arith"]),
}
# arith-grpo runs with no KL term already (use_kl_loss=false, use_kl_in_reward unset): "no KL" is the healthy run
NOT_MADE = {"no-kl": "arith-grpo already trains without a KL term, so removing it changes nothing"}


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def train_parent(work: Path, failure: str, seed: int, parent_steps: int) -> tuple[str | None, float, str]:
    """Train the failing run; (run name or None, CPU seconds, last output line)."""
    preset, overrides = FAILURES[failure]
    name = f"{failure}-s{seed}-{int(time.time())}"
    cmd = [sys.executable, "-m", "rlcockpit", "train", "--preset", preset, *overrides, f"trainer.seed={seed}",
           f"trainer.experiment_name={name}", f"trainer.total_training_steps={parent_steps}", "trainer.save_freq=5",
           "trainer.num_threads=1", "trainer.preflight=off", "health.on_critical=warn",
           f"trainer.rlcockpit_dir={work / 'store'}", f"trainer.default_local_dir={work / 'ckpt' / name}"]
    before = cpu_children()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    last = (out.stdout + out.stderr).strip().splitlines()[-1:] or [""]
    return (name if out.returncode == 0 else None), cpu_children() - before, last[0]


def one_pair(work: Path, failure: str, seed: int, args: argparse.Namespace) -> dict:
    """Train, diagnose and verify one (failure, seed) pair."""
    name, cpu, last = train_parent(work, failure, seed, args.parent_steps)
    row = {"failure": failure, "seed": seed, "parent_cpu_s": round(cpu, 1), "status": "ok"}
    if name is None:
        return {**row, "status": f"parent failed: {last}"}
    store = open_store(str(work / "store"))
    run_id = store.get_run(name)["id"]
    diagnosis = diagnose_run(store, run_id)
    if not diagnosis["root_cause"]:
        return {**row, "status": "no failure", "run_id": run_id}
    report = verify_run(store, work / "store", run_id, diagnosis, steps=args.steps, seeds=args.branch_seeds,
                        tries=args.tries, progress=(lambda line: print(line, file=sys.stderr)) if args.verbose
                        else (lambda _line: None))
    first = report["tries"][0] if report["tries"] else None
    root = next((r for r in (first or {}).get("findings", []) if r["detector"] == report["finding"]["detector"]), None)
    head = (first or {}).get("headline") or {}
    return {**row, "run_id": run_id, "root": report["finding"]["detector"], "onset": report["onset"],
            "reproduced": bool(root and root["reproduced"] > 0),
            "first_fix": bool(first and first["verdict"] == CONFIRMED),
            "within_tries": report["verdict"] == CONFIRMED, "worked": report["worked"],
            "headline_up": None if None in (head.get("fixed"), head.get("unchanged")) else head["fixed"] > head["unchanged"],
            "headline": head, "verify_cpu_s": report["cpu_s"], "verify_wall_s": report["wall_s"],
            "verdicts": [t["verdict"] for t in report["tries"]]}


def share(rows: list[dict], key: str) -> str:
    judged = [r for r in rows if r.get(key) is not None]
    return f"{sum(bool(r[key]) for r in judged)}/{len(judged)}" if judged else "-"


def table(rows: list[dict]) -> str:
    lines = ["| failure | pairs | no failure | reproduced | first fix | within N | headline up | CPU s |",
             "|---|---|---|---|---|---|---|---|"]
    for failure in dict.fromkeys(r["failure"] for r in rows):
        rs = [r for r in rows if r["failure"] == failure]
        ok = [r for r in rs if r["status"] == "ok"]
        cpu = sum(r["parent_cpu_s"] + r.get("verify_cpu_s", 0) for r in rs)
        lines.append(f"| {failure} | {len(rs)} | {sum(r['status'] == 'no failure' for r in rs)} | "
                     f"{share(ok, 'reproduced')} | {share(ok, 'first_fix')} | {share(ok, 'within_tries')} | "
                     f"{share(ok, 'headline_up')} | {cpu:.0f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=3, help="seeds per failure (default 3: 42, 43, 44)")
    p.add_argument("--first-seed", type=int, default=42, help="the first seed (default 42; 43 adds a 2nd seed)")
    p.add_argument("--failures", nargs="*", default=list(FAILURES), choices=list(FAILURES))
    p.add_argument("--parent-steps", type=int, default=40, help="steps of each failing run (default 40)")
    p.add_argument("--steps", type=int, default=None, help="verify: steps past the onset (default: from the finding)")
    p.add_argument("--branch-seeds", type=int, default=1, help="verify: seeds per branch (default 1)")
    p.add_argument("--tries", type=int, default=3, help="verify: ranked fixes to try (default 3)")
    p.add_argument("--dir", default=None, help="work folder (default: a new temporary one)")
    p.add_argument("--json", default=None, help="also write the rows as JSON to this file")
    p.add_argument("--verbose", action="store_true", help="print the verifier's progress lines")
    args = p.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="fix-efficacy-"))
    t0, rows = time.time(), []
    for failure in args.failures:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows.append(one_pair(work, failure, seed, args))
            print(json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    print(table(rows))
    for name, why in NOT_MADE.items():
        print(f"\nnot run: {name}: {why}")
    print(f"\n{len(rows)} pairs, {time.time() - t0:.0f} s wall, work folder {work}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
